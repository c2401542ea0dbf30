"""The operations dashboard: the guide's three monitoring queries, refreshed
every second while a background load runs. Start and Stop; one thread
refreshes the tables and only sets an HTML value (it never prints)."""

from __future__ import annotations

import threading
from functools import partial
from html import escape

import ipywidgets as W

from .. import tables
from ..databases import Database
from ..experiments import operations
from ..experiments.operations import AutovacuumComparison, Load, Snapshot, snapshot
from ..tables import Column, Markup, Table
from .common import comparison_html, error_html, sessions_html, styled
from .lab import ExperimentPanel, Lab, button, wrapping_row


def snapshot_html(snap: Snapshot) -> str:
    st = snap.stats
    counts = Table(
        [Column("status"), Column("jobs", tables.COUNT)],
        # ~: an estimate, from the planner's statistics on a big table
        [[k, f"~{v:,}" if k in st.estimated else v] for k, v in st.counts.items()],
    )
    jobs_table = Table(
        [Column("statistic"), Column("value", tables.COUNT)],
        [
            ["n_live_tup", st.live_tuples or 0],
            [Markup("n_dead_tup"), Markup(f"<span class='pgq-dead'>{st.dead_tuples or 0:,}</span>")],
            ["last_autovacuum", st.last_autovacuum.strftime("%H:%M:%S") if st.last_autovacuum else "never"],
            ["autovacuum_count", st.autovacuum_count or 0],
        ],
    )
    sessions = [s for s in st.sessions if s.get("xact_age") is not None]
    return (
        "<div class='pgq-dash' style='display:flex;gap:24px;flex-wrap:wrap'>"
        f"<div><b>jobs by status</b>{counts.html()}"
        f"oldest due wait: <span class='pgq-oldest-wait'>{tables.duration(st.oldest_due_wait)}</span></div>"
        f"<div><b>sessions holding a transaction ID or snapshot</b>{sessions_html(sessions)}</div>"
        f"<div><b>jobs table</b>{jobs_table.html()}</div></div>"
    )


class Dashboard(Lab):
    """Headless: `dash.start_button.click()`, wait, `dash.stop_button.click()`,
    then `dash.wait()` and read `dash.snapshots`. Done once stopped."""

    def __init__(self, db: Database, *, interval: float = 1.0, rate: int = 200, workers: int = 2):
        self.db, self.interval = db, interval
        self.stuck = W.Checkbox(
            value=True,
            description="include a forgotten REPEATABLE READ transaction",
            indent=False,
            layout=W.Layout(width="auto"),
        )
        box = W.Layout(width="16em")  # in a row that wraps, a box would stretch to the row's width
        self.rate = W.BoundedIntText(value=rate, min=1, max=5_000, description="jobs/s", layout=box)
        self.workers = W.BoundedIntText(value=workers, min=1, max=16, description="workers", layout=box)
        self.start_button = button("Start", button_style="primary", icon="play")
        self.stop_button = button("Stop", icon="stop", disabled=True)
        self.view = styled(W.HTML(), "pgq-result")
        self.snapshots: list[Snapshot] = []
        self.load: Load | None = None
        self.start_button.on_click(lambda _: self.start())
        self.stop_button.on_click(lambda _: self.stop())
        status = styled(W.HTML(), "pgq-status")
        super().__init__(
            [
                wrapping_row(self.rate, self.workers, self.stuck),  # at 800 px the checkbox's label was cut
                wrapping_row(self.start_button, self.stop_button),
                status,
                self.view,
            ],
            css_class="pgq-dashboard",
            status=status,
            next_step="Press Start: a background load runs and the tables refresh every second.",
        )

    @property
    def buttons(self) -> list[W.Widget]:
        return [self.start_button, self.rate, self.workers, self.stuck]

    @property
    def error(self) -> BaseException | None:
        return self.runner.error

    def start(self) -> None:
        if self.closed or self.busy:
            return
        self.snapshots = []
        try:
            self.load = Load(
                self.db, rate=self.rate.value, workers=self.workers.value, stuck_session=self.stuck.value
            )
            self.load.start()
        except Exception as exc:  # shown where the learner looks; a click has no caller
            self.say(error_html(exc))
            return
        self.start_work(self.refresh_loop, "running: refreshing every second. Press Stop to end the load.")

    def refresh_loop(self, halt: threading.Event) -> list[Snapshot]:
        """Read the three queries every `interval` until Stop; the load stops with it."""
        try:
            with self.db.connection() as conn:
                while True:
                    snap = snapshot(conn)
                    self.snapshots.append(snap)
                    self.view.value = snapshot_html(snap)
                    if halt.wait(self.interval):
                        return self.snapshots
        finally:
            if self.load is not None:
                self.load.stop()

    def show(self, snapshots: list[Snapshot]) -> None:
        done = self.load.done if self.load else 0
        self.finish(f"stopped: {done:,} jobs done, {len(snapshots)} refreshes. Press Start to run it again.")

    def wait(self, timeout: float | None = None) -> list[Snapshot]:
        """Wait until the refreshing has stopped; return the snapshots or raise its error."""
        self.runner.wait(timeout)
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
            guess_unit="dead rows",
            guess_plausible=(0, 1_000_000),
        )
