"""Your turn: an editor pre-filled with a plausible wrong first attempt, a
Check button, a Stop button, and the verdict (evidence and hint) as visible
text. One check of an exercise runs at a time (`exercises.check` holds
`sandbox.one_check`); Stop
cancels every learner session the check has open (`sandbox.stop_checks`), and
the verdict then says it was stopped.

All the checking happens in `pgq_teach.exercises`; this is a thin view.

Headless:

    turn = YourTurn("03/claim")
    turn.check_button.click()
    verdict = turn.wait()      # the Verdict; turn.result is the same
"""

from __future__ import annotations

from html import escape

import ipywidgets as W

from .. import exercises
from ..exercises import sandbox
from .common import ProgressRelay, Runner, error_html, styled


class YourTurn(W.VBox):
    def __init__(self, key: str, *, sql: str | None = None, save: bool = True):
        """`sql`: the editor's text; by default the learner's last checked SQL
        for this exercise (nothing typed is lost), else the seeded first attempt."""
        self.exercise = exercises.exercise(key)
        self.save = save
        if sql is None:
            sql = (exercises.last_sql(key) if save else None) or self.exercise.attempt_text()
        self.title = W.HTML(f"<b>Your turn: {escape(self.exercise.title)}.</b> {escape(self.exercise.task)}")
        self.editor = styled(
            W.Textarea(value=sql, layout=W.Layout(width="100%", height="16em")), "pgq-your-turn-sql"
        )
        self.check_button = W.Button(description="Check", button_style="primary", icon="check")
        self.stop_button = styled(
            W.Button(description="Stop", icon="stop", disabled=True, tooltip="cancel the running check"),
            "pgq-your-turn-stop",
        )
        self.reset_button = W.Button(
            description="Start over", icon="undo", tooltip="put the seeded first attempt back in the editor"
        )
        self.progress = W.IntProgress(value=0, min=0, max=100, description="progress")
        self.status = W.HTML(value="")
        self.verdict = styled(W.HTML(value=""), "pgq-verdict-box")
        self.runner = Runner(self._done, self._failed)
        self.check_button.on_click(lambda _: self.start())
        self.stop_button.on_click(lambda _: self.stop())
        self.reset_button.on_click(lambda _: self.start_over())
        super().__init__(
            [
                self.title,
                self.editor,
                W.HBox([self.check_button, self.stop_button, self.reset_button, self.progress, self.status]),
                self.verdict,
            ]
        )
        self.add_class("pgq-your-turn")

    @property
    def result(self) -> exercises.Verdict | None:
        return self.runner.result

    @property
    def holds_first_attempt(self) -> bool:
        """True while the editor holds the seeded first attempt, unchanged: a lesson's
        check cell asserts how that attempt fails, and stays quiet about the learner's own."""
        return self.editor.value == self.exercise.attempt_text()

    def start(self) -> bool:
        if self.runner.busy:
            return False
        sql = self.editor.value  # read on the caller's thread: typing during a check changes nothing
        self._checking(True)
        self.status.value = "checking on the live server…"
        self.progress.value = 0
        return self.runner.start(lambda stop: self._check(sql, stop))

    def stop(self) -> None:
        """Cancel the running check: its learner sessions' statements end now."""
        if self.runner.busy:
            self.status.value = "stopping…"
            self.runner.stop()
            sandbox.stop_checks(self.exercise.key)

    def _checking(self, busy: bool) -> None:
        self.check_button.disabled = busy
        self.stop_button.disabled = not busy

    def start_over(self) -> None:
        self.editor.value = self.exercise.attempt_text()

    def _check(self, sql: str, stop) -> exercises.Verdict:
        with ProgressRelay(self._progress) as relay:  # exercises.check holds the one check of this exercise
            return exercises.check(self.exercise.key, sql, save=self.save, progress=relay.update, stop=stop)

    def _progress(self, done: int, total: int) -> None:
        self.progress.max = max(total, 1)
        self.progress.value = min(done, total)

    def _done(self, verdict) -> None:
        self.verdict.value = verdict.html()
        self.status.value = "stopped" if verdict.stopped or sandbox.STOPPED in verdict.headline else "checked"
        self._checking(False)

    def _failed(self, exc: BaseException) -> None:
        self.status.value = error_html(exc)
        self._checking(False)

    def wait(self, timeout: float | None = None):
        return self.runner.wait(timeout)
