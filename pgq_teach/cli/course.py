"""The learner's commands: `pgq-teach lab` (the course in JupyterLab, on the
learner's own copy of the lessons), `psql` (on a lesson's database, to run the
course's SQL by hand) and `progress` (which lessons' exercises are passed)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .. import checks, tables
from ..errors import BadInput
from ..infra import workcopy
from ..infra.psql import psql_command
from ..infra.server import Server, get_server
from .common import Subcommands, say, typed


def add_lab(sub: Subcommands) -> None:
    """Add `pgq-teach lab` to the command line."""
    lab = sub.add_parser("lab", help="open the course in JupyterLab on a live PostgreSQL")
    lab.add_argument("--port", type=typed(int), help="JupyterLab's port (default 8888, or the next free one)")
    lab.add_argument(
        "--no-browser", action="store_true", help="do not open a browser; open the printed URL yourself"
    )
    lab.add_argument(
        "--dir",
        help="serve this folder as it is, instead of your copy of the lessons "
        "(default: your copy, in notebooks/ of your data folder)",
    )
    lab.add_argument(
        "--fresh",
        action="append",
        metavar="LESSON",
        help="a new copy of this lesson (such as 05) from the course; your old copy is kept in "
        "earlier/ (repeatable; default: none, your copies stay as they are)",
    )
    lab.epilog = (
        "The lab serves your own copy of the lessons, in notebooks/ beside your progress file "
        "(PGQ_HOME moves it): a lesson is copied only when you have no copy yet, so nothing you "
        "typed or ran is written over. Any other options, such as --ServerApp.token=..., are "
        "passed on to jupyter lab."
    )
    lab.set_defaults(func=cmd_lab)


def cmd_lab(args: argparse.Namespace) -> int:
    # Every option is checked before the server starts or a file is copied.
    if args.port is not None:
        checks.whole_number("--port", args.port, 1, 65_535)
    fresh = [workcopy.find_lesson("--fresh", text) for text in args.fresh or []]
    if args.dir is not None and fresh:
        raise BadInput("--fresh makes a new copy in your own folder; it does not go with --dir")
    folder = checks.existing_folder("--dir", args.dir) if args.dir is not None else None
    server = get_server()
    say(server.line())
    if folder is None:
        folder = _learners_copy(fresh)
    say("Stopping the lab (Ctrl-C) leaves PostgreSQL running; `pgq-teach server stop` ends it.")
    env = {**os.environ, **kernel_env(server)}
    # JupyterLab's terminals inherit this PATH: `pgq-teach psql 02` (lesson 02) works there as typed.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    argv = [
        sys.executable,
        "-m",
        "pgq_teach.infra.jupyter",
        f"--notebook-dir={folder}",
    ]  # `jupyter lab`, quicker
    argv += [f"--port={args.port}"] if args.port else []
    argv += ["--no-browser"] if args.no_browser else []
    # Jupyter refuses root without this; containers and CI machines run as root.
    argv += ["--ServerApp.allow_root=True"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    argv += args.jupyter_args
    os.execvpe(argv[0], argv, env)
    return 0  # not reached


def kernel_env(server: Server) -> dict[str, str]:
    """What `pgq-teach lab` hands its kernels: they reuse its server instead of provisioning
    their own, and print the line it printed (the same backend, the same words: Server.line)."""
    return {
        "PGQ_DSN": server.dsn,
        "PGQ_BACKEND": "dsn",
        "PGQ_LAB_BACKEND": server.kind,
        "PGQ_ORIGIN": server.origin,
    }


def _learners_copy(fresh: list[str]) -> Path:
    """The learner's working copy (workcopy.py): new lessons copied, each --fresh lesson
    copied anew with the old copy kept aside, and a line for any newer course version."""
    for slug in fresh:
        kept = workcopy.fresh(slug)
        say(f"a fresh copy of {slug}" + (f"; your earlier one is {kept}" if kept else ""))
    report = workcopy.prepare()
    for line in report.lines():
        say(line)
    return report.folder


LAB_OPTIONS = ("--port", "--no-browser", "--dir", "--fresh")


def abbreviates(word: str, options: tuple[str, ...]) -> bool:
    """True if `word` is a shortened form of one of `options` (`--no-b` for --no-browser),
    which lab must refuse rather than pass on to jupyter lab."""
    name = word.split("=", 1)[0]
    return name.startswith("--") and len(name) > 2 and any(o.startswith(name) and o != name for o in options)


def add_psql(sub: Subcommands) -> None:
    """Add `pgq-teach psql` to the command line."""
    psq = sub.add_parser("psql", help="psql on a lesson's database, to run the course's SQL by hand")
    psq.add_argument(
        "lesson",
        nargs="?",
        help="a lesson's number or slug, such as 02 or 02-row-locks (default: the shop database)",
    )
    psq.epilog = (
        "Any other options, such as -c 'SELECT 1', are passed on to psql; with no LESSON first, "
        "psql opens the shop database."
    )
    psq.set_defaults(func=cmd_psql)


def cmd_psql(args: argparse.Namespace) -> int:
    command = psql_command(args.lesson, args.extra_args)
    say(command.server_line)
    say(
        f"psql on database {command.database}; try: \\set batch 1  \\set lease '5 minutes'  \\i sql/claim.sql"
    )
    os.chdir(command.cwd)  # so \i sql/NAME.sql finds the course's files
    os.execv(command.argv[0], command.argv)
    return 0  # not reached


def split_psql(argv: list[str]) -> tuple[list[str], list[str]]:
    """`psql [LESSON] [psql's own options]`: pgq-teach's part (the lesson and
    --help) and the rest, passed on to psql as typed. Only a first word that is
    not an option is a lesson, so `psql -c "select 1"` goes to the shop database."""
    ours = argv[:1] if argv and not argv[0].startswith("-") else []
    rest = argv[len(ours) :]
    if any(a in ("-h", "--help") for a in rest[:1]):
        ours, rest = [*ours, rest[0]], rest[1:]
    return ours, rest


def add_progress(sub: Subcommands) -> None:
    """Add `pgq-teach progress` to the command line."""
    prg = sub.add_parser("progress", help="which lessons' exercises you have passed")
    prg.set_defaults(func=cmd_progress)


def cmd_progress(args: argparse.Namespace) -> int:
    from ..exercises import EXERCISES, done

    passed = done()
    rows = []
    for lesson in sorted({e.lesson for e in EXERCISES.values()}):
        keys = [k for k, e in EXERCISES.items() if e.lesson == lesson]
        mark = "done" if all(passed[k] for k in keys) else f"{sum(passed[k] for k in keys)} of {len(keys)}"
        rows += [
            [f"{lesson}: {mark}" if i == 0 else "", k, passed[k], EXERCISES[k].title]
            for i, k in enumerate(keys)
        ]
    say(tables.Table(tables.columns("lesson", "exercise", "passed", "what it asks"), rows).text())
    say(f"{sum(passed.values())} of {tables.count(len(passed), 'exercise')} passed")
    return 0
