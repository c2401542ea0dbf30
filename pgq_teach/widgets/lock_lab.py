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
from collections.abc import Callable
from html import escape

import ipywidgets as W

from .. import tables
from ..databases import Database
from ..experiments import locks
from ..experiments.locks import (
    CLAUSES,
    IDLE,
    WAITING,
    LockSession,
    ReplayResult,
    SessionState,
    WaitersResult,
    prepare,
)
from ..experiments.sessions import ERROR, GOT_JOB, IN_TRANSACTION, NO_JOB, ActivityMonitor, ActivityRow
from ..tables import Table
from .common import error_html, guess_field, replay_button, result_html, styled
from .lab import Lab, button

# A click returns once its command has finished or the server shows it waiting
# for a lock (at most this long), so clicks on A then B reach the server in that
# order, as typed in two psql windows.
SETTLE_SECONDS = 5.0
_open_labs: weakref.WeakSet = weakref.WeakSet()  # so a new lab can close an old one
ACTIVITY_COLUMNS = ("session", "pid", "state", "wait_event_type", "wait_event", "pg_blocking_pids")
# Each session's column is a fixed share of the lab (the two and their gap fit a 934 px output
# at 1366 px), so a column never moves as its status text changes; claim buttons wrap if need be.
PANEL_WIDTH = "calc(50% - 12px)"
SESSIONS_GAP = "24px"
STATUS_HEIGHT = "4.5em"  # room for the longest status line, wrapped
READY_TEXT = "Two ready jobs: 1 and 2. Press BEGIN in session A, then a claim, then a claim in B."


def next_step(a: SessionState, b: SessionState) -> str:
    """The lab's status line, from the two sessions' states: what to press next."""
    sessions = {"A": a, "B": b}
    other = {"A": "B", "B": "A"}
    for name, state in sessions.items():
        if state.phase == ERROR and state.in_transaction:
            return f"Session {name}'s transaction is aborted by its error: press ROLLBACK in {name}."
    for name, state in sessions.items():
        if state.phase == WAITING:
            return (
                f"Session {name} waits for the row lock session {other[name]} holds: press COMMIT or "
                f"ROLLBACK in {other[name]} to let it go on."
            )
    holding = [n for n, st in sessions.items() if st.phase == GOT_JOB and st.in_transaction]
    fresh = [n for n, st in sessions.items() if st.phase in (IDLE, IN_TRANSACTION)]
    if len(holding) == 1 and fresh:
        name, waiter = holding[0], other[holding[0]]
        return (
            f"Session {name} holds job {sessions[name].job_id} until COMMIT or ROLLBACK. Now press a claim "
            f"in {waiter}: FOR UPDATE waits, NOWAIT refuses at once, SKIP LOCKED takes another job."
        )
    for name, state in sessions.items():
        if state.phase == IN_TRANSACTION:
            return f"Session {name} is in a transaction: press a claim in {name}."
    if any(st.in_transaction for st in sessions.values()):
        return (
            "Both claims have answered: press COMMIT or ROLLBACK in each session that is in a "
            "transaction, then Reset for two ready jobs again."
        )
    if all(st.phase == IDLE and st.note.startswith("reset") for st in sessions.values()):
        return READY_TEXT
    if all(st.phase == IDLE and not st.note for st in sessions.values()):
        return READY_TEXT
    outside = [n for n, st in sessions.items() if st.phase in (GOT_JOB, NO_JOB) and not st.in_transaction]
    if outside:
        return (
            f"Session {outside[0]}'s claim ran outside BEGIN, so it committed at once and holds no lock. "
            "Press Reset for two ready jobs again, or BEGIN in a session first."
        )
    return "Both transactions have ended. Press Reset for two ready jobs again, then BEGIN in session A."


class ReplayView:
    """A replay's result that shows itself in a notebook as its comparison
    table and summary; attributes are the result's (`view.b_seconds`)."""

    def __init__(self, result: ReplayResult | WaitersResult):
        self.result = result

    def __getattr__(self, name: str):
        return getattr(self.result, name)

    def __repr__(self) -> str:
        return self.result.summary()

    def _repr_html_(self) -> str:
        return result_html(self.result)


def settle_labs(db: Database) -> None:
    """Reset any open lock lab on this database: a replay empties the jobs
    table, which must first wait for the lab's open transactions to end."""
    for lab in list(_open_labs):
        if lab.db.name == db.name and not lab.closed:
            lab.reset()
            lab.wait()


def refresh_labs(db: Database) -> None:
    """Read pg_stat_activity again for any open lock lab on this database, once a replay run
    beside it has closed its sessions: a look taken while they were open would otherwise
    stay on screen, listing them "idle in transaction" after they had gone."""
    for lab in list(_open_labs):
        if lab.db.name == db.name and not lab.closed:
            lab.refresh_activity()


def replay(db: Database, clause: str = "for_update", **settings) -> ReplayView:
    """Run the guide's two-session sequence (experiments.locks.replay) and show it."""
    settle_labs(db)
    try:
        return ReplayView(locks.replay(db, clause, **settings))
    finally:
        refresh_labs(db)


def line_of_waiters(db: Database) -> ReplayView:
    """A and three waiters, B, C and D, on one row (experiments.locks.line_of_waiters), shown."""
    settle_labs(db)
    try:
        return ReplayView(locks.line_of_waiters(db))
    finally:
        refresh_labs(db)


def status_html(state: SessionState, queued: int = 0) -> str:
    """A session's status line: 'waiting… 1.2 s', 'job 2 after 2.00 s', ..."""
    color = {"waiting": "#b26a00", "error": "#b00020", "got job": "#1b5e20"}.get(state.phase, "inherit")
    more = f" <i>({queued} more clicked, queued behind it)</i>" if queued else ""
    return (
        f'<span data-phase="{escape(state.phase)}" style="color:{color}">'
        f"{escape(state.describe())}</span>{more}"
    )


def activity_html(rows: list[ActivityRow], names: dict[int, str] | None = None, *, live: bool = False) -> str:
    """pg_stat_activity for the lab's sessions, one row each; lock waits highlighted."""
    names = {r.pid: r.session for r in rows} | dict(names or {})

    def blockers(row: ActivityRow) -> str:
        return ", ".join(f"{pid} ({names[pid]})" if pid in names else str(pid) for pid in row.blocking_pids)

    cells = [
        [r.application_name, str(r.pid), r.state, r.wait_event_type, r.wait_event, blockers(r) or None]
        for r in rows
    ] or [["no lab session is connected", *[""] * (len(ACTIVITY_COLUMNS) - 1)]]
    attrs = [
        {"data-session": r.session}
        | ({"class": "pgq-lock-wait", "style": "background:#fff3cd"} if r.waits_for_lock else {})
        for r in rows
    ]
    when = "live, while a session waits" if live else "as of the last change"
    return (
        f"<div><b>pg_stat_activity</b> for the lab's sessions ({escape(when)})</div>"
        + Table(tables.columns(*ACTIVITY_COLUMNS), cells, row_attrs=attrs).html()
    )


class SessionPanel(W.VBox):
    """One side of the lab: BEGIN, the three claims, COMMIT, ROLLBACK, and a
    status line. The buttons queue commands on `session`; they return at once."""

    def __init__(
        self,
        db,
        name: str,
        on_change: Callable[[], None],
        settle: Callable[[SessionPanel], None] | None = None,
    ):
        self._on_change = on_change
        self._settle = settle or (lambda panel: panel.session.wait_done(timeout=SETTLE_SECONDS))
        self._render_lock = threading.Lock()
        self.title = W.HTML()
        status_layout = W.Layout(width="100%", min_height=STATUS_HEIGHT)
        self.status = styled(W.HTML(value="idle", layout=status_layout), "pgq-status")
        self.begin_button = button("BEGIN", "pgq-begin", tooltip="start a transaction")
        self.claim_buttons = {
            mode: button(
                words,
                f"pgq-claim-{mode.replace('_', '-')}",
                tooltip=f"claim the oldest ready job with {words}",
            )
            for mode, words in CLAUSES.items()
        }
        commit_tip = "mark the jobs this transaction claimed done, then COMMIT"
        self.commit_button = button("COMMIT", "pgq-commit", tooltip=commit_tip)
        rollback_tip = "end the transaction; its jobs stay ready"
        self.rollback_button = button("ROLLBACK", "pgq-rollback", tooltip=rollback_tip)
        self.session = LockSession(db, name, on_change=lambda _state: self._changed())
        self.title.value = f"<b>Session {escape(name)}</b> · backend pid {self.session.pid}"

        self.begin_button.on_click(lambda _: self._run_command(self.session.begin))
        for mode, claim_button in self.claim_buttons.items():
            claim_button.on_click(lambda _, mode=mode: self._run_command(self.session.claim, mode))
        self.commit_button.on_click(lambda _: self._run_command(self.session.commit))
        self.rollback_button.on_click(lambda _: self._run_command(self.session.rollback))
        super().__init__(
            [
                self.title,
                self.begin_button,
                W.HBox(list(self.claim_buttons.values())),
                W.HBox([self.commit_button, self.rollback_button]),
                self.status,
            ],
            layout=W.Layout(width=PANEL_WIDTH, min_width=PANEL_WIDTH, max_width=PANEL_WIDTH),
        )
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
        except Exception as exc:  # shown, and kept by the session (or the lab) for their waits
            self.status.value = error_html(exc)

    def render_status(self) -> None:
        # Read the state and write the HTML under one lock, so a slow writer
        # (the refresher) can never put an old state over a newer one.
        with self._render_lock:
            self.status.value = status_html(self.session.state, self.session.queued)

    def _changed(self) -> None:
        self.render_status()
        self._on_change()


class LockLab(Lab):
    """Two sessions claiming from two ready jobs, the server's view of them,
    and the guide's scripted replay. Call `close()` when done.

    One lab per database: making a new one closes any earlier lab on the same
    database (re-running a notebook cell), whose open transactions would
    otherwise block the reset."""

    built = False  # until __init__ ends: a session's change may arrive while the lab is being made

    def __init__(self, db: Database, *, reset: bool = True):
        for earlier in list(_open_labs):
            if earlier.db.name == db.name:
                earlier.close()
        self.db = db
        if reset:
            prepare(db)
        self.activity = styled(W.HTML(value=activity_html([])), "pgq-activity")
        self.monitor = ActivityMonitor(
            db, on_rows=self._show_rows, on_error=self._show_monitor_error, busy=self._anything_running
        )
        self.a = SessionPanel(db, "A", self._session_changed, self._settle)
        try:
            self.b = SessionPanel(db, "B", self._session_changed, self._settle)
        except BaseException:
            self.a.session.close()
            self.monitor.close()
            raise
        tip = "roll both sessions back and start again from two ready jobs"
        self.reset_button = button("Reset", "pgq-reset", icon="refresh", tooltip=tip)
        status = W.HTML()
        self.mode = W.Dropdown(
            options=[(words, mode) for mode, words in CLAUSES.items()],
            value="for_update",
            description="B claims with",
            style={"description_width": "initial"},
            layout=W.Layout(width="auto", min_width="22em"),  # the whole "FOR UPDATE SKIP LOCKED"
        )
        self.guess = guess_field(
            "Your guess: how many seconds will B wait?", unit="s", plausible=(0, locks.HOLD_LIMITS[1])
        )
        self.replay_button = replay_button("Replay the guide's sequence")
        self.replay_output = styled(W.HTML(), "pgq-result")

        self.reset_button.on_click(lambda _: self.reset())
        self.replay_button.on_click(lambda _: self.start_replay())
        sessions = W.HBox(
            [self.a, self.b],
            layout=W.Layout(justify_content="flex-start", grid_gap=SESSIONS_GAP, width="100%"),
        )
        super().__init__(
            [
                sessions,
                self.activity,
                W.HBox([self.reset_button, status]),
                W.HTML(
                    "<b>Replay the guide's sequence</b>: A locks job 1 and holds it for 2 s; "
                    "B claims while A holds it."
                ),
                W.HBox([self.mode, self.guess], layout=W.Layout(grid_gap="16px", flex_flow="row wrap")),
                self.replay_button,
                self.replay_output,
            ],
            css_class="pgq-lock-lab",
            status=status,
            next_step=READY_TEXT,
        )
        _open_labs.add(self)
        self.built = True
        self.monitor.watch()

    # --- the lab's background jobs: reset and replay --------------------------

    @property
    def result(self) -> ReplayResult | None:
        """The last replay's result."""
        return self.runner.result if isinstance(self.runner.result, ReplayResult) else None

    @property
    def refresh_error(self) -> BaseException | None:
        return self.monitor.error

    def reset(self) -> bool:
        """Roll both sessions back and reseed two ready jobs, in the background."""
        return self._start(lambda: self._settle_and_seed(), "resetting…")

    def start_replay(self) -> bool:
        clause, guess = self.mode.value, self.guess.value
        self.replay_output.value = ""  # the old result must not sit beside the new run
        return self._start(lambda: self._replay(clause, guess), f"replaying with {CLAUSES[clause]}…")

    def wait(self, timeout: float | None = 60) -> ReplayResult | None:
        """Wait for a reset or replay; raise again any error it hit."""
        return self.runner.wait(timeout)

    @property
    def lab_status(self) -> W.HTML:
        """The lab's status line (class pgq-lab-status)."""
        return self.status

    @property
    def buttons(self) -> list[W.Button]:
        # Clicks during a reset or replay would take the replay's jobs.
        return [*self.a.buttons, *self.b.buttons, self.reset_button, self.replay_button]

    def _start(self, job: Callable[[], object], message: str) -> bool:
        started = self.start_work(lambda _stop: job(), message)
        self.monitor.watch()  # the activity view follows the replay's sessions live
        return started

    def _settle_and_seed(self) -> None:
        # Open transactions hold row locks that would block TRUNCATE: end them first.
        for panel in (self.a, self.b):
            panel.session.cancel()
            panel.session.rollback()
        for panel in (self.a, self.b):
            panel.session.wait_done(timeout=30)
        prepare(self.db)
        for panel in (self.a, self.b):  # a fresh start: no old job or error left on screen
            panel.session.set(SessionState(IDLE, note="reset: two ready jobs"))

    def _replay(self, clause: str, guess: float | None) -> ReplayResult:
        self._settle_and_seed()
        result = locks.replay(self.db, clause, guess=guess)
        prepare(self.db)  # leave two ready jobs for the next experiment
        return result

    def show(self, result) -> None:
        if isinstance(result, ReplayResult):
            self.replay_output.value = result_html(result)
            self.finish(f"done: the replay's result is below. {self.next_step()}")
        else:
            self.say(self.next_step())
        self.monitor.watch()

    def next_step(self) -> str:
        """What to press next, from both sessions' states (the status line between runs)."""
        return next_step(self.a.state, self.b.state)

    def _session_changed(self) -> None:
        # Called on a session's thread, possibly while the lab is still making its panels.
        self.monitor.watch()
        if self.built and not self.busy and not self.closed:
            text = self.next_step()
            if text != self.status.value:
                self.say(text)

    # --- the live activity view ---------------------------------------------------

    def _show_rows(self, rows: list[ActivityRow]) -> None:
        names = {self.a.session.pid: "A", self.b.session.pid: "B"}
        self.activity.value = activity_html(rows, names, live=self._anything_running())
        for panel in (self.a, self.b):
            if panel.state.phase == WAITING:
                panel.render_status()  # the live 'waiting… 1.2 s'

    def _show_monitor_error(self, exc: BaseException) -> None:
        self.activity.value = error_html(exc)

    def refresh_activity(self) -> list[ActivityRow]:
        """Read pg_stat_activity now and redraw the view and waiting statuses."""
        return self.monitor.read()

    def wait_until_blocked(self, panel: SessionPanel, timeout: float = 5.0) -> ActivityRow:
        """Wait until the activity view shows `panel`'s session waiting for a
        lock; return its row."""
        pid = panel.session.pid
        try:
            return self.monitor.wait_for(
                lambda r: r.pid == pid and r.waits_for_lock,
                f"session {panel.session.name} waiting for a lock",
                timeout,
            )
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; it is {panel.state.describe()}") from None

    def _settle(self, panel: SessionPanel) -> None:
        """Return when `panel`'s commands have finished, or its claim is seen
        waiting for a lock in pg_stat_activity; give up after SETTLE_SECONDS.
        A monitor error is raised (and shown), not dropped."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline:
            try:
                panel.session.wait_done(timeout=0.05)
                return
            except TimeoutError:
                pass
            if panel.state.phase == WAITING and any(
                r.pid == panel.session.pid and r.waits_for_lock for r in self.refresh_activity()
            ):
                return

    def _anything_running(self) -> bool:
        return self.busy or any(p.state.phase == WAITING for p in (self.a, self.b))

    @property
    def refreshing(self) -> bool:
        return self.monitor.watching

    # --- the end ------------------------------------------------------------------

    def release(self) -> None:
        """Stop the monitor, end both sessions (open transactions roll back)
        and close every connection."""
        _open_labs.discard(self)
        self.monitor.close()
        for panel in (self.a, self.b):
            panel.session.close()
