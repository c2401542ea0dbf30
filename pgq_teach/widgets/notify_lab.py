"""Lesson 07's NOTIFY rules lab: one button per rule of guide #12 (those
lesson 00 does not already check) and one for all of them. Each run opens a
listening session of its own and a sender, on a lab channel, and shows what
was expected, what arrived, and whether the rule held. The logic is
`experiments.wakeups`; this module wires buttons to it.

Headless (a notebook, a test):

    lab = NotifyRulesLab(db)
    lab.all_button.click(); lab.wait()
    lab.result.all_hold

CSS classes for a browser: pgq-notify-lab, pgq-rule-button (one per rule,
with pgq-rule-<name> where <name> has dashes for spaces), pgq-run-all,
pgq-status, pgq-result (one row per rule run, class pgq-rule, with
data-rule and data-holds="yes"/"no").
"""

from __future__ import annotations

from html import escape
from typing import Any

import ipywidgets as W

from ..databases import Database
from ..experiments import wakeups
from .common import Runner, comparison_html, error_html


def css_name(rule: str) -> str:
    return "pgq-rule-" + rule.replace(" ", "-")


def rules_html(result: wakeups.RulesResult) -> str:
    head = "<tr><th>rule</th><th>question</th><th>expected</th><th>observed</th><th>verdict</th></tr>"
    rows = "".join(
        f"<tr class='pgq-rule' data-rule='{escape(r.name)}' data-holds='{'yes' if r.holds else 'no'}'>"
        f"<td>{escape(r.name)}</td><td>{escape(r.question)}</td><td>{escape(r.expected)}</td>"
        f"<td>{escape(r.observed)}</td><td>{'holds' if r.holds else '<b>does not hold</b>'}</td></tr>"
        for r in result.rules
    )
    note = f"<p>{escape(str(result.guide))}; this server: PostgreSQL {escape(result.server_version)}</p>"
    return f"<table>{head}{rows}</table>{note}"


class NotifyRulesLab(W.VBox):
    def __init__(self, db: Database):
        self.db = db
        self.rule_buttons = {name: W.Button(description=name) for name in wakeups.RULES}
        for name, button in self.rule_buttons.items():
            button.add_class("pgq-rule-button")
            button.add_class(css_name(name))
            button.on_click(lambda _, name=name: self.start([name]))
        self.all_button = W.Button(description="Run all rules", button_style="primary", icon="play")
        self.all_button.add_class("pgq-run-all")
        self.all_button.on_click(lambda _: self.start(None))
        self.status = W.HTML(value="")
        self.status.add_class("pgq-status")
        self.output = W.HTML(value="")
        self.output.add_class("pgq-result")
        self.runner = Runner(self._done, self._failed)
        super().__init__(
            [W.HBox(list(self.rule_buttons.values()) + [self.all_button]), self.status, self.output]
        )
        self.add_class("pgq-notify-lab")

    @property
    def buttons(self) -> list[W.Button]:
        return list(self.rule_buttons.values()) + [self.all_button]

    @property
    def result(self) -> wakeups.RulesResult | None:
        return self.runner.result

    def start(self, names: list[str] | None) -> bool:
        if self.runner.busy:
            return False
        for button in self.buttons:
            button.disabled = True
        self.status.value = "listening…"
        return self.runner.start(lambda stop: wakeups.notify_rules(self.db, names, stop=stop))

    def _finish(self) -> None:
        for button in self.buttons:
            button.disabled = False

    def _done(self, result: wakeups.RulesResult) -> None:
        self.output.value = rules_html(result)
        self.status.value = "every rule held" if result.all_hold else "a rule did not hold: see below"
        self._finish()

    def _failed(self, exc: BaseException) -> None:
        self.status.value = error_html(exc)
        self._finish()

    def wait(self, timeout: float | None = None) -> Any:
        return self.runner.wait(timeout)


def latency_html(result: wakeups.LatencyResult, guess: int | None = None) -> str:
    """Pickup latency beside guide #13; the guess is the median without NOTIFY, in ms."""
    result.guess = guess or None
    g = result.guide.values
    rows = [
        ("with NOTIFY, median ms", None, result.median_ms(True), f"within {g['notify_s'] * 1000:.0f}"),
        (
            "without NOTIFY, median ms",
            result.guess,
            result.median_ms(False),
            f"up to the poll: {g['poll_s']:g} s (here {result.poll_s:g} s)",
        ),
        ("without NOTIFY, longest ms", None, result.max_ms(False), None),
    ]
    return (
        comparison_html(rows, version=result.server_version)
        + result.chart_svg()
        + f"<pre class='pgq-summary'>{escape(result.summary())}</pre>"
    )


def cost_html(result: wakeups.CostResult, guess: int | None = None) -> str:
    result.guess = guess or None
    return result.chart_svg() + f"<pre class='pgq-summary'>{escape(result.summary())}</pre>"
