"""Measuring here: `pgq-teach bench` (the queue's speed, side by side with
PgQueuer if it is installed) and `reproduce` (the guide's figures, each with a
verdict)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from .. import checks
from ..errors import SetupError
from .common import Subcommands, say, say_fitted


def add_bench(sub: Subcommands) -> None:
    """Add `pgq-teach bench` to the command line."""
    ben = sub.add_parser(
        "bench",
        help="the queue's speed: the ceiling, the guide's loop, the Worker, bulk "
        "enqueue, NOTIFY pickup and PgQueuer (if installed), side by side",
    )
    ben.add_argument("--jobs", type=_positive(int), default=20_000, help="jobs drained per run")
    ben.add_argument("--repeats", type=_positive(int), default=3, help="runs of each setup, interleaved")
    ben.add_argument("--samples", type=_positive(int), default=200, help="jobs timed for NOTIFY pickup")
    ben.add_argument(
        "--quick", action="store_true", help="a small run (300 jobs, 2 runs each) to check it works"
    )
    ben.add_argument("--json", help="where to write the JSON (default bench-DATE-TIME.json here)")
    ben.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    from ..bench import check_inputs, run_bench

    jobs, repeats, samples = (300, 2, 10) if args.quick else (args.jobs, args.repeats, args.samples)
    check_inputs(jobs=jobs, repeats=repeats, samples=samples)  # before the first line, not inside the run
    # Checked before the run, so a bad path cannot throw the whole run away at the end.
    default = time.strftime("bench-%Y%m%d-%H%M%S.json")
    out = checks.output_file("--json", default if args.json is None else args.json)
    say_fitted(
        f"bench: every setup {repeats} times, interleaved, {jobs:,} no-op jobs per run, each on a fresh "
        f"database; Ctrl-C stops it"
    )
    try:
        result = run_bench(jobs=jobs, repeats=repeats, samples=samples, progress=_bar())
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    say(result.summary())
    try:
        out.write_text(json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:  # a full disk, or a device: the summary above keeps the figures
        raise SetupError(
            f"--json: could not write {out} ({exc.strerror}); the summary above has the figures"
        ) from None
    say(f"JSON: {out}")
    return 0 if result.ok else 1


def _positive(kind):
    """An argparse type: a number above zero, refused before any database is touched."""

    def parse(text: str):
        try:
            value = checks.number_text(text, kind)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a {'whole ' if kind is int else ''}number"
            ) from None
        if not value > 0 or value != value or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{text!r} must be above zero and finite")
        return value

    return parse


def _bar(width: int = 30):
    """A progress(done, total) that draws a bar on stderr (one line, redrawn)."""
    began = time.monotonic()

    def progress(done: int, total: int) -> None:
        filled = width * done // max(total, 1)
        end = "\n" if done >= total else ""
        bar = "#" * filled + "." * (width - filled)
        line = f"\r[{bar}] {done}/{total} runs, {time.monotonic() - began:5.0f} s"
        print(line, end=end, file=sys.stderr, flush=True)

    return progress


def add_reproduce(sub: Subcommands) -> None:
    """Add `pgq-teach reproduce` to the command line."""
    rep = sub.add_parser("reproduce", help="re-measure the guide's figures here, each with a verdict")
    rep.add_argument(
        "--quick", action="store_true", help="smaller sizes where a figure scales (each such row says so)"
    )
    rep.add_argument("--only", help="figures to run, such as 1,6,18 (default: every figure measured here)")
    rep.add_argument(
        "--out", default="pgq-reproduce", help="folder for the Markdown and JSON (default pgq-reproduce)"
    )
    rep.add_argument(
        "--compare",
        action="store_true",
        help="run on the embedded PostgreSQL 16 and 18, side by side (needs the extra pg16)",
    )
    rep.epilog = "Exit 0: every must-reproduce figure reproduced; 1: one did not; 2: bad input; 130: stopped."
    rep.set_defaults(func=cmd_reproduce)


def cmd_reproduce(args: argparse.Namespace) -> int:
    out = checks.output_folder("--out", args.out)  # before the experiments' import, a second of CPU
    from .. import reproduce as rp
    from ..reproduce import runner, terminal

    figures = rp.parse_only(args.only)  # bad input: one line and exit 2, before anything runs
    if args.compare:
        runner.check_compare()
    bar = terminal.ProgressBar()

    def work(stop):
        if args.compare:
            return rp.compare(figures, quick=args.quick, progress=bar, stop=stop, on_server=bar.server)
        return rp.reproduce_here(figures, quick=args.quick, progress=bar, stop=stop)

    found, interrupted = terminal.run_until_done(work, say)
    bar.finish()
    say(found.text())
    for path in found.write(out):
        say(f"wrote {path}")
    if interrupted:
        return 130
    return 0 if found.ok else 1
