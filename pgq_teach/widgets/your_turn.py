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
from .common import styled
from .lab import Lab, ProgressRelay, button, progress_bar, show_progress, wrapping_row


class YourTurn(Lab):
    """Your turn: the editor, Check, Stop, Start over, a progress bar that
    fills when a check ends, and the verdict; done once a check has ended."""

    def __init__(self, key: str, *, sql: str | None = None, save: bool = True):
        """`sql`: the editor's text; by default the learner's last checked SQL
        for this exercise (nothing typed is lost), else the seeded first attempt."""
        self.exercise = exercises.exercise(key)
        self.save = save
        if sql is None:
            sql = (exercises.last_sql(key) if save else None) or self.exercise.attempt_text()
        self.title = W.HTML(f"<b>Your turn: {escape(self.exercise.title)}.</b> {escape(self.exercise.task)}")
        self.editor = styled(
            # auto and stretched, not 100%: 100% plus the widget's margins ran 4 px past the output area
            W.Textarea(value=sql, layout=W.Layout(width="auto", align_self="stretch", height="16em")),
            "pgq-your-turn-sql",
        )
        self.check_button = button("Check", "pgq-check", button_style="primary", icon="check")
        self.stop_button = button(
            "Stop", "pgq-your-turn-stop", icon="stop", disabled=True, tooltip="cancel the running check"
        )
        self.reset_button = button(
            "Start over", icon="undo", tooltip="put the seeded first attempt back in the editor"
        )
        self.progress = progress_bar()
        self.verdict = styled(W.HTML(value=""), "pgq-verdict-box")
        self.check_button.on_click(lambda _: self.start())
        self.stop_button.on_click(lambda _: self.stop())
        self.reset_button.on_click(lambda _: self.start_over())
        status = styled(W.HTML(), "pgq-status")
        super().__init__(
            [
                self.title,
                self.editor,
                # wraps, never shrinks: at 800 px the buttons were cut to fit one row
                wrapping_row(self.check_button, self.stop_button, self.reset_button, self.progress, status),
                self.verdict,
            ],
            css_class="pgq-your-turn",
            status=status,
            next_step="Edit the SQL, then press Check.",
        )

    @property
    def buttons(self) -> list[W.Button]:
        return [self.check_button]

    @property
    def result(self) -> exercises.Verdict | None:
        return self.runner.result

    @property
    def holds_first_attempt(self) -> bool:
        """True while the editor holds the seeded first attempt, unchanged: a lesson's
        check cell asserts how that attempt fails, and stays quiet about the learner's own."""
        return self.editor.value == self.exercise.attempt_text()

    def start(self) -> bool:
        sql = self.editor.value  # read on the caller's thread: typing during a check changes nothing
        self.progress.value = 0
        return self.start_work(lambda stop: self._check(sql, stop), "checking on the live server…")

    def stop(self) -> None:
        """Cancel the running check: its learner sessions' statements end now."""
        if self.runner.busy:
            self.say("stopping…")
            self.runner.stop()
            sandbox.stop_checks(self.exercise.key)

    def start_over(self) -> None:
        self.editor.value = self.exercise.attempt_text()

    def _check(self, sql: str, stop) -> exercises.Verdict:
        with ProgressRelay(lambda done, total: show_progress(self.progress, done, total)) as relay:
            # exercises.check holds the one check of this exercise
            return exercises.check(self.exercise.key, sql, save=self.save, progress=relay.update, stop=stop)

    def show(self, verdict) -> None:
        self.verdict.value = verdict.html()
        if verdict.stopped or sandbox.STOPPED in verdict.headline:
            self.finish("stopped")
        else:
            self.progress.value = self.progress.max  # a check that ended has done all its work
            self.finish("checked")

    def wait(self, timeout: float | None = None):
        return self.runner.wait(timeout)
