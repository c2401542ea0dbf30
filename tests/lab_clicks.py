"""Random clicks on a lab's model, for tests/test_lab_clicks.py: its buttons pressed in an
order a seed picks, Stop at a moment the seed picks, and what each press left on the
status line and in the result, recorded for the test to judge.

A press calls the button's handlers directly (ipywidgets' `Button.click` catches a
handler's exception and only logs it), so an exception a press raises reaches the test.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from html import unescape

import ipywidgets as W

from pgq_teach.widgets.common import result_html
from pgq_teach.widgets.lab import Lab

SETTLE_S = 180  # a generous deadline for one run to end after its press (or its Stop)


def text(html: str) -> str:
    """What a learner reads in a widget's HTML: tags dropped, entities decoded, spaces joined."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def buttons(widget: W.Widget) -> Iterator[W.Button]:
    """Every button under `widget`, in the order the learner sees them."""
    if isinstance(widget, W.Button):
        yield widget
    for child in getattr(widget, "children", ()):
        yield from buttons(child)


def views(widget: W.Widget) -> Iterator[str]:
    """The HTML of every HTML widget under `widget`: what the lab shows as text and tables."""
    if isinstance(widget, W.HTML):
        yield widget.value
    for child in getattr(widget, "children", ()):
        yield from views(child)


SUMMARY_BLOCK = re.compile(r"class=['\"][^'\"]*\bpgq-summary\b(?!-)")
VERDICT = re.compile(r"<p class=['\"]pgq-verdict['\"]>(.*?)</p>", re.S)


def repeated_views(widget: W.Widget) -> list[str]:
    """What a lab shows twice (issue 45, "one view per result"): a text summary under its
    table (a `pgq-summary` block or a `<pre>`), a comparison table twice, a verdict twice."""
    shown = list(views(widget))
    found = [f"a text summary block: {text(v)[:80]}" for v in shown if SUMMARY_BLOCK.search(v) or "<pre" in v]
    tables = [t for v in shown for t in re.findall(r"<table[^>]*pgq-compare.*?</table>", v, re.S)]
    found += [f"a comparison table shown twice: {text(t)[:80]}" for t in set(tables) if tables.count(t) > 1]
    verdicts = [text(m) for v in shown for m in VERDICT.findall(v)]
    found += [f"a verdict shown twice: {v[:80]}" for v in set(verdicts) if verdicts.count(v) > 1]
    return found


def notes_shown(lab: Lab) -> dict[str, int]:
    """How many times the lab's views show each of its result's notes (`Result.notes`), for a
    lab that shows its result with `result_html`: once each, under the table (issue 45, "one view
    per result"). Empty for a lab that draws its result itself (the race lab), or none yet."""
    try:
        drawn = result_html(lab.result)
    except Exception:  # noqa: BLE001 - no result, or one result_html does not draw (no report())
        return {}
    html = list(views(lab))
    if not any(drawn in v for v in html):
        return {}
    shown = " ".join(text(v) for v in html)
    return {line: shown.count(" ".join(line.split())) for line in lab.result.notes()}


def press(control: W.Button) -> None:
    """What a click does, with any exception raised here rather than logged."""
    for handler in control._click_handlers.callbacks:
        handler(control)


@dataclass
class Press:
    """One press and what it left: the button, the status line and the result after it."""

    label: str
    status: str = ""
    error: bool = False  # the status line held the lab's error box (class pgq-error)
    result: object = None
    repeated: list[str] = field(default_factory=list)  # what the lab's views showed twice
    stop_s: float | None = None  # seconds from Stop to the run's end, when Stop was pressed
    notes_shown: dict[str, int] = field(default_factory=dict)  # each of the result's notes: times shown


@dataclass
class Session:
    lab: Lab
    seed: int
    presses: list[Press] = field(default_factory=list)

    def settle(self) -> None:
        """Wait for the lab's run (and a fencing lab's Play) to end, within SETTLE_S,
        raising the run's error."""
        self.lab.wait(SETTLE_S)
        wait_play = getattr(self.lab, "wait_play", None)
        if wait_play is not None:
            wait_play(SETTLE_S)


def click_around(
    lab: Lab,
    seed: int,
    presses: int = 5,
    stop_chance: float = 0.6,
    stop_after: tuple[float, float] = (0, 1.5),
) -> Session:
    """Press `presses` of the lab's enabled buttons (not Stop) in an order `seed` picks; when
    a press starts a run, press Stop after a random wait (within `stop_after`, s) with `stop_chance`
    (always, for a lab that runs until Stop: stop_chance 1), then wait for the run to end
    before the next press."""
    rng = random.Random(seed)
    session = Session(lab, seed)
    for _ in range(presses):
        usable = [b for b in buttons(lab) if not b.disabled and b is not lab.stop_button]
        if not usable:
            break
        chosen = rng.choice(usable)
        step = Press(chosen.description)
        press(chosen)
        if lab.busy and lab.stop_button is not None and rng.random() < stop_chance:
            time.sleep(rng.uniform(*stop_after))
            if not lab.stop_button.disabled:
                pressed = time.monotonic()
                press(lab.stop_button)
                session.settle()
                step.stop_s = round(time.monotonic() - pressed, 2)
                step.label += " + Stop"
        session.settle()
        step.status = text(lab.status.value)
        step.error = "pgq-error" in lab.status.value
        step.result = lab.result
        step.repeated = repeated_views(lab)
        step.notes_shown = notes_shown(lab)
        session.presses.append(step)
    return session
