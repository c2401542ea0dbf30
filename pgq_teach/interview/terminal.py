"""The same rehearsal in a terminal (`pgq-teach interview`): the steps, prompts,
rubrics, red flags, scores and follow-ups on lines of text, read with `Read` and
written with `Say`, so the CLI gives it standard input and a test gives it a list."""

from __future__ import annotations

import contextlib
import functools
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import PgqError
from . import content
from .catalog import COMMUNICATION, DEFAULT_MINUTES, STEP_KEYS, follow_up, step
from .estimation import readable
from .rehearsal import Rehearsal
from .render import clock_text, summary_lines

# One line typed, or None when input ends. A reader may also have `waiting()`: whether more
# lines are already there to read (the CLI's does), so a paste is saved in one write.
Read = Callable[[], "str | None"]
Say = Callable[[str], None]


class InputEnded(Exception):
    """The learner's input ended: everything typed so far is saved, the attempt stays open."""


def read_line(read: Read) -> str:
    line = read()
    if line is None:
        raise InputEnded
    return line.rstrip("\n")


NOTHING_TYPED = "(nothing typed here yet: type your answer, or press Enter again to go on without one)"


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) back until the block ends, then raise it as usual. A handler that
    notes it, not a signal mask: a mask is per thread, and the kernel may hand the signal to
    another thread of the process, whose note then interrupts this one anyway. Only the main
    thread may set a handler; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    before = signal.signal(signal.SIGINT, lambda signum, _frame: noted.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
    if noted and callable(before):
        before(signal.SIGINT, None)  # Python's own handler raises KeyboardInterrupt here


def read_until_empty(read: Read, say: Say, keep: Callable[[str], None], *, has_text: bool) -> None:
    """Hand the lines typed to `keep` up to an empty line: each line as it comes, or, while
    `read.waiting()` says more lines are already there (a paste), all of them at once, so a
    paste of thousands of lines is saved in one write, not one write a line. What is kept
    when Ctrl-C or Ctrl-D arrives is saved too. An empty line before anything was typed only
    warns: the next one ends, so a stray Enter does not skip a step and show its model answer."""
    waiting: Callable[[], bool] = getattr(read, "waiting", lambda: False)
    pending: list[str] = []
    warned = False
    try:
        while True:
            line = read_line(read)
            if line.strip():
                pending.append(line)
                has_text = True
                if not waiting():
                    with interrupts_held():  # a Ctrl-C between the save and the reset would save it twice
                        keep("\n".join(pending))
                        pending = []
            elif has_text or warned:
                return
            else:
                say(NOTHING_TYPED)
                warned = True
    finally:
        if pending:
            keep("\n".join(pending))


def rubric_text(rubric: content.Rubric) -> list[str]:
    out = [f"How an interviewer scores {rubric.dimension}:"]
    for lv in rubric.levels:
        out += [f"  {lv.level} ({lv.name}): {lv.says}", f"     e.g. {lv.example}"]
    return out


def ask_score(
    r: Rehearsal, dimension: str, read: Read, say: Say, keep_stray: Callable[[str], None] | None = None
) -> None:
    """Ask a self-score; an empty line keeps what is saved. A line of words (a paste that
    ran on past the empty line) goes to `keep_stray`, the step's answer, not away."""
    now = r.scores().get(dimension)
    say(f"Your score for {dimension}: 1, 2 or 3 (empty line keeps {now or 'no score'}).")
    while True:
        word = read_line(read).strip()
        if not word:
            return
        if word in ("1", "2", "3"):
            r.score(dimension, int(word))
            return
        if keep_stray is not None and not number_words(word):
            keep_stray(word)
            say("(not a score, so it is added to your answer: type 1, 2 or 3, or an empty line)")
        else:
            say(f"(no score {word!r}: type 1, 2 or 3, or an empty line)")


def number_words(line: str) -> list[str] | None:
    """The words of a line of flag numbers ('1 3', '-2', '1, 2'), or None if any word is not one."""
    words = line.replace(",", " ").split()
    return words if all(w.lstrip("-").isdigit() for w in words) else None


def ask_flags(r: Rehearsal, key: str, read: Read, say: Say) -> None:
    """Ticks only what the learner types: N ticks flag N, -N unticks it; an empty line keeps all.
    A line is applied whole or not at all, so text that happens to hold a number (a paste
    that ran on past the empty line) never ticks or unticks a flag: it goes to the answer."""
    flags = step(key).red_flags
    say("Red flags: did your answer do any of these? (N ticks, -N unticks, empty line keeps)")
    for n, text in enumerate(flags, 1):
        say(f"  [{'x' if n - 1 in r.flags(key) else ' '}] {n}. {text}")
    while line := read_line(read).strip():
        words = number_words(line)
        if words is None:
            r.add_to_answer(key, line)
            say(
                "(not flag numbers, so nothing ticked; the line is added to your answer: "
                f"type 1 to {len(flags)}, -N to untick, or an empty line)"
            )
        elif any(not 1 <= int(w.lstrip("-")) <= len(flags) for w in words):
            say(f"(nothing ticked: the flags are 1 to {len(flags)}; type them again, or an empty line)")
        else:
            for w in words:
                r.flag(key, int(w.lstrip("-")) - 1, not w.startswith("-"))
            return


def terminal_step(r: Rehearsal, key: str, read: Read, say: Say) -> None:
    s = step(key)
    say("")
    say(f"== {s.title}  (suggested {clock_text(r.seconds_for(key))}) ==")
    say(s.prompt)
    if r.answer_of(key):
        say("(your saved answer, kept; what you type is added to it):")
        say(r.answer_of(key))
    say("Type your answer; ? on a line shows a hint; an empty line ends the step.")
    r.start(key)

    def keep(lines: str) -> None:
        text = []
        for line in lines.split("\n"):
            if line.strip() != "?":
                text.append(line)
                continue
            if text:
                r.add_to_answer(key, "\n".join(text))
                text = []
            hint = r.next_hint(key)
            say(f"hint: {hint}" if hint else "no more hints for this step")
        if text:
            r.add_to_answer(key, "\n".join(text))

    try:
        read_until_empty(read, say, keep, has_text=bool(r.answer_of(key)))
    finally:
        r.stop()
    if key == "deep_dive":
        terminal_board(r, read, say)
    r.end_step(key)
    over = " (over time)" if r.spent(key) > r.seconds_for(key) else ""
    say(f"time {clock_text(r.spent(key))} of {clock_text(r.seconds_for(key))}{over}")
    for line in rubric_text(r.rubric(key)):
        say(line)
    say("A model answer: " + r.model(key))
    ask_flags(r, key, read, say)
    ask_score(r, s.rubric.dimension, read, say, lambda line: r.add_to_answer(key, line))


def terminal_board(r: Rehearsal, read: Read, say: Say) -> None:
    """Write it on the board: each of the six mechanisms in SQL, ended by an empty line (an
    empty line first skips it, or keeps what was written before), then every one written
    checked live by the Your turn checker, which starts the course's server if it is not
    running."""
    from .board import BOARD, check_board, params_of

    say("Write it on the board: each mechanism in SQL, 1-3 lines, then an empty line.")
    say("(an empty line at once skips a mechanism, or keeps what you wrote there before)")
    for m in BOARD:
        before = r.board().get(m.key, "")
        say(f"-- {m.name} ({m.exercise.task} Placeholders: {params_of(m.key)})")
        if before:
            say(before)
        lines: list[str] = []
        read_until_empty(read, say, lines.append, has_text=True)
        if lines:
            r.write_on_board(m.key, "\n".join(lines))
    written = r.board()
    if not written:
        say("(nothing on the board: the model answer below writes all six)")
        return
    say("Checking what you wrote, live (the course's server starts if it is not running)...")
    try:
        verdicts = check_board(written)
    except PgqError as exc:  # no server to check on: the lines stay saved for the next run
        say(f"(the board could not be checked: {exc}; what you wrote is saved)")
        return
    for key, verdict in verdicts.items():
        mark = "ok" if verdict.passed else "--"
        name = next(m.name for m in BOARD if m.key == key)
        say(f"  [{mark}] {name}: {verdict.headline}" + ("" if verdict.passed else f"; {verdict.hint}"))


def rehearse_in_terminal(read: Read, say: Say, rehearsal: Rehearsal | None = None) -> dict[str, Any] | None:
    """Run (or continue) the open rehearsal on lines of text. Returns the finished
    record if the learner finished it, else None (everything stays saved, and the
    notebook or the next run continues it)."""
    r = rehearsal or Rehearsal()
    try:
        return terminal_rehearsal(r, read, say)
    except InputEnded:
        r.stop()
        say("(input ended: your answers are saved; run `pgq-teach interview` again to go on)")
        return None
    except KeyboardInterrupt:
        r.stop()
        say("(interrupted: everything you typed is saved; run `pgq-teach interview` again to go on)")
        return None


def terminal_rehearsal(r: Rehearsal, read: Read, say: Say) -> dict[str, Any] | None:
    c = r.current
    minutes = readable(c.get("minutes", DEFAULT_MINUTES))
    say(f"The interview rehearsal: {r.scenario.title}, about {minutes} minutes.")
    if Rehearsal.has_progress(c):
        say("(continuing your open rehearsal; steps you ended are kept)")
    say("")
    say("Interviewer: " + content.opening()["opening"])
    if not c["questions"]:
        say(content.opening()["clarify_instructions"])
        read_until_empty(read, say, r.add_question, has_text=False)
    else:
        say("Your questions: " + c["questions"].replace("\n", "; "))
    say("The interviewer answers:")
    for topic, answer in r.interviewer_answers():
        say(f"  {topic}: {answer}")
    for key in STEP_KEYS:
        if r.ended(key):
            say(f"({step(key).title}: ended before, score {r.scores().get(step(key).rubric.dimension, '–')})")
            continue
        terminal_step(r, key, read, say)
    for key in r.follow_up_keys:
        say("")
        say(f"Follow-up: {follow_up(key).question}")
        if r.follow_up_answer(key):  # answered before (here, or in the notebook): its model answer shows
            say("(your saved answer: " + r.follow_up_answer(key).replace("\n", "; ") + ")")
        else:
            read_until_empty(read, say, functools.partial(r.add_to_follow_up, key), has_text=False)
        say("A model answer: " + follow_up(key).model())
    say("")
    for line in rubric_text(COMMUNICATION):
        say(line)
    ask_score(r, COMMUNICATION.dimension, read, say)
    say("")
    for line in summary_lines(r):
        say(line)
    say("Type finish to close this rehearsal (anything else keeps it open to go on later).")
    if read_line(read).strip().lower() != "finish":
        say("(kept open: the notebook and the next run continue it)")
        return None
    return r.finish()
