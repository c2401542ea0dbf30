"""The operations dashboard: the guide's three monitoring queries, refreshed
every second while a background load runs. Start and Stop; one thread
refreshes the tables and only sets an HTML value (it never prints)."""

from __future__ import annotations

import threading
from functools import partial
from html import escape

import ipywidgets as W

from ..databases import Database
from ..experiments import operations
from ..experiments.operations import AutovacuumComparison, Load, Snapshot, snapshot
from .common import ExperimentPanel, comparison_html, error_html, styled


def snapshot_html(snap: Snapshot) -> str:
    st = snap.stats
    counts = "".join(
        f"<tr><td>{escape(k)}</td><td>{'~' if k in st.estimated else ''}{v:,}</td></tr>"  # ~: an estimate
        for k, v in st.counts.items()
    )
    wait = f"{st.oldest_due_wait.total_seconds():.2f} s" if st.oldest_due_wait is not None else "–"
    sessions = "".join(
        f"<tr class='pgq-session'><td>{s['pid']}</td><td>{escape(str(s['state']))}</td>"
        f"<td>{s['xact_age'].total_seconds():.1f} s</td><td>{s['backend_xid'] or '–'}</td>"
        f"<td>{s['backend_xmin'] or '–'}</td></tr>"
        for s in st.sessions
        if s.get("xact_age") is not None
    )
    last = st.last_autovacuum.strftime("%H:%M:%S") if st.last_autovacuum else "never"
    style = "<style>.pgq-dash td,.pgq-dash th{padding:1px 8px;text-align:left}</style>"
    return (
        f"{style}<div class='pgq-dash' style='display:flex;gap:24px'>"
        f"<div><b>jobs by status</b><table><tr><th>status</th><th>jobs</th></tr>{counts}</table>"
        f"oldest due wait: <span class='pgq-oldest-wait'>{wait}</span></div>"
        "<div><b>sessions holding a transaction ID or snapshot</b><table><tr><th>pid</th><th>state</th>"
        f"<th>xact_age</th><th>backend_xid</th><th>backend_xmin</th></tr>{sessions}</table></div>"
        f"<div><b>jobs table</b><table><tr><td>n_live_tup</td><td>{st.live_tuples or 0:,}</td></tr>"
        f"<tr><td>n_dead_tup</td><td class='pgq-dead'>{st.dead_tuples or 0:,}</td></tr>"
        f"<tr><td>last_autovacuum</td><td>{last}</td></tr>"
        f"<tr><td>autovacuum_count</td><td>{st.autovacuum_count or 0}</td></tr></table></div></div>"
    )


class Dashboard(W.VBox):
    """Headless: `dash.start_button.click()`, wait, `dash.stop_button.click()`,
    then `dash.wait()` and read `dash.snapshots`."""

    def __init__(self, db: Database, *, interval: float = 1.0, rate: int = 200, workers: int = 2):
        self.db, self.interval = db, interval
        self.stuck = W.Checkbox(
            value=True,
            description="include a forgotten REPEATABLE READ transaction",
            indent=False,
            layout=W.Layout(width="auto"),
        )
        self.rate = W.BoundedIntText(value=rate, min=1, max=5_000, description="jobs/s")
        self.workers = W.BoundedIntText(value=workers, min=1, max=16, description="workers")
        self.start_button = W.Button(description="Start", button_style="primary", icon="play")
        self.stop_button = W.Button(description="Stop", icon="stop", disabled=True)
        self.status = styled(W.HTML(), "pgq-status")
        self.view = styled(W.HTML(), "pgq-result")
        self.snapshots: list[Snapshot] = []
        self.load: Load | None = None
        self.thread: threading.Thread | None = None
        self.halt = threading.Event()
        self.error: BaseException | None = None
        self.start_button.on_click(lambda _: self.start())
        self.stop_button.on_click(lambda _: self.stop())
        super().__init__(
            [
                W.HBox([self.rate, self.workers, self.stuck]),
                W.HBox([self.start_button, self.stop_button]),
                self.status,
                self.view,
            ]
        )
        styled(self, "pgq-dashboard")

    def start(self) -> None:
        if self.thread is not None and self.thread.is_alive():
            return
        self.snapshots, self.error = [], None
        self.halt = threading.Event()
        self.start_button.disabled, self.stop_button.disabled = True, False
        try:
            self.load = Load(
                self.db, rate=self.rate.value, workers=self.workers.value, stuck_session=self.stuck.value
            )
            self.load.start()
        except Exception as exc:  # noqa: BLE001
            self.failed(exc)
            return
        self.status.value = "running: refreshing every second"
        self.thread = threading.Thread(target=self.refresh_loop, daemon=True)
        self.thread.start()

    def refresh_loop(self) -> None:
        try:
            with self.db.connection() as conn:
                while True:
                    snap = snapshot(conn)
                    self.snapshots.append(snap)
                    self.view.value = snapshot_html(snap)
                    if self.halt.wait(self.interval):
                        return
        except Exception as exc:  # shown, and raised again by wait()  # noqa: BLE001
            self.failed(exc)

    def failed(self, exc: BaseException) -> None:
        self.error = exc
        self.status.value = error_html(exc)
        self.start_button.disabled, self.stop_button.disabled = False, True

    def stop(self) -> None:
        self.halt.set()
        if self.thread is not None:
            self.thread.join()
        try:
            if self.load is not None:
                self.load.stop()
        except Exception as exc:  # noqa: BLE001
            self.failed(exc)
            return
        self.start_button.disabled, self.stop_button.disabled = False, True
        done = self.load.done if self.load else 0
        self.status.value = f"stopped: {done:,} jobs done, {len(self.snapshots)} refreshes"

    def wait(self) -> list[Snapshot]:
        if self.error is not None:
            raise self.error
        return self.snapshots


def autovacuum_html(result: AutovacuumComparison) -> str:
    """The autovacuum lab's result: its comparison rows (the guess, this server and
    the guide's rule); or why it skipped. Its chart is `autovacuum_chart`."""
    if result.skipped:
        return f"<p class='pgq-skipped'>Skipped: {escape(result.skipped)}</p>"
    return comparison_html(result.comparison(), version=result.server_version)


def autovacuum_chart(result: AutovacuumComparison) -> list:
    """n_dead_tup over time under each setting; nothing when the run skipped."""
    return [] if result.skipped else [result.chart()]


class AutovacuumLab(ExperimentPanel):
    """Lesson 10: the same churn on jobs with the server's autovacuum defaults and
    with the guide's per-table settings, autovacuum_naptime at the lab's 1 s."""

    def __init__(
        self, db: Database, *, base_rows: int = 100_000, churn_s: float = 15, jobs_per_tick: int = 200
    ):
        super().__init__(
            partial(
                operations.autovacuum_per_table,
                db,
                base_rows=base_rows,
                churn_s=churn_s,
                jobs_per_tick=jobs_per_tick,
            ),
            autovacuum_html,
            charts=autovacuum_chart,
            guess_label="Peak n_dead_tup with the defaults?",
        )
