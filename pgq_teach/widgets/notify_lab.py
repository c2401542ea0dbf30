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
data-rule and data-holds="yes"/"no", then pgq-verdict).
"""

from __future__ import annotations

from functools import partial
from html import escape

import ipywidgets as W

from .. import tables
from ..databases import Database
from ..experiments import wakeups
from ..tables import Markup, Table
from .common import result_html, styled
from .lab import ExperimentPanel, button


def css_name(rule: str) -> str:
    return "pgq-rule-" + rule.replace(" ", "-")


def rules_html(result: wakeups.RulesResult) -> str:
    """The result's rows (question, observed, expected), each with its verdict."""
    pairs = list(zip(result.rules, result.comparison(), strict=True))
    rows = [
        [rule.name, question, expected, observed, "holds" if rule.holds else Markup("<b>does not hold</b>")]
        for rule, (question, _, observed, expected) in pairs
    ]
    attrs = [
        {"class": "pgq-rule", "data-rule": rule.name, "data-holds": "yes" if rule.holds else "no"}
        for rule, _ in pairs
    ]
    table = Table(
        tables.columns("rule", "question", "expected", "observed", "verdict"), rows, row_attrs=attrs
    )
    verdict = rules_verdict(result)
    note = escape("; ".join(line.strip() for line in result.footer()))
    return f"{table.html()}<p class='pgq-verdict'><b>{verdict}</b></p><p>{note}</p>"


def rules_verdict(result: wakeups.RulesResult) -> str:
    """What the rules run say, and no more: 'every rule held' only once every rule has run."""
    ran = [r.name for r in result.rules]
    if not ran:
        return "no rule ran: the run was stopped before the first"
    if not result.all_hold:
        return "a rule did not hold: see above"
    if len(ran) == len(wakeups.RULES):
        return "every rule held"
    held = f"the rule {ran[0]} held" if len(ran) == 1 else f"the {len(ran)} rules run held"
    left = [name for name in wakeups.RULES if name not in ran]
    return f"{held}; not run this time: {', '.join(left)}"


class NotifyRulesLab(ExperimentPanel):
    """The rules lab: an ExperimentPanel whose Run runs every rule, beside one
    button per rule."""

    def __init__(self, db: Database):
        self.db = db
        self.selected: list[str] | None = None  # the rules the next run runs; None: all
        self.tried: set[str] = set()  # every rule run so far, in any run
        self.rule_buttons = {
            name: styled(button(name), "pgq-rule-button", css_name(name)) for name in wakeups.RULES
        }
        for name, rule_button in self.rule_buttons.items():
            rule_button.on_click(lambda _, name=name: self.start([name]))
        super().__init__(
            self.run_selected,
            rules_html,
            settings=[W.HBox(list(self.rule_buttons.values()))],
            css_class="pgq-notify-lab",
        )
        self.all_button = styled(self.run_button, "pgq-run-all")
        self.all_button.description = "Run all rules"
        self.say("Press a rule's button to test that rule, or Run all rules.")

    @property
    def buttons(self) -> list[W.Button]:
        """Every rule's button and Run all rules: usable exactly when no run is going."""
        return list(self.rule_buttons.values()) + [self.all_button]

    def start(self, names: list[str] | None = None) -> bool:
        """Run the named rules (all when None), unless a run is going."""
        if self.runner.busy:
            return False
        self.selected = names
        return super().start()

    def run_selected(self, *, progress, stop, guess=None) -> wakeups.RulesResult:
        return wakeups.notify_rules(self.db, self.selected, progress=progress, stop=stop)

    def show(self, result: wakeups.RulesResult) -> None:
        """The rows, then a status line from what has run: no guess or setting to change here."""
        self.output.value = self.render(result)
        self.progress.value = self.progress.max
        self.tried |= {r.name for r in result.rules}
        left = [name for name in wakeups.RULES if name not in self.tried]
        ran = "stopped early: the rules run so far are below" if result.stopped else "done: see below"
        if left:
            self.finish(f"{ran}. Not run yet: {', '.join(left)}; press a rule's button, or Run all rules.")
        else:
            self.finish(f"{ran}. Every rule has run; press a rule's button to run it again.")


def one_chart(result: wakeups.LatencyResult | wakeups.CostResult) -> list:
    """Pickup latency beside guide #13, or NOTIFY's cost: the result's one chart."""
    return [result.chart()]


class LatencyLab(ExperimentPanel):
    """Guide #13: one idle Worker, jobs enqueued with and without NOTIFY, poll `poll_s`."""

    def __init__(self, db: Database, *, jobs: int = 12, poll_s: float = 1.0, seed: int = 7):
        super().__init__(
            partial(wakeups.pickup_latency, db, jobs=jobs, poll_s=poll_s, seed=seed),
            result_html,
            charts=one_chart,
            guess_label=f"Median pickup latency without NOTIFY, ms (poll {poll_s:g} s)?",
            guess_unit="ms",
            guess_plausible=(0, poll_s * 1000),
        )


class NotifyCostLab(ExperimentPanel):
    """What NOTIFY costs producers: per job, per transaction, none."""

    def __init__(
        self,
        db: Database,
        *,
        producers: int = 8,
        transactions: int = 50,
        per_transaction: int = 10,
        rounds: int = 2,
    ):
        super().__init__(
            partial(
                wakeups.notify_cost,
                db,
                producers=producers,
                transactions=transactions,
                per_transaction=per_transaction,
                rounds=rounds,
            ),
            result_html,
            charts=one_chart,
            guess_label="Time with one NOTIFY per transaction, as a fraction of one per job (1 = the same)?",
            guess_unit="times",
            guess_plausible=(0, 2),
        )
