"""The interview rehearsal as a widget: the interviewer's open prompt, the
clarify step and its answers, one step at a time with a running timer and an
answer box saved as you type, then (only once you end the step) the rubric at
three levels, the model answer, the red-flag checklist and your own score; the
follow-ups drawn for this rehearsal; and the summary with the trend across
rehearsals. All logic lives in `pgq_teach.interview`; this is only the view.
The timer thread never prints; it sets a label's value."""

from __future__ import annotations

import threading
from html import escape
from typing import Any

import ipywidgets as W

from .. import tables
from ..interview import catalog, content
from ..interview.estimation import readable
from ..interview.rehearsal import Rehearsal, merged
from ..interview.render import clock_text, summary_lines
from ..tables import Markup, Table
from .common import styled

UNSCORED = 0
SCORE_OPTIONS = [("not scored", UNSCORED), ("1 weak", 1), ("2 hire", 2), ("3 strong hire", 3)]


def auto() -> W.Layout:
    return W.Layout(width="auto")  # a button as wide as its label


def rubric_html(rubric: Any) -> str:
    rows = [
        [f"{lv.level} {lv.name}", Markup(f"{escape(lv.says)}<br><i>e.g. {escape(lv.example)}</i>")]
        for lv in rubric.levels
    ]
    levels = Table(tables.columns("level", "what the answer does"), rows, css="pgq-levels")
    return f"<b>How an interviewer scores {escape(rubric.dimension)}</b>{levels.html()}"


def boxed(title: str, text: str) -> str:
    """A model answer in a box: its paragraphs as prose, and the SQL it writes on the board
    (a paragraph whose lines after its title are indented or SQL) kept as written."""
    parts = []
    for para in text.split("\n\n"):
        head, _, rest = para.partition("\n")
        if rest and head.endswith(":") and not head.startswith(" "):  # a mechanism: its name, then its lines
            sql = f"<pre class='pgq-sql' style='white-space:pre-wrap'>{escape(rest)}</pre>"
            parts.append(f"<p><b>{escape(head)}</b></p>{sql}")
        else:
            parts.append("<p>" + escape(para).replace("\n", "<br>") + "</p>")
    return f"<div style='background:#f3f7ff;padding:6px'><b>{escape(title)}</b>{''.join(parts)}</div>"


def show_if(widget: W.Widget, visible: bool) -> None:
    widget.layout.display = "" if visible else "none"


class RehearsalWidget(W.VBox):
    """Headless use: `w.questions.value = "..."; w.ask_button.click()`,
    `w.answer.value = "..."; w.end_button.click()`, `w.flag_boxes[0].value = True`,
    `w.score_pick.value = 2`, `w.follow_up_answers[key].value = "..."`, `w.finish_button.click()`."""

    def __init__(self, rehearsal: Rehearsal | None = None, *, tick_seconds: float = 1.0):
        self.rehearsal = rehearsal or Rehearsal()
        self.tick_seconds = tick_seconds
        self.loading = False
        self.ticker: threading.Thread | None = None
        self.ticker_stop = threading.Event()
        self.opening = styled(W.HTML(), "pgq-opening")
        self.questions = styled(
            W.Textarea(placeholder="Your clarifying questions, one per line", layout=W.Layout(width="100%")),
            "pgq-questions",
        )
        self.ask_button = W.Button(description="Ask the interviewer", icon="comments", layout=auto())
        self.clarified = styled(W.HTML(), "pgq-clarified")
        self.steps = styled(
            W.ToggleButtons(
                options=[(s.title, s.key) for s in catalog.STEPS], style={"button_width": "auto"}
            ),
            "pgq-steps",
        )
        self.prompt = W.HTML()
        self.timer = styled(W.HTML(), "pgq-timer")
        self.start_button = W.Button(description="Start timer", icon="play", layout=auto())
        self.pause_button = W.Button(description="Pause", icon="pause", layout=auto())
        self.hint_button = W.Button(description="Hint", icon="lightbulb-o", layout=auto())
        self.end_button = W.Button(description="End step", icon="check", button_style="info", layout=auto())
        self.next_button = W.Button(description="Next step", icon="arrow-right", layout=auto())
        self.answer = styled(
            W.Textarea(
                placeholder="Say it aloud, then write it here. Saved as you type.",
                layout=W.Layout(width="100%", height="9em"),
            ),
            "pgq-answer",
        )
        self.hints = styled(W.HTML(), "pgq-hints")
        self.board = self.board_part()
        self.rubric = styled(W.HTML(), "pgq-rubric")
        self.model = styled(W.HTML(), "pgq-model")
        self.flag_boxes: list[W.Checkbox] = []
        self.flags = styled(W.VBox(), "pgq-flags")
        self.score_pick = styled(W.Dropdown(options=SCORE_OPTIONS, description="your score"), "pgq-score")
        self.review = W.VBox(
            [
                self.rubric,
                self.model,
                W.HTML("<b>Red flags</b>: tick any your answer raised"),
                self.flags,
                self.score_pick,
            ]
        )
        self.follow_ups = styled(W.VBox(), "pgq-follow-ups")
        self.follow_up_answers: dict[str, W.Textarea] = {}
        self.communication = styled(W.HTML(), "pgq-communication")
        self.communication_pick = styled(
            W.Dropdown(options=SCORE_OPTIONS, description="communication"), "pgq-communication-score"
        )
        self.summary = styled(W.HTML(), "pgq-summary-board")
        self.finish_button = W.Button(
            description="Finish rehearsal", icon="flag-checkered", button_style="warning", layout=auto()
        )
        self.steps.observe(lambda ch: self.show(ch["new"]), names="value")
        self.questions.observe(self.typed_questions, names="value")
        self.answer.observe(self.typed, names="value")
        self.score_pick.observe(self.scored, names="value")
        self.communication_pick.observe(self.scored_communication, names="value")
        self.ask_button.on_click(lambda _: self.ask())
        self.start_button.on_click(lambda _: self.start_timer())
        self.pause_button.on_click(lambda _: self.pause_timer())
        self.hint_button.on_click(lambda _: self.more_hint())
        self.end_button.on_click(lambda _: self.end_step())
        self.next_button.on_click(lambda _: self.next_step())
        self.finish_button.on_click(lambda _: self.finish())
        buttons = W.HBox(
            [self.start_button, self.pause_button, self.hint_button, self.end_button, self.next_button]
        )
        super().__init__(
            [
                self.opening,
                self.questions,
                self.ask_button,
                self.clarified,
                self.steps,
                self.prompt,
                self.timer,
                buttons,
                self.answer,
                self.hints,
                self.board,
                self.review,
                W.HTML("<h4>Follow-up questions</h4>"),
                self.follow_ups,
                self.communication,
                self.communication_pick,
                self.summary,
                self.finish_button,
            ]
        )
        styled(self, "pgq-rehearsal")
        self.load_attempt()

    @property
    def key(self) -> str:
        return self.steps.value

    # the deep dive's board

    def board_part(self) -> W.VBox:
        """Write it on the board: a box per mechanism, saved as typed, and a button that checks
        what is written with the Your turn checker (interview.check_board)."""
        from ..interview.board import BOARD, params_of

        self.board_boxes: dict[str, W.Textarea] = {}
        rows: list[W.Widget] = [W.HTML("<b>Write it on the board</b>: each mechanism in SQL, 1-3 lines")]
        for m in BOARD:
            box = styled(
                W.Textarea(
                    placeholder=f"{m.name}: {m.exercise.task} Placeholders: {params_of(m.key)}",
                    layout=W.Layout(width="100%", height="5em"),
                ),
                "pgq-board-sql",
            )
            box.observe(lambda ch, k=m.key: self.typed_board(k, ch), names="value")
            self.board_boxes[m.key] = box
            rows += [W.HTML(f"<i>{escape(m.name)}</i>"), box]
        self.board_button = W.Button(description="Check the board", icon="check-square-o", layout=auto())
        self.board_button.on_click(lambda _: self.check_board())
        self.board_verdicts = styled(W.HTML(), "pgq-board-verdicts")
        return styled(W.VBox([*rows, self.board_button, self.board_verdicts]), "pgq-board")

    def typed_board(self, key: str, change: dict) -> None:
        if not self.loading:
            saved = self.rehearsal.board().get(key, "")
            self.rehearsal.write_on_board(key, merged(change["old"], saved, change["new"]))

    def check_board(self) -> None:
        """Each written mechanism checked live; the verdicts as a list, a hint under each miss."""
        from ..interview.board import BOARD, check_board

        verdicts = check_board(self.rehearsal.board())
        items = []
        for m in BOARD:
            v = verdicts[m.key]
            hint = "" if v.passed else f"<br><i>{escape(v.hint)}</i>"
            items.append(
                f"<li>{'✓' if v.passed else '✗'} <b>{escape(m.name)}</b>: {escape(v.headline)}{hint}</li>"
            )
        self.board_verdicts.value = f"<ul>{''.join(items)}</ul>"

    # the attempt as a whole

    def load_attempt(self) -> None:
        """Show the open attempt as the file holds it (the terminal may have changed it)."""
        r = self.rehearsal
        self.loading = True
        try:
            self.opening.value = (
                f"<p><b>Scenario: {escape(r.scenario.title)}</b> · about "
                f"{readable(r.current.get('minutes', catalog.DEFAULT_MINUTES))} minutes</p>"
                f"<p><b>Interviewer:</b> {escape(content.opening()['opening'])}</p>"
                f"<p><i>{escape(content.opening()['clarify_instructions'])}</i></p>"
            )
            self.questions.value = r.current["questions"]
            self.follow_up_answers = {}
            rows = []
            for key in r.follow_up_keys:
                box = styled(
                    W.Textarea(value=r.follow_up_answer(key), layout=W.Layout(width="100%")), "pgq-follow-up"
                )
                box.observe(lambda ch, k=key: self.typed_follow_up(k, ch), names="value")
                shown = W.HTML()
                button = W.Button(description="Show model answer", icon="eye", layout=auto())
                button.on_click(lambda _, k=key, out=shown: self.reveal_follow_up(k, out))
                self.follow_up_answers[key] = box
                rows += [W.HTML(f"<b>{escape(catalog.follow_up(key).question)}</b>"), box, button, shown]
            self.follow_ups.children = rows
            self.communication_pick.value = r.scores().get(catalog.COMMUNICATION.dimension, UNSCORED)
        finally:
            self.loading = False
        self.show_clarified()
        self.show(self.key)

    def show_clarified(self) -> None:
        r = self.rehearsal
        if not r.current["questions"].strip():
            self.clarified.value = ""
            return
        items = "".join(f"<li><b>{escape(t)}</b>: {escape(a)}</li>" for t, a in r.interviewer_answers())
        self.clarified.value = f"<b>The interviewer answers</b><ul>{items}</ul>"

    def ask(self) -> None:
        """The questions are saved as typed; asking shows the interviewer's answers."""
        self.show_clarified()

    def typed_questions(self, change: dict) -> None:
        if not self.loading:
            saved = self.rehearsal.current["questions"]
            self.rehearsal.ask(merged(change["old"], saved, change["new"]))

    # one step

    def show(self, key: str) -> None:
        """Show one step with what the learner already wrote, ticked and scored."""
        r = self.rehearsal
        if r.active and r.active != key:
            r.stop()
        s = catalog.step(key)
        ended = r.ended(key)
        self.loading = True
        try:
            self.prompt.value = f"<h3>{escape(s.title)}</h3><p>{escape(s.prompt)}</p>"
            self.answer.value = r.answer_of(key)
            written = r.board()
            for board_key, box in self.board_boxes.items():
                box.value = written.get(board_key, "")
            self.flag_boxes = [
                W.Checkbox(value=n in r.flags(key), description=text, indent=False, layout=auto())
                for n, text in enumerate(s.red_flags)
            ]
            for n, box in enumerate(self.flag_boxes):
                box.observe(lambda ch, i=n: self.flagged(i, ch["new"]), names="value")
            self.flags.children = self.flag_boxes
            self.score_pick.value = r.scores().get(s.rubric.dimension, UNSCORED)
            self.rubric.value = rubric_html(r.rubric(key)) if ended else ""
            self.model.value = boxed("A model answer", r.model(key)) if ended else ""
        finally:
            self.loading = False
        show_if(self.review, ended)
        show_if(self.board, key == "deep_dive")
        self.end_button.disabled = ended
        self.refresh()

    def refresh(self) -> None:
        r, key = self.rehearsal, self.key
        self.timer.value = self.timer_text(key)
        shown = r.hints_shown(key)
        self.hints.value = "<b>Hints</b><ul>" + "".join(f"<li>{escape(h)}</li>" for h in shown) + "</ul>"
        if not shown:
            self.hints.value = ""
        self.hint_button.disabled = len(shown) >= len(catalog.step(key).hints)
        all_ended = all(r.ended(k) for k in catalog.STEP_KEYS)
        self.communication.value = rubric_html(catalog.COMMUNICATION) if all_ended else ""
        show_if(self.communication_pick, all_ended)
        self.summary.value = self.summary_html()

    def timer_text(self, key: str) -> str:
        spent, budget = self.rehearsal.spent(key), self.rehearsal.seconds_for(key)
        over = " · <b style='color:#b00020'>over time</b>" if spent > budget else ""
        return f"time {clock_text(spent)} of {clock_text(budget)} suggested{over}"

    def summary_html(self) -> str:
        lines = summary_lines(self.rehearsal)
        return "<pre class='pgq-summary-lines'>" + escape("\n".join(lines)) + "</pre>"

    def typed(self, change: dict) -> None:
        if self.loading:
            return
        saved = self.rehearsal.answer_of(self.key)
        text = merged(change["old"], saved, change["new"])
        self.rehearsal.answer(self.key, text)
        if text != change["new"]:  # the terminal added to it meanwhile: show both
            self.loading = True
            self.answer.value = text
            self.loading = False

    def flagged(self, index: int, on: bool) -> None:
        if not self.loading:
            self.rehearsal.flag(self.key, index, on)

    def scored(self, change: dict) -> None:
        if not self.loading and change["new"] != UNSCORED:
            self.rehearsal.score(catalog.step(self.key).rubric.dimension, change["new"])
            self.refresh()

    def scored_communication(self, change: dict) -> None:
        if not self.loading and change["new"] != UNSCORED:
            self.rehearsal.score(catalog.COMMUNICATION.dimension, change["new"])
            self.refresh()

    def typed_follow_up(self, key: str, change: dict) -> None:
        if not self.loading:
            saved = self.rehearsal.follow_up_answer(key)
            self.rehearsal.answer_follow_up(key, merged(change["old"], saved, change["new"]))
            self.refresh()

    def reveal_follow_up(self, key: str, out: W.HTML) -> None:
        out.value = boxed("A model answer", catalog.follow_up(key).model())

    def more_hint(self) -> None:
        self.rehearsal.next_hint(self.key)
        self.refresh()

    def end_step(self) -> None:
        self.pause_timer()
        self.rehearsal.end_step(self.key)
        self.show(self.key)

    def next_step(self) -> None:
        keys = catalog.STEP_KEYS
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
            active = self.rehearsal.active
            if active is None:
                return
            self.timer.value = self.timer_text(active)

    def pause_timer(self) -> None:
        self.ticker_stop.set()
        self.rehearsal.stop()
        if self.ticker is not None:
            self.ticker.join()
        self.refresh()

    def finish(self) -> dict:
        """Close this rehearsal (the learner pressed Finish) and show the next one."""
        self.pause_timer()
        record = self.rehearsal.finish()
        self.load_attempt()
        first = catalog.STEP_KEYS[0]
        if self.key != first:
            self.steps.value = first
        title = catalog.scenario_named(record["scenario"]).title
        self.summary.value = (
            f"<div class='pgq-finished'><b>Finished: {escape(title)}</b>. "
            "A new rehearsal has begun, with another scenario.</div>" + self.summary_html()
        )
        return record


def trade_offs_html() -> str:
    """Lesson 12's trade-off table, one short table per property (system, what it offers),
    each cell with its source's footnote number. The one wide table, seven narrow columns of
    long cells, ran past the notebook's output area at 1366 px."""
    systems, rows = content.trade_offs()
    sources: list[str] = []
    parts = []
    for row in rows:
        cells = []
        for key, name in systems.items():
            cell = row.cells[key]
            if cell.cited not in sources:
                sources.append(cell.cited)
            cells.append([name, f"{cell.text} [{sources.index(cell.cited) + 1}]"])
        heads = tables.columns("system", "what it offers")
        parts.append(f"<p><b>{escape(row.title)}</b></p>" + Table(heads, cells, css="pgq-trade-offs").html())
    notes = "".join(f"<li>[{n}] {escape(source)}</li>" for n, source in enumerate(sources, 1))
    return (
        '<div class="pgq-trade-offs-all">'
        + "".join(parts)
        + f'<ul style="list-style:none; padding-left:0; overflow-wrap:anywhere">{notes}</ul></div>'
    )
