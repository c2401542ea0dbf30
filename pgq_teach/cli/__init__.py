"""The pgq-teach command: open the course, manage the embedded server, and
poke at a queue from a terminal.

A module for each family of commands, each command's parser beside its handler:
`course` (lab, psql, progress), `server` (server, broker, clean), `jobs` (enqueue,
worker, stats), `runs` (fault-run, load, failover-drill), `interview`, and `measure` (bench,
reproduce); `common` holds what they share. This module puts them together in
`parser()` and runs one command in `main()`.
"""

from __future__ import annotations

import argparse
import sys

from .. import checks
from ..databases import database_name
from ..errors import PgqError
from . import course, interview, jobs, measure, runs, server
from .common import DefaultsShown, Parser, joined_negative_values
from .course import LAB_OPTIONS, abbreviates, split_psql
from .interview import TerminalInput

__all__ = ["TerminalInput", "main", "parser"]

DESCRIPTION = (__doc__ or "").split("\n\n")[0]  # the first paragraph: the opening of --help

# Each command, in the order --help lists them.
COMMANDS = (
    course.add_lab,
    server.add_server,
    server.add_broker,
    course.add_psql,
    jobs.add_enqueue,
    jobs.add_worker,
    jobs.add_stats,
    runs.add_fault_run,
    server.add_clean,
    course.add_progress,
    runs.add_load,
    runs.add_failover_drill,
    interview.add_interview,
    measure.add_bench,
    measure.add_reproduce,
)


def parser() -> argparse.ArgumentParser:
    """The command line: a subcommand each for lab, server, enqueue, worker, stats, fault-run, load, ..."""
    p = Parser(prog="pgq-teach", description=DESCRIPTION)
    sub = p.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    for command in sub.choices.values():  # every subcommand's --help shows its defaults
        command.formatter_class = DefaultsShown
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one command; a PgqError is one line on stderr and exit code 2, never a traceback."""
    argv = sys.argv[1:] if argv is None else list(argv)
    p = parser()
    passed_on: list[str] = []
    if argv[:1] == ["psql"]:  # psql's options are psql's: parse only ours
        ours, passed_on = split_psql(argv[1:])
        argv = ["psql", *ours]
    args, extra = p.parse_known_args(joined_negative_values(argv))
    if extra and (args.command != "lab" or any(abbreviates(word, LAB_OPTIONS) for word in extra)):
        p.error(f"unrecognized arguments: {' '.join(extra)}")
    args.jupyter_args = extra
    args.extra_args = passed_on
    try:
        if getattr(args, "db", None) is not None:  # a label no database can be named after: refused first
            database_name(checks.database_label("--db", args.db))
        return args.func(args)
    except PgqError as exc:
        print(f"pgq-teach: {exc}", file=sys.stderr)
        return 2
