"""The two-session lock lab: Session A and Session B side by side, a live
view of pg_stat_activity, and a replay of the guide's scripted sequence.

All the logic lives in `pgq_teach.experiments.locks`; this module only wires
buttons to `Session` commands and turns states and rows into HTML.

Headless (a notebook, a test):

    lab = LockLab(db)
    lab.a.begin_button.click(); lab.a.claim_buttons["for_update"].click()
    lab.b.claim_buttons["for_update"].click()
    lab.b.wait_until("waiting")
    row = lab.wait_until_blocked(lab.b)       # B's row: Lock / transactionid
    lab.a.commit_button.click()               # A marks job 1 done and commits
    lab.b.wait_done().job_id                  # 2
    lab.reset_button.click(); lab.wait()      # roll both back, two ready jobs again
    lab.close()

A click returns once its command has finished, or once the server shows it
waiting for a lock, so quick clicks on A and then B reach the server in that
order. Between experiments press Reset: it rolls both sessions back and seeds
jobs 1 and 2 again (the session buttons are disabled until it is done).
CSS classes for a browser: pgq-lock-lab, pgq-session-a / pgq-session-b, each
with pgq-begin, pgq-claim-for-update / -nowait / -skip-locked, pgq-commit,
pgq-rollback and pgq-status; pgq-activity (rows carry data-session="A" or
"B", and class pgq-lock-wait while waiting for a lock), pgq-reset,
pgq-lab-status, pgq-replay and pgq-result.
"""

from __future__ import annotations

import threading
import time
import weakref
from html import escape
from typing import Callable

import ipywidgets as W

from ..experiments.locks import (MODES, WAITING, ActivityRow, ReplayResult, Session, SessionState, activity,
                                 prepare, replay)
from .common import Runner, comparison_html, error_html, prediction

REFRESH_SECONDS = 0.25  # how often the activity view refreshes while a session waits
# A click returns once its command has finished or the server shows it waiting
# for a lock (at most this long), so clicks on A then B reach the server in that
# order, as typed in two psql windows.
SETTLE_SECONDS = 5.0
_open_labs: weakref.WeakSet = weakref.WeakSet()  # so a new lab can close an old one
ACTIVITY_COLUMNS = ("session", "pid", "state", "wait_event_type", "wait_event", "pg_blocking_pids")


def status_html(state: SessionState, queued: int = 0) -> str:
    """A session's status line: 'waiting… 1.2 s', 'job 2 after 2.01 s', ..."""
    color = {"waiting": "#b26a00", "error": "#b00020", "got job": "#1b5e20"}.get(state.phase, "inherit")
    more = f" <i>({queued} more clicked, queued behind it)</i>" if queued else ""
    return f'<span data-phase="{escape(state.phase)}" style="color:{color}">{escape(state.describe())}</span>{more}'


def activity_html(rows: list[ActivityRow], names: dict[int, str] | None = None, *, live: bool = False) -> str:
    """pg_stat_activity for the lab's sessions, one row each; lock waits highlighted."""
    names = {r.pid: r.session for r in rows} | dict(names or {})
    head = "".join(f"<th>{c}</th>" for c in ACTIVITY_COLUMNS)

    def blockers(row: ActivityRow) -> str:
        return ", ".join(f"{pid} ({names[pid]})" if pid in names else str(pid) for pid in row.blocking_pids)

    body = "".join(
        f'<tr data-session="{escape(r.session)}"'
        + (' class="pgq-lock-wait" style="background:#fff3cd"' if r.waits_for_lock else "") + ">"
        + "".join(f"<td>{escape(str(v))}</td>" for v in (r.application_name, r.pid, r.state or "",
                                                         r.wait_event_type or "", r.wait_event or "",
                                                         blockers(r)))
        + "</tr>"
        for r in rows
    ) or f'<tr><td colspan="{len(ACTIVITY_COLUMNS)}">no lab session is connected</td></tr>'
    when = "live, while a session waits" if live else "as of the last change"
    return (f'<table style="border-collapse:collapse"><caption style="caption-side:top;text-align:left">'
            f"<b>pg_stat_activity</b> for the lab's sessions ({when})</caption>"
            f"<tr>{head}</tr>{body}</table>")


class SessionPanel(W.VBox):
    """One side of the lab: BEGIN, the three claims, COMMIT, ROLLBACK, and a
    status line. The buttons queue commands on `session`; they return at once."""

    def __init__(self, db, name: str, on_change: Callable[[], None],
                 settle: Callable[[SessionPanel], None] | None = None):
        self._on_change = on_change
        self._settle = settle or (lambda panel: panel.session.wait_done(timeout=SETTLE_SECONDS))
        self._render_lock = threading.Lock()
        self.title = W.HTML()
        self.status = W.HTML(value="idle")
        self.status.add_class("pgq-status")
        self.begin_button = W.Button(description="BEGIN", tooltip="start a transaction")
        self.claim_buttons = {
            mode: W.Button(description=words, tooltip=f"claim the oldest ready job with {words}")
            for mode, words in MODES.items()
        }
        self.commit_button = W.Button(description="COMMIT",
                                      tooltip="mark the jobs this transaction claimed done, then COMMIT")
        self.rollback_button = W.Button(description="ROLLBACK",
                                        tooltip="end the transaction; its jobs stay ready")
        self.session = Session(db, name, on_change=lambda _state: self._changed())
        self.title.value = f"<b>Session {escape(name)}</b> · backend pid {self.session.pid}"

        self.begin_button.on_click(lambda _: self._run_command(self.session.begin))
        for mode, button in self.claim_buttons.items():
            button.on_click(lambda _, mode=mode: self._run_command(self.session.claim, mode))
            button.add_class(f"pgq-claim-{mode.replace('_', '-')}")
        self.commit_button.on_click(lambda _: self._run_command(self.session.commit))
        self.rollback_button.on_click(lambda _: self._run_command(self.session.rollback))
        self.begin_button.add_class("pgq-begin")
        self.commit_button.add_class("pgq-commit")
        self.rollback_button.add_class("pgq-rollback")
        super().__init__([self.title, self.begin_button, W.HBox(list(self.claim_buttons.values())),
                          W.HBox([self.commit_button, self.rollback_button]), self.status])
        self.add_class(f"pgq-session-{name.lower()}")

    @property
    def buttons(self) -> list[W.Button]:
        return [self.begin_button, *self.claim_buttons.values(), self.commit_button, self.rollback_button]

    @property
    def state(self) -> SessionState:
        return self.session.state

    def wait_until(self, phase: str, timeout: float = 5.0) -> SessionState:
        return self.session.wait_until(phase, timeout)

    def wait_done(self, timeout: float = 10.0) -> SessionState:
        return self.session.wait_done(timeout)

    def _run_command(self, command: Callable, *args) -> None:
        if self.session.closed:
            return  # the lab was closed; its buttons are disabled
        command(*args)
        try:
            self._settle(self)
        except TimeoutError:
            pass  # still running: the status line shows it live
        except Exception:
            pass  # kept by the session (or the lab) and raised again by their waits

    def render_status(self) -> None:
        # Read the state and write the HTML under one lock, so a slow writer
        # (the refresher) can never put an old state over a newer one.
        with self._render_lock:
            self.status.value = status_html(self.session.state, self.session.queued)

    def _changed(self) -> None:
        self.render_status()
        self._on_change()


class LockLab(W.VBox):
    """Two sessions claiming from two ready jobs, the server's view of them,
    and the guide's scripted replay. Call `close()` when done.

    One lab per database: making a new one closes any earlier lab on the same
    database (re-running a notebook cell), whose open transactions would
    otherwise block the reset."""

    def __init__(self, db, *, reset: bool = True):
        for earlier in list(_open_labs):
            if earlier.db.name == db.name:
                earlier.close()
        self.db = db
        if reset:
            prepare(db)
        self.refresh_error: BaseException | None = None
        self._closed = False
        self._stop = threading.Event()
        self._refresh_lock = threading.Lock()  # guards the refresher's start and end
        self._refresher: threading.Thread | None = None
        self._refresh_wanted = False
        self._monitor = None  # the activity view's own connection
        self._monitor_lock = threading.Lock()
        self._activity_changed = threading.Condition()
        self.activity_rows: list[ActivityRow] = []

        self.activity = W.HTML(value=activity_html([]))
        self.activity.add_class("pgq-activity")
        self.a = SessionPanel(db, "A", self._kick, self._settle)
        try:
            self.b = SessionPanel(db, "B", self._kick, self._settle)
        except BaseException:
            self.a.session.close()
            raise
        self.reset_button = W.Button(description="Reset", icon="refresh",
                                     tooltip="roll both sessions back and start again from two ready jobs")
        self.lab_status = W.HTML(value="two ready jobs: 1 and 2")
        self.mode = W.Dropdown(options=[(words, mode) for mode, words in MODES.items()], value="for_update",
                               description="B claims with")
        self.guess = prediction("Your guess: how many seconds will B wait?", 0, maximum=60)
        self.replay_button = W.Button(description="Replay the guide's sequence", button_style="primary",
                                      icon="play", layout=W.Layout(width="auto"))
        self.replay_output = W.HTML()
        self.replay_output.add_class("pgq-result")
        self.runner = Runner(self._job_done, self._job_failed)

        self.reset_button.on_click(lambda _: self.reset())
        self.replay_button.on_click(lambda _: self.start_replay())
        sessions = W.HBox([self.a, self.b], layout=W.Layout(justify_content="space-around"))
        super().__init__([
            sessions, self.activity, W.HBox([self.reset_button, self.lab_status]),
            W.HTML("<b>Replay the guide's sequence</b>: A locks job 1 and holds it for 2 s; "
                   "B claims while A holds it."),
            W.HBox([self.mode, self.guess]), self.replay_button, self.replay_output,
        ])
        self.add_class("pgq-lock-lab")
        self.reset_button.add_class("pgq-reset")
        self.replay_button.add_class("pgq-replay")
        self.lab_status.add_class("pgq-lab-status")
        _open_labs.add(self)
        self._kick()

    # --- the lab's background jobs: reset and replay --------------------------

    @property
    def result(self) -> ReplayResult | None:
        """The last replay's result."""
        return self.runner.result if isinstance(self.runner.result, ReplayResult) else None

    def reset(self) -> bool:
        """Roll both sessions back and reseed two ready jobs, in the background."""
        return self._start(lambda: self._settle_and_seed(), "resetting…")

    def start_replay(self) -> bool:
        mode, guess = self.mode.value, self.guess.value
        return self._start(lambda: self._replay(mode, guess), f"replaying with {MODES[mode]}…")

    def wait(self, timeout: float | None = 60) -> ReplayResult | None:
        """Wait for a reset or replay; raise again any error it hit."""
        return self.runner.wait(timeout)

    def _start(self, job: Callable[[], object], message: str) -> bool:
        if self._closed or self.runner.busy:
            return False
        self._enable(False)
        self.lab_status.value = message
        started = self.runner.start(lambda _stop: job())
        self._kick()  # the activity view follows the replay's sessions live
        return started

    def _settle_and_seed(self) -> None:
        # Open transactions hold row locks that would block TRUNCATE: end them first.
        for panel in (self.a, self.b):
            panel.session.cancel()
            panel.session.rollback()
        for panel in (self.a, self.b):
            panel.session.wait_done(timeout=30)
        prepare(self.db)

    def _replay(self, mode: str, guess: int) -> ReplayResult:
        self._settle_and_seed()
        result = replay(self.db, mode, guess=guess)
        prepare(self.db)  # leave two ready jobs for the next experiment
        return result

    def _job_done(self, result) -> None:
        if isinstance(result, ReplayResult):
            self.replay_output.value = (comparison_html(result.comparison(), version=result.server_version)
                                        + f"<pre>{escape(result.summary())}</pre>")
        self.lab_status.value = "two ready jobs: 1 and 2"
        self._enable(True)
        self._kick()

    def _job_failed(self, exc: BaseException) -> None:
        self.lab_status.value = error_html(exc)
        self._enable(True)

    def _enable(self, on: bool) -> None:
        # Clicks during a reset or replay would take the replay's jobs.
        for button in (*self.a.buttons, *self.b.buttons, self.reset_button, self.replay_button):
            button.disabled = not on or self._closed

    # --- the live activity view ---------------------------------------------------

    def refresh_activity(self) -> list[ActivityRow]:
        """Read pg_stat_activity now and redraw the view and waiting statuses."""
        with self._monitor_lock:
            if self._closed:
                return self.activity_rows
            if self._monitor is None or self._monitor.closed:
                self._monitor = self.db.connect(application_name="pgq-teach monitor")
            rows = activity(self._monitor)
        names = {self.a.session.pid: "A", self.b.session.pid: "B"}
        self.activity.value = activity_html(rows, names, live=self._anything_running())
        for panel in (self.a, self.b):
            if panel.state.phase == WAITING:
                panel.render_status()  # the live 'waiting… 1.2 s'
        with self._activity_changed:
            self.activity_rows = rows
            self._activity_changed.notify_all()
        return rows

    def wait_until_blocked(self, panel: SessionPanel, timeout: float = 5.0) -> ActivityRow:
        """Wait until the activity view shows `panel`'s session waiting for a
        lock; return its row."""
        deadline = time.monotonic() + timeout
        while True:
            self._kick()
            with self._activity_changed:
                if self.refresh_error is not None:
                    raise self.refresh_error
                row = next((r for r in self.activity_rows
                            if r.pid == panel.session.pid and r.waits_for_lock), None)
                if row is not None:
                    return row
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"session {panel.session.name} was not seen waiting for a lock "
                                       f"within {timeout:g} s; it is {panel.state.describe()}")
                self._activity_changed.wait(min(remaining, REFRESH_SECONDS))

    def _settle(self, panel: SessionPanel) -> None:
        """Return when `panel`'s commands have finished, or its claim is seen
        waiting for a lock in pg_stat_activity; give up after SETTLE_SECONDS."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline:
            try:
                panel.session.wait_done(timeout=0.05)
                return
            except TimeoutError:
                pass
            if panel.state.phase == WAITING and any(
                    r.pid == panel.session.pid and r.waits_for_lock for r in self.refresh_activity()):
                return

    def _anything_running(self) -> bool:
        return self.runner.busy or any(p.state.phase == WAITING for p in (self.a, self.b))

    def _kick(self) -> None:
        """Something changed: refresh the view soon, and keep refreshing while
        anything waits. Starts the refresher thread if it is not running."""
        with self._refresh_lock:
            if self._closed:
                return
            self._refresh_wanted = True
            if self._refresher is None or not self._refresher.is_alive():
                self._refresher = threading.Thread(target=self._refresh_loop, name="pgq-lab activity",
                                                   daemon=True)
                self._refresher.start()

    def _refresh_loop(self) -> None:
        # Runs only while there is something to show; never prints.
        try:
            while not self._stop.is_set():
                with self._refresh_lock:
                    self._refresh_wanted = False
                self.refresh_activity()
                with self._refresh_lock:
                    if not self._refresh_wanted and not self._anything_running():
                        self._refresher = None
                        return
                self._stop.wait(REFRESH_SECONDS)
        except BaseException as exc:  # kept, shown, and raised again by wait_until_blocked
            if self._closed:
                return  # the monitor connection closed under us: expected
            self.refresh_error = exc
            self.activity.value = error_html(exc)
            with self._activity_changed:
                self._activity_changed.notify_all()

    @property
    def refreshing(self) -> bool:
        refresher = self._refresher
        return refresher is not None and refresher.is_alive()

    # --- the end ------------------------------------------------------------------

    def close(self) -> None:
        """Stop the refresher, end both sessions (open transactions roll back)
        and close every connection. Safe to call twice."""
        with self._refresh_lock:
            if self._closed:
                return
            self._closed = True
            refresher = self._refresher
        _open_labs.discard(self)
        self._stop.set()
        self.runner.stop()
        if self.runner.thread is not None:
            self.runner.thread.join(60)
        if refresher is not None:
            refresher.join(10)
        for panel in (self.a, self.b):
            panel.session.close()
        with self._monitor_lock:
            if self._monitor is not None:
                self._monitor.close()
        self._enable(False)
        self.lab_status.value = "closed: run the cell that made the lab again to start over"
