"""The guide's five signals to move, as a checklist: tick what is true of
your system, read the recommendation and its reasons (including "stay").
The ticks are kept in the learner's file `switch-checklist`."""

from __future__ import annotations

from html import escape

import ipywidgets as W

from ..experiments.switching import SIGNALS, Recommendation, recommend
from ..infra import learner
from .common import styled

FILE = "switch-checklist"
COLOURS = {"stay": "#2e7d32", "fix first": "#b26a00", "move": "#b00020"}


def recommendation_html(rec: Recommendation) -> str:
    items = "".join(f"<li>{escape(r)}</li>" for r in rec.reasons)
    return (
        f"<div class='pgq-recommendation' data-verdict='{escape(rec.verdict)}'>"
        f"<b style='color:{COLOURS[rec.verdict]}'>Recommendation: {escape(rec.verdict)}</b>"
        f"<ul>{items}</ul></div>"
    )


class SwitchChecklist(W.VBox):
    """Headless: set `checklist.boxes["fan_out"].value = True`, read `checklist.recommendation`."""

    def __init__(self, *, file: str = FILE):
        self.file = file
        saved = learner.load(file)
        ticked = set(saved.get("signals", []))
        self.boxes = {
            key: styled(
                W.Checkbox(
                    value=key in ticked, description=text, indent=False, layout=W.Layout(width="auto")
                ),
                f"pgq-signal-{key.replace('_', '-')}",
            )
            for key, text in SIGNALS.items()
        }
        self.fixes = W.Checkbox(
            value=bool(saved.get("fixes_tried")),
            indent=False,
            layout=W.Layout(width="auto"),
            description="We already ended long transactions, kept the partial indexes, tuned "
            "autovacuum and pooled the claims.",
        )
        self.output = styled(W.HTML(), "pgq-result")
        for box in [*self.boxes.values(), self.fixes]:
            box.observe(lambda _: self.changed(), names="value")
        super().__init__(
            [W.HTML("<b>Which are true of your system?</b>"), *self.boxes.values(), self.fixes, self.output]
        )
        styled(self, "pgq-switch-checklist")
        self.recommendation = self.show()

    def ticked(self) -> set[str]:
        return {k for k, b in self.boxes.items() if b.value}

    def show(self) -> Recommendation:
        self.recommendation = recommend(self.ticked(), fixes_tried=self.fixes.value)
        self.output.value = recommendation_html(self.recommendation)
        return self.recommendation

    def changed(self) -> None:
        learner.save(self.file, {"signals": sorted(self.ticked()), "fixes_tried": self.fixes.value})
        self.show()
