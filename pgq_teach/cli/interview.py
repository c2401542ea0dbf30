"""`pgq-teach interview`: the interview rehearsal on standard input and output
(`pgq_teach.interview.terminal`), continuing the attempt the notebook shows, or
its one-page summary as Markdown or printable HTML."""

from __future__ import annotations

import argparse
import codecs
import collections
import os
import select
import sys

from .. import checks
from ..errors import BadInput
from ..interview.content import scenarios as interview_scenarios
from .common import Subcommands, say, say_fitted


def add_interview(sub: Subcommands) -> None:
    """Add `pgq-teach interview` to the command line."""
    itv = sub.add_parser(
        "interview", help="rehearse the system-design interview answer, timed, in the terminal"
    )
    itv.add_argument(  # checked by the rehearsal, so a wrong one is one line, not argparse's usage
        "--scenario",
        help="the interviewer's scenario for a new rehearsal: "
        f"{', '.join(sorted(interview_scenarios()))}, or one word of it that names no other, "
        "such as saas (default: drawn at random)",
    )
    itv.add_argument(  # a string, read by cmd_interview, so 'abc' is one line like '0' is
        "--minutes", help="the time for the whole rehearsal, 5 to 180 (default about 45)"
    )
    itv.add_argument("--summary", action="store_true", help="print the one-page summary (markdown) and exit")
    itv.add_argument(
        "--html", metavar="FILE", help="write the one-page summary as printable HTML to FILE and exit"
    )
    itv.set_defaults(func=cmd_interview)


def cmd_interview(args: argparse.Namespace) -> int:
    """The interview rehearsal on stdin/stdout; no database needed. It continues
    the open rehearsal (the notebook's too) until the learner types finish. It says
    how to stop first, and exits 0 after a stop too (Ctrl-C, Ctrl-D): by then every
    line typed is saved, which is what a clean stop means."""
    from ..infra import learner
    from ..interview.catalog import scenario_key
    from ..interview.estimation import readable
    from ..interview.rehearsal import FILE, Rehearsal, rehearsal_check
    from ..interview.render import summary_html, summary_markdown
    from ..interview.terminal import rehearse_in_terminal

    if args.summary:
        say(summary_markdown())
        return 0
    if args.html is not None:  # an empty name is refused, not taken for "no --html"
        path = checks.output_file("--html", args.html)
        page = "<!doctype html><meta charset='utf-8'><title>The job queue on one page</title>"
        try:
            path.write_text(page + summary_html(), encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"--html: cannot write {path} ({exc.strerror})") from None
        say(f"wrote the one-page summary to {path}; open it in a browser and print it")
        return 0
    if args.minutes is not None:
        try:
            args.minutes = float(args.minutes)
        except ValueError:
            raise BadInput(f"minutes must be 5 to 180, got {args.minutes!r}") from None
    learner.load_or_refuse(FILE, rehearsal_check)  # a damaged file: set aside, one line, exit 2
    rehearsal = Rehearsal(scenario=args.scenario, minutes=args.minutes)
    if args.scenario and rehearsal.current["scenario"] != scenario_key(args.scenario):
        say_fitted(
            f"(your open rehearsal is {rehearsal.scenario.title!r}: it continues; "
            f"finish it to start {args.scenario})"
        )
    if args.minutes is not None and rehearsal.current.get("minutes") != args.minutes:
        say_fitted(f"(your open rehearsal keeps its {readable(rehearsal.current['minutes'])} minutes)")

    say_fitted(
        "(to stop: Ctrl-C, or Ctrl-D, at any point; everything you typed is saved, and "
        "`pgq-teach interview` goes on from there)"
    )
    rehearse_in_terminal(TerminalInput(), say_fitted, rehearsal)
    return 0  # finished, kept open, Ctrl-C or end of input: everything typed is saved, nothing failed


class TerminalInput:
    """Standard input as lines, knowing whether more are already waiting: a paste arrives
    as many lines at once, and the rehearsal saves them in one write. It reads the file
    descriptor itself, because Python's own buffer would hide lines it had read ahead.
    Where stdin has no descriptor (a test's StringIO), it reads lines and says none wait."""

    def __init__(self) -> None:
        try:
            self.fd: int | None = sys.stdin.fileno()
        except (AttributeError, OSError, ValueError):
            self.fd = None
        self.lines: collections.deque[str] = collections.deque()
        self.partial = ""
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.ended = False

    def __call__(self) -> str | None:
        if self.fd is None:
            return sys.stdin.readline() or None
        while not self.lines:
            if self.ended:
                line, self.partial = self.partial, ""
                return line or None
            chunk = os.read(self.fd, 65536)
            self.ended = not chunk
            *full, self.partial = (self.partial + self.decoder.decode(chunk, final=self.ended)).split("\n")
            self.lines.extend(full)
        return self.lines.popleft().removesuffix("\r")  # a line pasted from Windows

    def waiting(self) -> bool:
        if self.lines or self.fd is None or self.ended:
            return bool(self.lines)
        try:
            return bool(select.select([self.fd], [], [], 0)[0])
        except (OSError, ValueError):  # a console without select (Windows)
            return False
