"""Lesson 09's idle-transaction lab: open a forgotten REPEATABLE READ
transaction, drain, VACUUM, end it, VACUUM again, and watch what one empty
claim reads after each step. The logic is `experiments.bloat.BloatLab`; this
module wires buttons to it and turns its steps into HTML.

Headless (a notebook, a test):

    lab = IdleLab(db)
    lab.open_button.click()                    # the transaction is open at once
    lab.drain_button.click(); lab.wait()       # a drain runs on a thread
    lab.vacuum_button.click(); lab.wait()
    lab.close_button.click()
    lab.vacuum_button.click(); lab.wait()
    lab.lab.steps                              # what each step measured
    lab.report()                               # the result so far, with the guess

CSS classes for a browser: pgq-idle-lab, pgq-open, pgq-close, pgq-drain,
pgq-vacuum, pgq-transaction (data-open="yes"/"no"), pgq-holders, pgq-status,
pgq-result (one row per step, class pgq-step).
"""

from __future__ import annotations

import threading
from functools import partial
from html import escape
from typing import Any

import ipywidgets as W

from ..databases import Database
from ..experiments import bloat
from .common import (
    ExperimentPanel,
    ProgressRelay,
    Runner,
    chart_box,
    comparison_html,
    error_html,
    guess_field,
    result_html,
    show_charts,
    styled,
)

GUESS_LABEL = "How many buffers will an empty claim read while the idle transaction is open?"


def drain_charts(result: bloat.DrainResult) -> list:
    """The drain beside guide #17: the table's size, then its dead row versions."""
    return [result.size_chart(), result.dead_chart()]


class DrainLab(ExperimentPanel):
    """Guide #17: drain `jobs` jobs through claim and done, sampling the table's
    size and dead row versions; the rate is recorded for later lessons."""

    def __init__(self, db: Database, *, jobs: int = 100_000, batch: int = 100):
        super().__init__(
            partial(bloat.drain, db, jobs=jobs, batch=batch, record=True),
            result_html,
            charts=drain_charts,
            guess_label=f"How many MB will the jobs table be after draining {jobs:,} jobs?",
        )


def transaction_html(lab: bloat.BloatLab) -> str:
    if lab.transaction_open:
        text = f"an idle REPEATABLE READ transaction is open (pid {lab.idle.pid})"
        return f'<span data-open="yes" style="color:#b26a00">{escape(text)}</span>'
    return '<span data-open="no">no idle transaction open</span>'


def holders_html(rows: list[dict]) -> str:
    """The guide's activity query, as a table."""
    if not rows:
        return "<p>No session holds a transaction id or a snapshot.</p>"
    head = "".join(f"<th>{escape(k)}</th>" for k in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in row.values()) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def steps_html(lab: bloat.BloatLab, guess: float | None = None) -> str:
    """The lab's steps as drawn, then its report's rows beside guide #18 (the chart is shown apart)."""
    if not lab.steps:
        return ""
    head = (
        "<tr><th>step</th><th>empty claim, buffers</th><th>ms</th><th>drain, s</th>"
        "<th>VACUUM removed</th><th>dead, not yet removable</th></tr>"
    )

    def number(value: Any, fmt: str = "{:,}") -> str:
        return "–" if value is None else fmt.format(value)

    rows = "".join(
        f"<tr class='pgq-step'><td>{n}. {escape(s.label)}</td><td>{s.claim.buffers:,}</td>"
        f"<td>{s.claim.ms:.2f}</td><td>{number(s.drain and s.drain.elapsed_s, '{:.2f}')}</td>"
        f"<td>{number(s.vacuum and s.vacuum.removed)}</td>"
        f"<td>{number(s.vacuum and s.vacuum.not_removable)}</td></tr>"
        for n, s in enumerate(lab.steps, start=1)
    )
    report = lab.report(guess)
    compared = comparison_html(report.comparison(), version=report.server_version)
    guide = f"<p>{escape('; '.join(line.strip() for line in report.footer()))}</p>"
    return f"<table>{head}{rows}</table>{compared}{guide}"


class IdleLab(W.VBox):
    def __init__(self, db: Database, jobs: int = 100_000):
        self.lab = bloat.BloatLab(db, jobs=jobs)
        self.db = db
        self.guess = guess_field(GUESS_LABEL)
        self.run_guess: float | None = None  # the guess when the last step started
        wide = W.Layout(width="auto")
        self.open_button = styled(
            W.Button(description="Open an idle transaction", icon="folder-open", layout=wide), "pgq-open"
        )
        self.close_button = styled(
            W.Button(description="End it", icon="times", disabled=True, layout=wide), "pgq-close"
        )
        self.drain_button = styled(
            W.Button(description=f"Drain {jobs:,} jobs", button_style="primary", icon="play", layout=wide),
            "pgq-drain",
        )
        self.vacuum_button = styled(W.Button(description="VACUUM (VERBOSE)", layout=wide), "pgq-vacuum")
        self.transaction = styled(W.HTML(value=transaction_html(self.lab)), "pgq-transaction")
        self.holders = styled(W.HTML(value=""), "pgq-holders")
        self.progress = W.IntProgress(value=0, min=0, max=jobs, description="drain")
        self.status = styled(W.HTML(value=""), "pgq-status")
        self.output = styled(W.HTML(value=""), "pgq-result")
        self.chart = chart_box()
        self.runner = Runner(self._done, self._failed)
        self.open_button.on_click(lambda _: self._open())
        self.close_button.on_click(lambda _: self._close())
        self.drain_button.on_click(lambda _: self._start(self._drain, "draining…"))
        self.vacuum_button.on_click(lambda _: self._start(self._vacuum, "VACUUM running…"))
        super().__init__(
            [
                self.guess,
                W.HBox([self.open_button, self.close_button]),
                self.transaction,
                W.HBox([self.drain_button, self.vacuum_button, self.progress]),
                self.status,
                self.output,
                self.chart,
                W.HTML("<b>Who holds a snapshot</b> (the guide's activity query)"),
                self.holders,
            ]
        )
        self.add_class("pgq-idle-lab")
        self._show_holders()

    @property
    def steps(self) -> list[bloat.DrainStep]:
        return self.lab.steps

    def report(self) -> bloat.HeldBack:
        """The lab's result so far, with the guess read when the last step started."""
        return self.lab.report(self.run_guess)

    def _show_holders(self) -> None:
        self.transaction.value = transaction_html(self.lab)
        self.holders.value = holders_html(bloat.holders(self.db))

    def _open(self) -> None:
        try:
            self.lab.open_transaction()
        except Exception as exc:  # shown, not raised: a click has no caller
            self.status.value = error_html(exc)
        self.open_button.disabled, self.close_button.disabled = (
            self.lab.transaction_open,
            not self.lab.transaction_open,
        )
        self._show_holders()

    def _close(self) -> None:
        self.lab.end_transaction()
        self.open_button.disabled, self.close_button.disabled = False, True
        self._show_holders()

    def _start(self, fn, message: str) -> None:
        if self.runner.busy:
            return
        self.drain_button.disabled = self.vacuum_button.disabled = True
        self.status.value = message
        self.run_guess = self.guess.value  # read now, on the caller's thread
        self.runner.start(fn)

    def _drain(self, stop: threading.Event) -> bloat.DrainStep:
        with ProgressRelay(self._progress) as relay:
            return self.lab.drain(progress=relay.update, stop=stop)

    def _vacuum(self, stop: threading.Event) -> bloat.DrainStep:
        return self.lab.vacuum()  # one statement: nothing to stop halfway

    def _progress(self, done: int, total: int) -> None:
        self.progress.max = max(total, 1)
        self.progress.value = min(done, total)

    def _done(self, step: bloat.DrainStep) -> None:
        self.output.value = steps_html(self.lab, self.run_guess)
        show_charts(self.chart, [self.lab.chart()])
        self.status.value = f"done: {escape(step.label)}"
        self.drain_button.disabled = self.vacuum_button.disabled = False
        self._show_holders()

    def _failed(self, exc: BaseException) -> None:
        self.status.value = error_html(exc)
        self.drain_button.disabled = self.vacuum_button.disabled = False

    def wait(self, timeout: float | None = None) -> Any:
        return self.runner.wait(timeout)

    def close(self) -> None:
        self.lab.close()
        super().close()
