"""The fault and load runs: `pgq-teach fault-run` (alias torture) and `load`,
each an option for every setting of its run (`faults.settings`), on a database
of its own that is reset first."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from ..databases import open_database
from ..errors import BadInput
from ..faults.settings import AnyRunSettings, FaultSettings, LoadSettings, RunSettings
from .common import Subcommands, say, typed


def add_fault_run(sub: Subcommands) -> None:
    """Add `pgq-teach fault-run` (alias torture) to the command line."""
    tor = sub.add_parser(
        "fault-run",
        aliases=["torture"],
        help="the fault run: kill, freeze and cut off workers, restart the server, requeue "
        "dead jobs, then check that nothing was lost or done twice (alias: torture)",
    )
    names = (
        "jobs workers seconds lease kill_every terminate_every pause_every requeue_every restart "
        "concurrency batch long_every beat_kill_every timeout rate_limit"
    )
    _run_options(tor, FaultSettings, "fault_run", names)
    tor.set_defaults(func=cmd_fault_run)


def cmd_fault_run(args: argparse.Namespace) -> int:
    from ..faults import run_faults

    s = _settings(FaultSettings, args)
    details = (
        f"{s.jobs:,} jobs due over {s.seconds:g} s, {s.workers} worker processes, "
        f"dead jobs requeued every {s.requeue_every:g} s"
    )
    return _run_in_fresh_database(args, "fault run", run_faults, s, details)


def add_load(sub: Subcommands) -> None:
    """Add `pgq-teach load` to the command line."""
    lod = sub.add_parser("load", help="the load run: many workers, planned failures, retries and dead jobs")
    _run_options(lod, LoadSettings, "load", "jobs workers fail_rate max_attempts seed")
    lod.set_defaults(func=cmd_load)


def cmd_load(args: argparse.Namespace) -> int:
    from ..faults import run_load

    s = _settings(LoadSettings, args)
    details = (
        f"{s.jobs:,} jobs, {s.workers} worker processes, {s.fail_rate:.0%} of calls "
        "raising; the retries alone take over 60 s"
    )
    return _run_in_fresh_database(args, "load run", run_load, s, details)


def _settings(settings: type[AnyRunSettings], args: argparse.Namespace) -> AnyRunSettings:
    """A run's settings from the command line; a refusal names the option as typed
    (`--kill-every`), not the setting behind it (kill_every)."""
    try:
        return settings.from_options(vars(args))
    except BadInput as exc:
        name, _, rest = str(exc).partition(" ")
        if name not in RUN_OPTIONS:
            raise
        raise BadInput(f"--{name.replace('_', '-')} {rest}") from None


# What each setting of a run means, as its option's help (`--kill-every` sets kill_every).
RUN_OPTIONS = {
    "jobs": "jobs to drain",
    "workers": "worker processes at a time",
    "seconds": "how long jobs fall due and faults go on",
    "lease": "the workers' lease in seconds",
    "kill_every": "seconds between SIGKILLs",
    "terminate_every": "seconds between sessions ended",
    "pause_every": "seconds between SIGSTOP pauses",
    "requeue_every": "seconds between dead-job requeues",
    "restart": "do not restart PostgreSQL during the faults",  # the option is --no-restart
    "fail_rate": "fraction of handler calls that raise",
    "max_attempts": "tries per job",
    "seed": "picks which calls fail",
    "concurrency": "executors in each worker process (a heartbeat pool)",
    "batch": "jobs each executor is handed per claim",
    "long_every": "every Nth job works 1.5 leases, kept only by its heartbeat (0: none)",
    "beat_kill_every": "seconds between heartbeat sessions ended",
    "timeout": "each worker's job timeout in seconds; long jobs then time out on their first try",
    "rate_limit": "jobs per second, one rate limit shared by the whole fleet",
}
# The run's type for a setting whose default is None (off): given, it is a number.
OFF_BY_DEFAULT = {"timeout": float, "rate_limit": float}


def _run_options(sp: argparse.ArgumentParser, settings: type[RunSettings], label: str, names: str) -> None:
    """An option for each setting of a run in `names` (space-separated),
    typed and explained by the setting's default and RUN_OPTIONS, and --db.
    None has a default of its own: one not given is left out, and the run's
    settings keep theirs."""
    for name in names.split():
        default = getattr(settings, name)
        if isinstance(default, bool):  # on by default: --no-NAME turns it off
            sp.add_argument(f"--no-{name}", dest=name, action="store_false", help=RUN_OPTIONS[name])
            continue
        if default is None:
            shown, kind = "none", OFF_BY_DEFAULT[name]
        else:
            shown, kind = (f"{default:,}" if isinstance(default, int) else f"{default:g}"), type(default)
        flag, text = f"--{name.replace('_', '-')}", f"{RUN_OPTIONS[name]} (default {shown})"
        sp.add_argument(flag, type=typed(kind), default=argparse.SUPPRESS, help=text)
    sp.add_argument("--db", default=label, help=f"database label (default pgq_{label}; reset first)")


def add_failover_drill(sub: Subcommands) -> None:
    """Add `pgq-teach failover-drill` to the command line."""
    from ..faults.failover import CONFIGS

    fd = sub.add_parser(
        "failover-drill",
        help="kill a throwaway primary mid-run, promote its streaming replica, and count what "
        "each replication and completion setting loses (never the course's own server)",
    )
    fd.add_argument("--jobs", type=typed(int), default=1_000, help="jobs seeded before the workers start")
    fd.add_argument("--workers", type=typed(int), default=4, help="fleet worker processes")
    fd.add_argument(
        "--config",
        choices=(*CONFIGS, "all"),
        default="all",
        help="replication-completion setting, or all four",
    )
    fd.add_argument(
        "--lag",
        type=typed(float),
        default=1.0,
        help="seconds the replica's WAL receiver is paused before the kill",
    )
    fd.add_argument("--json", default=None, help="also write the report as JSON to this file")
    fd.add_argument(
        "--no-epoch", action="store_true", help="skip the fencing epoch at promotion (fence_epoch.sql)"
    )
    fd.set_defaults(func=cmd_failover_drill)


def cmd_failover_drill(args: argparse.Namespace) -> int:
    import json

    from .. import checks
    from ..faults.failover import CONFIGS, DrillSettings, run_drill, summary

    settings = DrillSettings(jobs=args.jobs, workers=args.workers, lag=args.lag, epoch=not args.no_epoch)
    out = None if args.json is None else checks.output_file("--json", args.json)
    configs = CONFIGS if args.config == "all" else (args.config,)
    say(
        f"failover drill: {settings.jobs:,} jobs, {settings.workers} worker processes, lag window "
        f"{settings.lag:g} s, fencing epoch {'on' if settings.epoch else 'off'}; Ctrl-C stops it"
    )
    try:
        report = run_drill(settings, configs, progress=say)
    except KeyboardInterrupt:
        say("interrupted: every worker process and both servers were stopped")
        return 130
    say(summary(report))
    if out is not None:
        out.write_text(json.dumps(report.as_json(), indent=2) + "\n", encoding="utf-8")
        say(f"report written to {out}")
    return 0 if report.ok else 1


def _run_in_fresh_database(
    args: argparse.Namespace, what: str, start: Callable[..., Any], settings: RunSettings, details: str
) -> int:
    """Reset the run's own database (--db), say what runs, run it with Ctrl-C
    stopping every worker process, print its report; exit 1 if an invariant
    failed. The settings were checked before: bad options never reach a database."""
    db = open_database(args.db, reset=True)
    say(db.server.line())
    say(f"{what} in database {db.name}: {details}; Ctrl-C stops it")
    try:
        report = start(db, settings, progress=_progress_line())
    except KeyboardInterrupt:
        say("interrupted: every worker process was stopped")
        return 130
    say(report.summary())
    return 0 if report.ok else 1


def _progress_line(every: float = 5.0):
    """A progress(done, total) that prints a line every `every` seconds."""
    began = time.monotonic()
    last = [began]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= every or done >= total:
            last[0] = now
            say(f"  {now - began:6.1f} s  {done:,}/{total:,} jobs done or dead")

    return progress
