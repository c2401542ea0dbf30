"""The crash lab (lesson 04): a hold-style and a lease-style worker side by
side, each with an "end its session" button, a third worker, the reaper, and
a live board of the jobs and of who holds a lock on the table.

Thin: every action is a `CrashScene` method (pgq_teach.experiments.crash);
the board is redrawn from the server by the scene's `LabMonitor`, which keeps
reading on one thread while a lease counts down. Headless:
`lab.run_button.click(); lab.wait()` runs the guide's sequence and leaves its
`CrashResult` in `lab.result`.
"""

from __future__ import annotations

import time
from functools import partial
from html import escape

import ipywidgets as W

from .. import databases, measurements, tables
from ..databases import Database
from ..errors import PgqError
from ..experiments.crash import (
    DEFAULT_LEASE_S,
    HANDS_ON_LEASE_S,
    HANDS_ON_LIMITS,
    LAB_PREFIX,
    BoardRow,
    CleanupResult,
    CrashResult,
    CrashScene,
    LockHolder,
    cleanup_held_back,
    crash_both,
)
from ..experiments.sessions import ActivityRow
from ..tables import Column, Table
from .common import error_html, guess_field, replay_button, result_html, styled
from .lab import ExperimentPanel, Lab, button

LIVE_AFTER_CLICK_S = 3.0  # keep redrawing this long after a click, beyond any lease still running


def lease_text(row: BoardRow) -> str:
    if row.lease_left_s is None:
        return "–"
    if row.lease_left_s >= 0:
        return f"{row.lease_left_s:.1f} s left"
    return f"passed {-row.lease_left_s:.1f} s ago"


BOARD_COLUMNS = [
    Column("job", tables.COUNT),
    Column("status"),
    Column("attempts", tables.COUNT),
    Column("lease"),
    Column("row lock"),
    Column("last error"),
]


def board_html(
    rows: list[BoardRow],
    holders: list[LockHolder],
    hold_job: int | None,
    sessions: list[ActivityRow] | None = None,
) -> str:
    """The jobs, the sessions pg_locks shows holding a lock on the jobs table,
    and the lab's sessions pg_stat_activity still shows (an ended one is gone)."""
    holding = [h for h in holders if h.mode == "RowShareLock"]
    board = Table(
        BOARD_COLUMNS,
        [
            [
                r.id,
                r.status,
                r.attempts,
                lease_text(r),
                "hold worker (FOR UPDATE)" if holding and r.id == hold_job else None,
                r.last_error,
            ]
            for r in rows
        ],
        css="pgq-board",
        row_attrs=[{"data-job": str(r.id), "data-status": r.status} for r in rows],
    )
    locks = (
        "".join(
            f"<li>{escape(h.worker)} (pid {h.pid}, {escape(h.state or '')}): {escape(h.mode)}</li>"
            for h in holders
        )
        or "<li>none</li>"
    )
    alive = (
        "".join(
            f"<li>{escape(s.application_name.removeprefix(f'{LAB_PREFIX} '))} (pid {s.pid}): "
            f"{escape(s.state or '')}</li>"
            for s in sessions or []
        )
        or "<li>none</li>"
    )
    return (
        board.html() + f"<div><b>pg_locks</b>: sessions holding a lock on <code>jobs</code> "
        f"(a row lock lives in the row itself; FOR UPDATE also takes RowShareLock on the table)"
        f"<ul class='pgq-lock-holders'>{locks}</ul></div>"
        f"<div><b>pg_stat_activity</b>: the lab's sessions the server still has"
        f"<ul class='pgq-lab-sessions'>{alive}</ul></div>"
    )


class WorkerPanel(W.VBox):
    """One worker: what it does, Start, End its session, and a status line."""

    def __init__(self, title: str, what: str, css: str):
        self.heading = title
        tip = "claim one job and start working"
        self.start_button = button("Start", "pgq-start", icon="play", tooltip=tip)
        self.end_button = button(
            "End its session",
            "pgq-end",
            icon="times",
            disabled=True,
            tooltip="pg_terminate_backend, from a third session",
            button_style="danger",
        )
        self.status = styled(W.HTML(value="not started"), "pgq-status")
        self.what = W.HTML()
        self.describe(what)
        super().__init__(
            [self.what, W.HBox([self.start_button, self.end_button]), self.status],
            layout=W.Layout(width="48%"),
        )
        self.add_class(css)

    def describe(self, what: str) -> None:
        self.what.value = f"<b>{escape(self.heading)}</b><br><small>{escape(what)}</small>"


# The hands-on steps a learner can take, in any order: a set of these is the lab's state.
HANDS_ON = ("hold started", "lease started", "hold ended", "lease ended", "claimed", "reaped")
OTHER = {"hold": "lease", "lease": "hold"}


def next_step(done: set[str]) -> str | None:
    """What to press next by hand, from what has been done in whatever order, or None
    once every step is done (both sessions ended, the hold's job taken, the leased one reaped)."""
    started = [w for w in ("hold", "lease") if f"{w} started" in done]
    ended = [w for w in started if f"{w} ended" in done]
    if not started:
        return "Start the hold-style worker first."
    if len(started) == 1:
        return f"Now Start the {OTHER[started[0]]}-style worker."
    if not ended:
        return "Both workers are working. Press End its session on the hold-style worker."
    if "hold ended" in done and "claimed" not in done:
        return "Press Third worker claims: is the hold worker's job free?"
    if "lease ended" in done and "reaped" not in done:
        return (
            "The lease-style worker's job stays running: press Run the reaper now, and again once the "
            "board says its lease passed."
        )
    missing = [w for w in ("lease", "hold") if w not in ended]
    if missing:
        return f"Now End the {missing[0]}-style worker's session."
    return None


def lease_box(lease_s: float) -> W.BoundedFloatText:
    """The hands-on lease, in whole seconds: a number box with a real <label> (a slider's
    handle has no accessible name), changed on Enter or leaving the box."""
    low, high = HANDS_ON_LIMITS
    return styled(
        W.BoundedFloatText(
            value=lease_s,
            min=min(low, lease_s),
            max=max(high, lease_s),
            step=1,
            description="lease, s (by hand)",
            continuous_update=False,
            style={"description_width": "initial"},
            layout=W.Layout(width="20em"),
        ),
        "pgq-lease-box",
    )


class CrashLab(Lab):
    """Two workers, a third worker and the reaper, a live board, and the
    guide's sequence. By hand, the lease is the slider's (`lease_s` to start);
    the guide's sequence runs by itself with `replay_lease_s`. Call `close()` when done."""

    def __init__(self, db, lease_s: float = HANDS_ON_LEASE_S, *, replay_lease_s: float = DEFAULT_LEASE_S):
        self.db, self.replay_lease_s = db, replay_lease_s
        self.scene: CrashScene | None = None
        self.refresh_error: BaseException | None = None
        self.steps_done: set[str] = set()
        self._live_until = 0.0

        self.lease = lease_box(lease_s)
        self.hold_panel = WorkerPanel(
            "hold-style worker",
            "BEGIN; claim FOR UPDATE SKIP LOCKED; work inside the transaction",
            "pgq-hold-worker",
        )
        self.lease_panel = WorkerPanel("lease-style worker", "", "pgq-lease-worker")
        self.claim_button = button("Third worker claims", "pgq-third-claim", icon="hand-paper-o")
        self.reap_button = button("Run the reaper", "pgq-reap", icon="recycle")
        self.reset_button = button("Reset", "pgq-reset", icon="refresh", tooltip="two ready jobs again")
        self.board = styled(W.HTML(value=""), "pgq-crash-board")
        self.guess = guess_field(
            "Your guess: seconds until the leased job is ready again",
            unit="s",
            plausible=(0, 60),
            minimum=0,
            maximum=60,
        )
        self.run_button = replay_button("Run the guide's sequence")
        self.output = styled(W.HTML(), "pgq-result")
        status = styled(W.HTML(), "pgq-third-status")

        self.hold_panel.start_button.on_click(lambda _: self._act(self._start_hold))
        self.lease_panel.start_button.on_click(lambda _: self._act(self._start_lease))
        self.hold_panel.end_button.on_click(lambda _: self._act(self._end, self.hold_panel, "hold"))
        self.lease_panel.end_button.on_click(lambda _: self._act(self._end, self.lease_panel, "lease"))
        self.claim_button.on_click(lambda _: self._act(self._third_claim))
        self.reap_button.on_click(lambda _: self._act(self._reap))
        self.reset_button.on_click(lambda _: self._act(self.reset))
        self.lease.observe(lambda _: self._act(self.reset), names="value")
        self.run_button.on_click(lambda _: self.start_replay())
        super().__init__(
            [
                self.lease,
                W.HBox([self.hold_panel, self.lease_panel], layout=W.Layout(justify_content="space-between")),
                W.HBox([self.claim_button, self.reap_button, self.reset_button]),
                status,
                self.board,
                W.HTML(
                    "<b>The guide's sequence</b>: both workers start, each session is ended in turn, a third "
                    "worker claims and the reaper runs until the leased job comes back. It runs by itself, "
                    f"so it uses a short lease: {replay_lease_s:g} s."
                ),
                self.guess,
                self.run_button,
                self.output,
            ],
            css_class="pgq-crash-lab",
            status=status,
        )
        self.reset()

    @property
    def third_status(self) -> W.HTML:
        """The lab's status line (class pgq-third-status): the third session's
        last action and what to do next."""
        return self.status

    @property
    def lease_s(self) -> float:
        """The hands-on lease, in seconds, as the slider says."""
        return float(self.lease.value)

    @property
    def buttons(self) -> list[W.Button]:
        return [self.claim_button, self.reap_button, self.reset_button, self.run_button]

    def enable(self, on: bool) -> None:
        super().enable(on)
        self.lease.disabled = not on or self.closed
        if not on:
            for panel in (self.hold_panel, self.lease_panel):
                panel.start_button.disabled = panel.end_button.disabled = True

    # --- the hands-on part --------------------------------------------------------

    def reset(self) -> None:
        """End both workers and start again from two ready jobs."""
        if self.scene is not None:
            self.scene.close()
        self.scene = CrashScene(self.db, self.lease_s)
        monitor = self.scene.monitor  # it redraws the board on each look, on its own thread while busy
        monitor.on_rows, monitor.on_error, monitor.busy = (
            self._draw_board,
            self._show_refresh_error,
            self._live,
        )
        for panel in (self.hold_panel, self.lease_panel):
            panel.start_button.disabled, panel.end_button.disabled = False, True
            panel.status.value = "not started"
        self.lease_panel.describe(
            f"claim with a {self.lease_s:g} s lease; commit; work with no transaction open"
        )
        self.steps_done = set()
        self.say(f"Two ready jobs: 1 and 2, and a {self.lease_s:g} s lease. {next_step(self.steps_done)}")
        self.refresh()

    def live_scene(self) -> CrashScene:
        """The scene the buttons act on; gone once the lab is closed."""
        if self.scene is None:
            raise PgqError("the lab is closed: make a new CrashLab")
        return self.scene

    def _act(self, action, *args) -> None:
        if self.closed or self.runner.busy:
            return
        try:
            action(*args)
        except Exception as exc:  # shown where the learner looks; the scene stays usable
            self.say(error_html(exc))
        self._live_until = time.monotonic() + self.lease_s + LIVE_AFTER_CLICK_S
        self.refresh()
        if self.scene is not None:
            self.scene.monitor.watch()

    def _step(self, step: str, text: str) -> None:
        """Mark a hands-on step done; say what happened and what to do next."""
        self.steps_done.add(step)
        hint = next_step(self.steps_done)
        if hint is None:
            self.finish(
                f"done: {escape(text)}. The leased job is ready again, its attempt counted. "
                "Reset to try again, or run the guide's sequence below."
            )
        else:
            self.say(f"{escape(text)}. Next: {hint}")

    def _start_hold(self) -> None:
        job = self.live_scene().start_hold_worker()
        self._started(self.hold_panel, f"working on job {job}, its transaction open (row lock held)")
        self._step("hold started", f"the hold-style worker claimed job {job}")

    def _start_lease(self) -> None:
        job = self.live_scene().start_lease_worker()
        self._started(
            self.lease_panel,
            f"working on job {job.id} (attempts {job.attempts}), "
            f"no transaction open; lease {self.lease_s:g} s",
        )
        self._step("lease started", f"the lease-style worker claimed job {job.id}")

    @staticmethod
    def _started(panel: WorkerPanel, text: str) -> None:
        panel.start_button.disabled, panel.end_button.disabled = True, False
        panel.status.value = text

    def _end(self, panel: WorkerPanel, worker: str) -> None:
        ended = self.live_scene().end_session(worker)
        panel.end_button.disabled = True
        panel.status.value = "session ended (pg_terminate_backend)" if ended else "it was not running"
        self._step(f"{worker} ended", f"the {worker}-style worker's session ended")

    def _third_claim(self) -> None:
        if not {"hold started", "lease started"} <= self.steps_done:
            self.say(
                "Start both workers first: while a job is still ready, the third worker simply takes it. "
                f"Next: {next_step(self.steps_done)}"
            )
            return
        job, took = self.live_scene().third_claim()
        if job and "hold ended" in self.steps_done:  # the step: the hold worker's job, free at once
            self._step("claimed", f"third worker claimed job {job.id} in {took * 1000:.1f} ms")
        elif job:
            self.say(
                f"third worker claimed job {job.id} in {took * 1000:.1f} ms, a job the reaper handed back. "
                f"Next: {next_step(self.steps_done)}"
            )
        else:
            self.say(
                f"third worker: no job it could claim ({took * 1000:.1f} ms). "
                f"Next: {next_step(self.steps_done)}"
            )

    def _reap(self) -> None:
        n = self.live_scene().reap()
        text = f"the reaper handed back {tables.count(n, 'job')}"
        if n and "lease ended" in self.steps_done:
            self._step("reaped", text)
        else:
            self.say(f"{text}. Next: {next_step(self.steps_done) or 'Reset to try again.'}")

    # --- the live board ---------------------------------------------------------------

    def refresh(self) -> None:
        """Look now: the monitor reads pg_stat_activity and hands it to _draw_board."""
        if self.closed or self.scene is None:
            return
        self.scene.monitor.read()

    def _draw_board(self, sessions: list[ActivityRow]) -> None:
        scene = self.scene
        if self.closed or scene is None:
            return
        self.board.value = board_html(scene.board(), scene.lock_holders(), scene.hold_job, sessions)

    def _show_refresh_error(self, exc: BaseException) -> None:
        if not self.closed:  # kept and shown; the monitor's thread never prints
            self.refresh_error = exc
            self.board.value = error_html(exc)

    def _live(self) -> bool:
        """Keep redrawing while a lease may still be counting down."""
        return not self.closed and time.monotonic() < self._live_until

    @property
    def refreshing(self) -> bool:
        return self.scene is not None and self.scene.monitor.watching

    # --- the guide's sequence ---------------------------------------------------------

    @property
    def result(self) -> CrashResult | None:
        return self.runner.result if isinstance(self.runner.result, CrashResult) else None

    def start_replay(self) -> bool:
        if self.closed or self.runner.busy:
            return False
        if self.scene is not None:
            self.scene.close()  # its open transaction would block the replay's reset
            self.scene = None
        guess, lease_s = self.guess.value, self.replay_lease_s  # None when the box is empty: "no guess"
        return self.start_work(
            lambda stop: crash_both(self.db, lease_s, guess=guess, stop=stop),
            f"running the guide's sequence ({lease_s:g} s lease)…",
        )

    def wait(self, timeout: float | None = 60) -> CrashResult | None:
        """Wait for the guide's sequence; raise again any error it hit."""
        return self.runner.wait(timeout)

    def show(self, result: CrashResult) -> None:
        measurements.record(measurements.LEASED_JOB_BACK_S, round(result.back_after_s, 2))
        self.output.value = result_html(result)
        self.reset()  # two ready jobs again, to try it by hand
        self.finish(
            "done: the guide's sequence ran; its result is below. Two ready jobs again: "
            f"to try it by hand, {HANDS_ON[0][1].lower()}"
        )

    def release(self) -> None:
        if self.scene is not None:
            self.scene.close()


class CleanupLab(ExperimentPanel):
    """Guide #9: VACUUM while a hold-style worker keeps its transaction open,
    and the same updates and VACUUM meanwhile in a second database of the
    server (`pgq_elsewhere_<lesson>`, made fresh here; `elsewhere_label`
    names it for `databases.drop_database`)."""

    def __init__(self, db: Database, *, others: int = 1_000):
        # The distinguishing word first: a long name is cut at 63 characters from the end.
        self.elsewhere_label = "elsewhere-" + db.name.removeprefix(databases.PREFIX)
        self.elsewhere = databases.open_database(self.elsewhere_label, reset=True)
        super().__init__(
            partial(cleanup_held_back, db, others=others, elsewhere=self.elsewhere),
            css_class="pgq-cleanup-lab",
            guess_label="How many dead row versions will VACUUM be unable to remove while the worker works?",
            guess_unit="row versions",
            guess_plausible=(0, 100_000),
        )

    def show(self, result: CleanupResult) -> None:
        measurements.record(measurements.DEAD_NOT_REMOVABLE, result.during.not_removable)
        super().show(result)
