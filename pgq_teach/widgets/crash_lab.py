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
from .common import ExperimentPanel, Runner, error_html, guess_field, replay_button, result_html, styled

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
        self.start_button = styled(
            W.Button(description="Start", icon="play", tooltip="claim one job and start working"), "pgq-start"
        )
        self.end_button = styled(
            W.Button(
                description="End its session",
                icon="times",
                disabled=True,
                tooltip="pg_terminate_backend, from a third session",
                button_style="danger",
            ),
            "pgq-end",
        )
        self.status = styled(W.HTML(value="not started"), "pgq-status")
        super().__init__(
            [
                W.HTML(f"<b>{escape(title)}</b><br><small>{escape(what)}</small>"),
                W.HBox([self.start_button, self.end_button]),
                self.status,
            ],
            layout=W.Layout(width="48%"),
        )
        self.add_class(css)


class CrashLab(W.VBox):
    """Two workers, a third worker and the reaper, a live board, and the
    guide's sequence. Call `close()` when done."""

    def __init__(self, db, lease_s: float = DEFAULT_LEASE_S):
        self.db, self.lease_s = db, lease_s
        self.scene: CrashScene | None = None
        self.refresh_error: BaseException | None = None
        self._closed = False
        self._live_until = 0.0

        self.hold_panel = WorkerPanel(
            "hold-style worker",
            "BEGIN; claim FOR UPDATE SKIP LOCKED; work inside the transaction",
            "pgq-hold-worker",
        )
        self.lease_panel = WorkerPanel(
            "lease-style worker",
            f"claim with a {lease_s:g} s lease; commit; work with no transaction open",
            "pgq-lease-worker",
        )
        self.claim_button = styled(
            W.Button(description="Third worker claims", icon="hand-paper-o"), "pgq-third-claim"
        )
        self.reap_button = styled(W.Button(description="Run the reaper", icon="recycle"), "pgq-reap")
        self.reset_button = styled(
            W.Button(description="Reset", icon="refresh", tooltip="two ready jobs again"), "pgq-reset"
        )
        self.third_status = styled(W.HTML(value=""), "pgq-third-status")
        self.board = styled(W.HTML(value=""), "pgq-crash-board")
        self.guess = guess_field(
            "Your guess: seconds until the leased job is ready again", minimum=0, maximum=60
        )
        self.run_button = replay_button("Run the guide's sequence")
        self.output = styled(W.HTML(), "pgq-result")
        self.runner = Runner(self._done, self._failed)

        self.hold_panel.start_button.on_click(lambda _: self._act(self._start_hold))
        self.lease_panel.start_button.on_click(lambda _: self._act(self._start_lease))
        self.hold_panel.end_button.on_click(lambda _: self._act(self._end, self.hold_panel, "hold"))
        self.lease_panel.end_button.on_click(lambda _: self._act(self._end, self.lease_panel, "lease"))
        self.claim_button.on_click(lambda _: self._act(self._third_claim))
        self.reap_button.on_click(lambda _: self._act(self._reap))
        self.reset_button.on_click(lambda _: self._act(self.reset))
        self.run_button.on_click(lambda _: self.start_replay())
        super().__init__(
            [
                W.HBox([self.hold_panel, self.lease_panel], layout=W.Layout(justify_content="space-between")),
                W.HBox([self.claim_button, self.reap_button, self.reset_button]),
                self.third_status,
                self.board,
                W.HTML(
                    "<b>The guide's sequence</b>: both workers start, each session is ended in turn, a third "
                    "worker claims and the reaper runs until the leased job comes back."
                ),
                self.guess,
                self.run_button,
                self.output,
            ]
        )
        self.add_class("pgq-crash-lab")
        self.reset()

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
        self.third_status.value = "two ready jobs: 1 and 2. Start the hold-style worker first."
        self.refresh()

    def live_scene(self) -> CrashScene:
        """The scene the buttons act on; gone once the lab is closed."""
        if self.scene is None:
            raise PgqError("the lab is closed: make a new CrashLab")
        return self.scene

    def _act(self, action, *args) -> None:
        if self._closed or self.runner.busy:
            return
        try:
            action(*args)
        except Exception as exc:  # shown where the learner looks; the scene stays usable
            self.third_status.value = error_html(exc)
        self._live_until = time.monotonic() + self.lease_s + LIVE_AFTER_CLICK_S
        self.refresh()
        if self.scene is not None:
            self.scene.monitor.watch()

    def _start_hold(self) -> None:
        job = self.live_scene().start_hold_worker()
        self._started(self.hold_panel, f"working on job {job}, its transaction open (row lock held)")

    def _start_lease(self) -> None:
        job = self.live_scene().start_lease_worker()
        self._started(
            self.lease_panel,
            f"working on job {job.id} (attempts {job.attempts}), "
            f"no transaction open; lease {self.lease_s:g} s",
        )

    @staticmethod
    def _started(panel: WorkerPanel, text: str) -> None:
        panel.start_button.disabled, panel.end_button.disabled = True, False
        panel.status.value = text

    def _end(self, panel: WorkerPanel, worker: str) -> None:
        ended = self.live_scene().end_session(worker)
        panel.end_button.disabled = True
        panel.status.value = "session ended (pg_terminate_backend)" if ended else "it was not running"

    def _third_claim(self) -> None:
        job, took = self.live_scene().third_claim()
        self.third_status.value = (
            f"third worker claimed job {job.id} in {took * 1000:.1f} ms"
            if job
            else f"third worker: no job it could claim ({took * 1000:.1f} ms)"
        )

    def _reap(self) -> None:
        n = self.live_scene().reap()
        self.third_status.value = f"the reaper handed back {n} job(s)"

    # --- the live board ---------------------------------------------------------------

    def refresh(self) -> None:
        """Look now: the monitor reads pg_stat_activity and hands it to _draw_board."""
        if self._closed or self.scene is None:
            return
        self.scene.monitor.read()

    def _draw_board(self, sessions: list[ActivityRow]) -> None:
        scene = self.scene
        if self._closed or scene is None:
            return
        self.board.value = board_html(scene.board(), scene.lock_holders(), scene.hold_job, sessions)

    def _show_refresh_error(self, exc: BaseException) -> None:
        if not self._closed:  # kept and shown; the monitor's thread never prints
            self.refresh_error = exc
            self.board.value = error_html(exc)

    def _live(self) -> bool:
        """Keep redrawing while a lease may still be counting down."""
        return not self._closed and time.monotonic() < self._live_until

    @property
    def refreshing(self) -> bool:
        return self.scene is not None and self.scene.monitor.watching

    # --- the guide's sequence ---------------------------------------------------------

    @property
    def result(self) -> CrashResult | None:
        return self.runner.result if isinstance(self.runner.result, CrashResult) else None

    def start_replay(self) -> bool:
        if self._closed or self.runner.busy:
            return False
        if self.scene is not None:
            self.scene.close()  # its open transaction would block the replay's reset
            self.scene = None
        self._enable(False)
        self.third_status.value = "running the guide's sequence…"
        guess = self.guess.value  # None when the box is empty: the result says "no guess"
        return self.runner.start(lambda stop: crash_both(self.db, self.lease_s, guess=guess, stop=stop))

    def wait(self, timeout: float | None = 60) -> CrashResult | None:
        """Wait for the guide's sequence; raise again any error it hit."""
        return self.runner.wait(timeout)

    def _done(self, result: CrashResult) -> None:
        measurements.record(measurements.LEASED_JOB_BACK_S, round(result.back_after_s, 2))
        self.output.value = result_html(result)
        self._enable(True)
        self.reset()  # two ready jobs again, to try it by hand

    def _failed(self, exc: BaseException) -> None:
        self.third_status.value = error_html(exc)
        self._enable(True)

    def _enable(self, on: bool) -> None:
        for button in (self.claim_button, self.reap_button, self.reset_button, self.run_button):
            button.disabled = not on or self._closed
        if not on:
            for panel in (self.hold_panel, self.lease_panel):
                panel.start_button.disabled = panel.end_button.disabled = True

    def close(self) -> None:
        """Stop the board, close every connection. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self.runner.stop()
        if self.runner.thread is not None:
            self.runner.thread.join(60)
        if self.scene is not None:
            self.scene.close()
        self._enable(False)
        self.third_status.value = "closed: run the cell that made the lab again to start over"


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
        )

    def _done(self, result: CleanupResult) -> None:
        measurements.record(measurements.DEAD_NOT_REMOVABLE, result.during.not_removable)
        super()._done(result)
