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

from .. import tables
from ..databases import Database
from ..experiments import bloat
from ..tables import Column, Table
from .common import (
    chart_box,
    comparison_html,
    error_html,
    guess_field,
    result_html,
    sessions_html,
    show_charts,
    styled,
)
from .lab import ExperimentPanel, Lab, ProgressRelay, button, progress_bar, show_progress, wrapping_row

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
            guess_unit="MB",
            guess_plausible=(0, 1_000),
        )


def transaction_html(lab: bloat.BloatLab) -> str:
    if lab.transaction_open:
        text = f"an idle REPEATABLE READ transaction is open (pid {lab.idle.pid})"
        return f'<span data-open="yes" style="color:#b26a00">{escape(text)}</span>'
    return '<span data-open="no">no idle transaction open</span>'


def holders_html(rows: list[dict]) -> str:
    """The guide's activity query, as a table."""
    return sessions_html(rows, css="pgq-holder")


STEP_COLUMNS = [
    Column("step"),
    Column("empty claim", tables.COUNT, unit="buffer"),
    Column("claim took", tables.MILLISECONDS),
    Column("drain took", tables.SECONDS),
    Column("VACUUM removed", tables.COUNT),
    Column("dead, not yet removable", tables.COUNT),
]


def steps_html(lab: bloat.BloatLab, guess: float | None = None) -> str:
    """The lab's steps as drawn, then its report's rows beside guide #18 (the chart is shown apart)."""
    if not lab.steps:
        return ""
    rows = [
        [
            f"{n}. {s.label}",
            s.claim.buffers,
            s.claim.ms,
            s.drain and s.drain.elapsed_s,
            s.vacuum and s.vacuum.removed,
            s.vacuum and s.vacuum.not_removable,
        ]
        for n, s in enumerate(lab.steps, start=1)
    ]
    # close padding: six columns in an 800 px window leave the step names room for two lines, not four
    attrs = [{"class": "pgq-step"}] * len(rows)
    steps = Table(STEP_COLUMNS, rows, css="pgq-steps pgq-compact", row_attrs=attrs)
    report = lab.report(guess)
    compared = comparison_html(report.comparison(), version=report.server_version)
    guide = f"<p>{escape('; '.join(line.strip() for line in report.footer()))}</p>"
    return f"{steps.html()}{compared}{guide}"


def next_step(steps: list[bloat.DrainStep], transaction_open: bool) -> str | None:
    """What to press next in the idle-transaction lab, or None once VACUUM has
    run both with the transaction open and, later, with it ended."""
    actions = [(s.action, s.transaction_open) for s in steps]
    if ("drain", True) not in actions:  # no dead versions made under the transaction: no story yet
        if transaction_open:
            return "Press Drain: the drain leaves dead row versions behind."
        return "Press Open an idle transaction, then Drain."
    drained = actions.index(("drain", True))
    held = [i for i, a in enumerate(actions) if a == ("vacuum", True) and i > drained]
    if held and ("vacuum", False) in actions[held[-1] :]:
        return None
    if held:
        return "Press End it, then VACUUM (VERBOSE) again." if transaction_open else "Press VACUUM again."
    if not transaction_open:
        return "Press Open an idle transaction, then Drain."
    return "Press VACUUM (VERBOSE): can it remove them while the transaction is open?"


class IdleLab(Lab):
    """Open an idle transaction, drain, VACUUM, end it, VACUUM again: done
    once VACUUM has run on each side of the end."""

    def __init__(self, db: Database, jobs: int = 100_000):
        self.lab = bloat.BloatLab(db, jobs=jobs)
        self.db = db
        self.guess = guess_field(GUESS_LABEL, unit="buffers", plausible=(0, 100_000))
        self.run_guess: float | None = None  # the guess when the last step started
        self.opened_at = 0  # the story starts again at each open: the steps since the last one count
        self.open_button = button("Open an idle transaction", "pgq-open", icon="folder-open")
        self.close_button = button("End it", "pgq-close", icon="times", disabled=True)
        self.drain_button = button(f"Drain {jobs:,} jobs", "pgq-drain", button_style="primary", icon="play")
        self.vacuum_button = button("VACUUM (VERBOSE)", "pgq-vacuum")
        self.transaction = styled(W.HTML(value=transaction_html(self.lab)), "pgq-transaction")
        self.holders = styled(W.HTML(value=""), "pgq-holders")
        self.progress = progress_bar("drain")
        self.output = styled(W.HTML(value=""), "pgq-result")
        self.chart = chart_box()
        self.open_button.on_click(lambda _: self._open())
        self.close_button.on_click(lambda _: self._close())
        self.drain_button.on_click(lambda _: self._start(self._drain, "draining…"))
        self.vacuum_button.on_click(lambda _: self._start(self._vacuum, "VACUUM running…"))
        status = styled(W.HTML(), "pgq-status")
        super().__init__(
            [
                self.guess,
                wrapping_row(self.open_button, self.close_button),
                self.transaction,
                wrapping_row(self.drain_button, self.vacuum_button, self.progress),
                status,
                self.output,
                self.chart,
                W.HTML("<b>Who holds a snapshot</b> (the guide's activity query)"),
                self.holders,
            ],
            css_class="pgq-idle-lab",
            status=status,
        )
        self._show_holders()
        self._next("Type your guess.")

    @property
    def buttons(self) -> list[W.Button]:
        return [self.drain_button, self.vacuum_button]

    @property
    def steps(self) -> list[bloat.DrainStep]:
        return self.lab.steps

    def report(self) -> bloat.HeldBack:
        """The lab's result so far, with the guess read when the last step started."""
        return self.lab.report(self.run_guess)

    def _next(self, text: str) -> None:
        """Say what happened and what to press next; done once the story is complete."""
        hint = next_step(self.lab.steps[self.opened_at :], self.lab.transaction_open)
        if hint is None:
            self.finish(f"done: {text} VACUUM has run with the transaction open and after it ended.")
        else:
            self.say(f"{text} Next: {hint}")

    def _show_holders(self) -> None:
        self.transaction.value = transaction_html(self.lab)
        self.holders.value = holders_html(bloat.holders(self.db))

    def _open(self) -> None:
        try:
            self.lab.open_transaction()
            self.opened_at = len(self.lab.steps)
        except Exception as exc:  # shown, not raised: a click has no caller
            self.say(error_html(exc))
            return
        finally:
            self.open_button.disabled, self.close_button.disabled = (
                self.lab.transaction_open,
                not self.lab.transaction_open,
            )
            self._show_holders()
        self._next("The idle transaction is open.")

    def _close(self) -> None:
        self.lab.end_transaction()
        self.open_button.disabled, self.close_button.disabled = False, True
        self._show_holders()
        self._next("The idle transaction has ended.")

    def _start(self, fn, message: str) -> None:
        self.run_guess = self.guess.value  # read now, on the caller's thread
        self.start_work(fn, message)

    def _drain(self, stop: threading.Event) -> bloat.DrainStep:
        with ProgressRelay(lambda done, total: show_progress(self.progress, done, total)) as relay:
            return self.lab.drain(progress=relay.update, stop=stop)

    def _vacuum(self, stop: threading.Event) -> bloat.DrainStep:
        return self.lab.vacuum()  # one statement: nothing to stop halfway

    def show(self, step: bloat.DrainStep) -> None:
        self.output.value = steps_html(self.lab, self.run_guess)
        show_charts(self.chart, [self.lab.chart()])
        self._show_holders()
        self._next(f"{escape(step.label)}: its row is below.")

    def wait(self, timeout: float | None = None) -> Any:
        return self.runner.wait(timeout)

    def release(self) -> None:
        self.lab.close()
