"""The interview rehearsal as a widget: one step at a time, with a running
timer, an answer box saved as you type, hints one by one, the model answer on
click, and a rubric to tick. All logic lives in `pgq_teach.interview`; this
is only the view. The timer thread never prints; it sets a label's value."""

from __future__ import annotations

import threading
from html import escape

import ipywidgets as W

from .. import interview
from ..interview import Rehearsal
from .common import styled


def auto() -> W.Layout:
    return W.Layout(width="auto")  # a button as wide as its label


def scoreboard_html(rehearsal: Rehearsal) -> str:
    rows = rehearsal.scoreboard()
    head = "<tr><th>step</th><th>this time</th><th>last time</th><th>time spent</th><th>suggested</th></tr>"
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    over = rehearsal.over_time()
    note = (
        (
            "<div class='pgq-over'>over time: "
            + ", ".join(
                f"{interview.step(k).title} ({interview.clock_text(s)} of {interview.clock_text(t)})"
                for k, s, t in over
            )
            + "</div>"
        )
        if over
        else ""
    )
    style = "<style>.pgq-scores td,.pgq-scores th{padding:1px 10px;text-align:left}</style>"
    return f"{style}<table class='pgq-scores'>{head}{body}</table>{note}"


def bullet_html(items: list[str], css: str) -> str:
    return f"<ul class='{css}'>" + "".join(f"<li>{escape(i)}</li>" for i in items) + "</ul>" if items else ""


class RehearsalWidget(W.VBox):
    """Headless use: `widget.answer.value = "..."`, `widget.model_button.click()`,
    `widget.boxes[0].value = True`, `widget.finish_button.click()`."""

    def __init__(self, rehearsal: Rehearsal | None = None, *, tick_seconds: float = 1.0):
        self.rehearsal = rehearsal or Rehearsal()
        self.tick_seconds = tick_seconds
        self.loading = False
        self.ticker: threading.Thread | None = None
        self.ticker_stop = threading.Event()
        self.steps = styled(
            W.ToggleButtons(
                options=[(s.title, s.key) for s in interview.STEPS], style={"button_width": "auto"}
            ),
            "pgq-steps",
        )
        self.title = W.HTML()
        self.prompt = W.HTML()
        self.timer = styled(W.HTML(), "pgq-timer")
        self.start_button = W.Button(description="Start timer", icon="play", layout=auto())
        self.pause_button = W.Button(description="Pause", icon="pause", layout=auto())
        self.hint_button = W.Button(description="Hint", icon="lightbulb-o", layout=auto())
        self.model_button = W.Button(description="Show model answer", icon="eye", layout=auto())
        self.next_button = W.Button(description="Next step", icon="arrow-right", layout=auto())
        self.finish_button = W.Button(
            description="Finish rehearsal", icon="flag-checkered", button_style="warning", layout=auto()
        )
        self.answer = styled(
            W.Textarea(
                placeholder="Say it aloud, then write it here. Saved as you type.",
                layout=W.Layout(width="100%", height="9em"),
            ),
            "pgq-answer",
        )
        self.flags = styled(W.HTML(), "pgq-flags")
        self.hints = styled(W.HTML(), "pgq-hints")
        self.model = styled(W.HTML(), "pgq-model")
        self.rubric = styled(W.VBox(), "pgq-rubric")
        self.boxes: list[W.Checkbox] = []
        self.score = styled(W.HTML(), "pgq-score")
        self.steps.observe(lambda ch: self.show(ch["new"]), names="value")
        self.answer.observe(self.typed, names="value")
        self.start_button.on_click(lambda _: self.start_timer())
        self.pause_button.on_click(lambda _: self.pause_timer())
        self.hint_button.on_click(lambda _: self.more_hint())
        self.model_button.on_click(lambda _: self.reveal())
        self.next_button.on_click(lambda _: self.next_step())
        self.finish_button.on_click(lambda _: self.finish())
        buttons = W.HBox(
            [
                self.start_button,
                self.pause_button,
                self.hint_button,
                self.model_button,
                self.next_button,
                self.finish_button,
            ]
        )
        super().__init__(
            [
                self.steps,
                self.title,
                self.prompt,
                self.timer,
                buttons,
                self.answer,
                self.flags,
                self.hints,
                W.HTML("<b>What the interviewer listens for</b> (tick what you said):"),
                self.rubric,
                self.model,
                self.score,
            ]
        )
        styled(self, "pgq-rehearsal")
        self.show(self.steps.value)

    @property
    def key(self) -> str:
        return self.steps.value

    def show(self, key: str) -> None:
        """Show one step with what the learner already wrote and ticked."""
        if self.rehearsal.active and self.rehearsal.active != key:
            self.rehearsal.stop()
        s = interview.step(key)
        self.loading = True
        try:
            self.title.value = f"<h3>{escape(s.title)}</h3>"
            self.prompt.value = f"<p>{escape(s.prompt)}</p>"
            self.answer.value = self.rehearsal.answer_of(key)
            ticked = set(self.rehearsal.ticked(key))
            self.boxes = [
                W.Checkbox(
                    value=i.key in ticked, description=i.text, indent=False, layout=W.Layout(width="auto")
                )
                for i in s.rubric
            ]
            for item, box in zip(s.rubric, self.boxes, strict=True):
                box.observe(lambda ch, k=item.key: self.ticked(k, ch["new"]), names="value")
            self.rubric.children = self.boxes
            self.model.value = self.model_html(key) if key in self.rehearsal.current["revealed"] else ""
        finally:
            self.loading = False
        self.refresh()

    def model_html(self, key: str) -> str:
        return (
            "<div style='background:#f3f7ff;padding:6px'><b>A model answer</b><p>"
            f"{escape(interview.step(key).model())}</p></div>"
        )

    def refresh(self) -> None:
        key = self.key
        s = interview.step(key)
        self.timer.value = (
            f"time {interview.clock_text(self.rehearsal.spent(key))} of "
            f"{interview.clock_text(s.seconds)} suggested"
            + (" · <b style='color:#b00020'>over time</b>" if self.rehearsal.spent(key) > s.seconds else "")
        )
        found = interview.red_flags_in(key, self.answer.value)
        self.flags.value = (
            "<b>Red flags to avoid:</b>"
            + bullet_html([f.text for f in s.red_flags], "pgq-flag-list")
            + (
                "<div class='pgq-flag-found' style='color:#b00020'>Your answer may raise: "
                + escape("; ".join(found))
                + "</div>"
                if found
                else ""
            )
        )
        shown = self.rehearsal.hints_shown(key)
        self.hints.value = ("<b>Hints</b>" + bullet_html(shown, "pgq-hint-list")) if shown else ""
        self.hint_button.disabled = len(shown) >= len(s.hints)
        self.score.value = scoreboard_html(self.rehearsal)

    def typed(self, change) -> None:
        if not self.loading:
            self.rehearsal.answer(self.key, change["new"])
            self.refresh()

    def ticked(self, item: str, on: bool) -> None:
        if not self.loading:
            self.rehearsal.tick(self.key, item, on)
            self.refresh()

    def more_hint(self) -> None:
        self.rehearsal.next_hint(self.key)
        self.refresh()

    def reveal(self) -> None:
        self.rehearsal.reveal(self.key)
        self.model.value = self.model_html(self.key)

    def next_step(self) -> None:
        keys = interview.STEP_KEYS
        at = keys.index(self.key)
        running = self.rehearsal.active is not None
        if at + 1 < len(keys):
            self.steps.value = keys[at + 1]
            if running:
                self.start_timer()

    # the timer: one thread, which only sets the label

    def start_timer(self) -> None:
        self.rehearsal.start(self.key)
        if self.ticker is None or not self.ticker.is_alive():
            self.ticker_stop = threading.Event()
            self.ticker = threading.Thread(target=self.tick_loop, daemon=True)
            self.ticker.start()
        self.refresh()

    def tick_loop(self) -> None:
        while not self.ticker_stop.wait(self.tick_seconds):
            if self.rehearsal.active is None:
                return
            s = interview.step(self.rehearsal.active)
            spent = self.rehearsal.spent(s.key)
            self.timer.value = (
                f"time {interview.clock_text(spent)} of {interview.clock_text(s.seconds)} suggested"
                + (" · <b style='color:#b00020'>over time</b>" if spent > s.seconds else "")
            )

    def pause_timer(self) -> None:
        self.ticker_stop.set()
        self.rehearsal.stop()
        if self.ticker is not None:
            self.ticker.join()
        self.refresh()

    def finish(self) -> dict:
        self.pause_timer()
        record = self.rehearsal.finish()
        first = interview.STEP_KEYS[0]
        if self.key == first:
            self.show(first)  # setting the same value would not fire the observer
        else:
            self.steps.value = first
        got, out_of = record["total"]
        over = ", ".join(interview.step(k).title for k in record["over_time"]) or "none"
        self.score.value = (
            f"<div class='pgq-finished'><b>Finished: {got}/{out_of}</b>; over time: "
            f"{escape(over)}. A new rehearsal has begun; last time's scores are beside it.</div>"
            + scoreboard_html(self.rehearsal)
        )
        return record


class FollowUpDrill(W.VBox):
    """The follow-up questions: pick one, answer it (saved), reveal the model answer."""

    def __init__(self, rehearsal: Rehearsal | None = None):
        self.rehearsal = rehearsal or Rehearsal()
        self.loading = False
        self.pick = W.Dropdown(
            options=[(f.question, f.key) for f in interview.FOLLOW_UPS], layout=W.Layout(width="100%")
        )
        self.answer = styled(
            W.Textarea(
                placeholder="Your answer (saved as you type)", layout=W.Layout(width="100%", height="6em")
            ),
            "pgq-answer",
        )
        self.model_button = W.Button(description="Show model answer", icon="eye")
        self.model = styled(W.HTML(), "pgq-model")
        self.pick.observe(lambda ch: self.show(), names="value")
        self.answer.observe(self.typed, names="value")
        self.model_button.on_click(lambda _: self.reveal())
        super().__init__([self.pick, self.answer, self.model_button, self.model])
        styled(self, "pgq-follow-ups")
        self.show()

    def show(self) -> None:
        self.loading = True
        self.answer.value = self.rehearsal.current["follow_ups"].get(self.pick.value, "")
        self.loading = False
        self.model.value = ""

    def typed(self, change) -> None:
        if not self.loading:
            self.rehearsal.answer_follow_up(self.pick.value, change["new"])

    def reveal(self) -> None:
        text = interview.follow_up(self.pick.value).model()
        self.model.value = f"<div style='background:#f3f7ff;padding:6px'>{escape(text)}</div>"
