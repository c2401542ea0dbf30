"""The pgq-teach command: open the course, manage the embedded server, and
poke at a queue from a terminal."""

from __future__ import annotations

import argparse
import codecs
import collections
import json
import os
import random
import select
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from . import broker, checks, embedded, learner, queue, tables, tidy, workcopy
from .databases import database_name, open_database
from .errors import BadInput, PgqError, SetupError
from .faults.settings import FaultSettings, LoadSettings, RunSettings, S
from .interview.content import scenarios as interview_scenarios
from .psql import psql_command
from .server import chosen_backend, describe, get_server, start_server, wanted_backend
from .worker import Worker

DEFAULT_DB = "shop"


def _say(text: str) -> None:
    print(text, flush=True)


def _say_fitted(text: str) -> None:
    """Prose, wrapped to the terminal's width (a long line indents its continuation)."""
    _say(tables.fit(text, indent="  "))


def cmd_lab(args: argparse.Namespace) -> int:
    # Every option is checked before the server starts or a file is copied.
    if args.port is not None:
        checks.whole_number("--port", args.port, 1, 65_535)
    fresh = [workcopy.find_lesson("--fresh", text) for text in args.fresh or []]
    if args.dir is not None and fresh:
        raise BadInput("--fresh makes a new copy in your own folder; it does not go with --dir")
    folder = checks.existing_folder("--dir", args.dir) if args.dir is not None else None
    server = get_server()
    _say(server.line())
    if folder is None:
        folder = _learners_copy(fresh)
    _say("Stopping the lab (Ctrl-C) leaves PostgreSQL running; `pgq-teach server stop` ends it.")
    env = dict(os.environ)
    # Kernels reuse this server instead of provisioning their own.
    env["PGQ_DSN"] = server.dsn
    env["PGQ_BACKEND"] = "dsn"
    # JupyterLab's terminals inherit this PATH: `pgq-teach psql 02` (lesson 02) works there as typed.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PGQ_ORIGIN"] = (
        f"{server.backend}{' ' + server.origin if server.origin else ''}, chosen by pgq-teach lab"
    )
    argv = [sys.executable, "-m", "pgq_teach.jupyter", f"--notebook-dir={folder}"]  # `jupyter lab`, quicker
    argv += [f"--port={args.port}"] if args.port else []
    argv += ["--no-browser"] if args.no_browser else []
    # Jupyter refuses root without this; containers and CI machines run as root.
    argv += ["--ServerApp.allow_root=True"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    argv += args.jupyter_args
    os.execvpe(argv[0], argv, env)
    return 0  # not reached


def _learners_copy(fresh: list[str]) -> Path:
    """The learner's working copy (workcopy.py): new lessons copied, each --fresh lesson
    copied anew with the old copy kept aside, and a line for any newer course version."""
    for slug in fresh:
        kept = workcopy.fresh(slug)
        _say(f"a fresh copy of {slug}" + (f"; your earlier one is {kept}" if kept else ""))
    report = workcopy.prepare()
    for line in report.lines():
        _say(line)
    return report.folder


def _server_stop() -> None:
    """Stop what pgq-teach started for the chosen backend (in auto: its container and the
    embedded server). A PGQ_DSN server is never touched."""
    from . import container

    wanted = wanted_backend()
    if wanted == "dsn" or (wanted == "auto" and os.environ.get("PGQ_DSN")):
        _say(
            f"the PGQ_DSN server ({describe(os.environ.get('PGQ_DSN', ''))}) is yours to stop; "
            "pgq-teach leaves it alone"
        )
        return
    if wanted in ("auto", "docker"):
        if container.stop():
            _say(f"removed the container {container.name()} (its data goes with it)")
        elif wanted == "docker" or container.engine_answers():
            _say(f"no container {container.name()} was running")
    if wanted in ("auto", "embedded"):
        _say(
            "stopped the embedded PostgreSQL"
            if embedded.stop()
            else "the embedded PostgreSQL was not running"
        )
    if broker.Broker().stop():
        _say("stopped the NATS broker (lesson 11)")


def _server_status() -> int:
    """Report on the server the course would use, without starting one. Exit 1 if it is not up."""
    from . import container

    backend = chosen_backend()
    if backend == "dsn":
        dsn = os.environ.get("PGQ_DSN", "")
        try:
            found = get_server()
        except PgqError as exc:
            _say(f"PGQ_DSN server ({describe(dsn)}): not reachable. {exc}")
            return 1
        _say(f"PGQ_DSN server: up, {found.line()}")
        return 0
    if backend == "docker":
        st = container.status()
        if not st["engine"]:
            _say(
                "docker: no Docker engine answers; start Docker, "
                "or unset PGQ_BACKEND for the embedded PostgreSQL"
            )
            return 1
        if st["running"]:
            _say(f"docker: container {st['name']} running ({st['image']})")
            return 0
        _say(
            f"docker: no container {st['name']} running (image {container.image()}); "
            "`pgq-teach server start` starts one"
        )
        if wanted_backend() == "docker":
            return 1
        _say("(in auto, a start falls back to the embedded PostgreSQL if that image cannot be had)")
    st = embedded.status()
    state = f"running (pid {st['pid']})" if st["running"] else "stopped"
    if st["another_install"]:
        state += f", but {st['another_install']}: `pgq-teach server start` restarts it from this install"
    _say(f"embedded PostgreSQL: {state}; data in {st['data_dir']}")
    return 0 if st["running"] or backend == "docker" else 1


def cmd_server(args: argparse.Namespace) -> int:
    if args.action == "stop":
        _server_stop()
        return 0
    if args.action == "status":
        return _server_status()
    if args.action == "restart":
        return _server_restart()
    server = start_server() if args.action == "start" else get_server()
    _say(server.dsn if args.action == "url" else server.line())
    return 0


def cmd_broker(args: argparse.Namespace) -> int:
    """`pgq-teach broker start|status|stop`: lesson 11's NATS server with JetStream."""
    the_broker = broker.Broker()
    if args.action == "stop":
        _say("stopped the NATS broker" if the_broker.stop() else "the NATS broker was not running")
        return 0
    if args.action == "status":
        st = the_broker.status()
        _say(st.line() if broker.binary() else broker.missing_line())
        return 0 if st.running else 1
    if not broker.available():
        raise SetupError(broker.missing_line())
    _say(the_broker.start().line())
    return 0


def _server_restart() -> int:
    """A fast restart of the server in use (the fault tests use it through PGQ_RESTART_CMD)."""
    from . import container

    server = get_server()
    if server.backend == "embedded":
        embedded.restart()
    elif server.backend == "docker":
        container.restart()
    else:
        raise SetupError(f"pgq-teach does not restart a {server.backend} server; its operator does.")
    _say(f"restarted: {server.line()}")
    return 0


def cmd_psql(args: argparse.Namespace) -> int:
    command = psql_command(args.lesson, args.extra_args)
    _say(command.server_line)
    _say(
        f"psql on database {command.database}; try: \\set batch 1  \\set lease '5 minutes'  \\i sql/claim.sql"
    )
    os.chdir(command.cwd)  # so \i sql/NAME.sql finds the course's files
    os.execv(command.argv[0], command.argv)
    return 0  # not reached


def cmd_clean(args: argparse.Namespace) -> int:
    """`pgq-teach clean [--all]`: drop the course's databases and let the WAL go."""
    backend = chosen_backend()
    if backend != "embedded" and not args.this_server:
        raise BadInput(
            f"clean drops databases, and the {backend} server is not one pgq-teach started here: "
            "add --this-server to drop the course's pgq_ databases on it"
        )
    if args.all and backend != "embedded":
        raise BadInput("--all removes the embedded server's data folder; this server is not the embedded one")
    holder = tidy.learner_home_inside(tidy.removed_by_all()) if args.all else None
    if holder is not None:
        raise BadInput(
            f"--all would remove {holder}, and your progress and copy of the lessons are in it "
            f"({learner.home()}): set PGQ_HOME to a folder outside it first"
        )
    folder = embedded.data_dir()
    if args.all:  # ask before anything is dropped: a no leaves every database as it was
        question = (
            f"stop PostgreSQL and remove {folder}, every database in it, and the broker's store? [y/N] "
        )
        if not args.yes and not _confirmed(question):
            _say(f"left {folder} as it was")
            return 1
    stopped = backend == "embedded" and not embedded.status()["running"]
    if stopped and not args.all and (not folder.is_dir() or not any(folder.iterdir())):
        _say(f"no embedded PostgreSQL in {folder} yet: nothing to clean")
        return 0
    server = get_server()  # started, if it was stopped: dropping a database needs it
    try:
        _say(server.line())
        _say(tidy.clean(server).line())
    finally:
        if stopped and not args.all:  # leave it as clean found it, unless someone came meanwhile
            _say(tidy.stop_if_alone(server))
    if not args.all:
        return 0
    the_broker = broker.Broker()
    if the_broker.stop():
        _say("stopped the NATS broker (lesson 11)")
    if the_broker.store.is_dir():
        _say(
            f"removed lesson 11's broker store {the_broker.store} ({tidy.mib(tidy.remove(the_broker.store))})"
        )
    folder, size = tidy.remove_data_folder()
    _say(f"stopped the embedded PostgreSQL and removed {folder} ({tidy.mib(size)})")
    return 0


def _confirmed(question: str) -> bool:
    """Ask on the terminal; no terminal, or anything but y/yes, is a no."""
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:
        return False


def cmd_enqueue(args: argparse.Namespace) -> int:
    # Every argument is checked before any database is touched.
    payload = checks.json_argument("PAYLOAD", args.payload)
    checks.job_payload_text(payload)
    checks.job_kind(args.kind)
    delay = checks.delay("--delay", args.delay)
    checks.whole_number("--max-attempts", args.max_attempts, 1, queue.MAX_ATTEMPTS)
    db = open_database(args.db)
    _say(db.server.line())
    with db.connection() as conn:
        job_id = queue.enqueue(conn, args.kind, payload, run_at=delay, max_attempts=args.max_attempts)
    _say(f"enqueued job {job_id} ({args.kind}) in database {db.name}")
    return 0


def demo_handler(sleep_ms: int, fail_rate: float):
    """A handler that sleeps, and fails on request or at random."""

    def handle(job: queue.Job) -> None:
        time.sleep(sleep_ms / 1000)
        if (isinstance(job.payload, dict) and job.payload.get("fail")) or random.random() < fail_rate:
            raise RuntimeError("demo failure, as requested")

    return handle


def cmd_worker(args: argparse.Namespace) -> int:
    checks.number("--fail-rate", args.fail_rate, 0, 1)  # refuse before touching any database
    checks.whole_number("--sleep-ms", args.sleep_ms, 0, 3_600_000)
    for kind in args.kind or []:
        checks.job_kind(kind)
    checks.lease(args.lease)  # the Worker checks these too, but only after the database is made
    checks.whole_number("--batch", args.batch, 1, queue.MAX_BATCH)
    checks.seconds("--poll", args.poll, 0.001, 86_400)
    checks.whole_number("--concurrency", args.concurrency, 1, 1_000)
    if checks.whole_number("--processes", args.processes, 1, 64) > 1:
        return _worker_processes(args)
    db = open_database(args.db)
    _say(db.server.line())
    handle = demo_handler(args.sleep_ms, args.fail_rate)
    kinds = args.kind or ["send_receipt", "build_invoice", "call_webhook"]
    worker = Worker(
        db.dsn,
        {k: handle for k in kinds},
        concurrency=args.concurrency,
        lease=args.lease,
        batch=args.batch,
        poll=args.poll,
    )
    worker.stop_on_sigterm()
    _say(
        f"worker on {db.name} for {', '.join(kinds)}, {tables.count(args.concurrency, 'executor')}; "
        "Ctrl-C or SIGTERM stops it"
    )
    try:
        report = worker.run(until_idle=args.until_idle)
    except KeyboardInterrupt:
        report = worker.report
    _say(
        f"claimed {report.claimed}, done {report.done}, retried {report.retried}, "
        f"dead {report.dead}, fenced {report.fenced}, reconnects {report.reconnects}"
    )
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    db = open_database(args.db)
    _say(db.server.line())
    with db.connection() as conn:
        _say(f"{db.name}: {queue.stats(conn)}")
    return 0


def cmd_progress(args: argparse.Namespace) -> int:
    from .exercises import EXERCISES, done

    passed = done()
    rows = []
    for lesson in sorted({e.lesson for e in EXERCISES.values()}):
        keys = [k for k, e in EXERCISES.items() if e.lesson == lesson]
        mark = "done" if all(passed[k] for k in keys) else f"{sum(passed[k] for k in keys)} of {len(keys)}"
        rows += [
            [f"{lesson}: {mark}" if i == 0 else "", k, passed[k], EXERCISES[k].title]
            for i, k in enumerate(keys)
        ]
    _say(tables.Table(tables.columns("lesson", "exercise", "passed", "what it asks"), rows).text())
    _say(f"{sum(passed.values())} of {tables.count(len(passed), 'exercise')} passed")
    return 0


def _typed(kind):
    """An argparse type: a number in plain ASCII digits (checks.number_text), so
    "３" or "1_0" is refused, not read as 3 or 10. Other text argparse refuses
    as it always does ("invalid int value: 'two'")."""

    def parse(text: str):
        if not text.isascii() or "_" in text:
            what = "whole number" if kind is int else "number"
            raise argparse.ArgumentTypeError(f"{text!r} is not a {what} in plain digits 0-9")
        return checks.number_text(text, kind)

    parse.__name__ = kind.__name__
    return parse


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


def _progress_line(every: float = 5.0):
    """A progress(done, total) that prints a line every `every` seconds."""
    began = time.monotonic()
    last = [began]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= every or done >= total:
            last[0] = now
            _say(f"  {now - began:6.1f} s  {done:,}/{total:,} jobs done or dead")

    return progress


def _run_in_fresh_database(
    args: argparse.Namespace, what: str, start: Callable[..., Any], settings: RunSettings, details: str
) -> int:
    """Reset the run's own database (--db), say what runs, run it with Ctrl-C
    stopping every worker process, print its report; exit 1 if an invariant
    failed. The settings were checked before: bad options never reach a database."""
    db = open_database(args.db, reset=True)
    _say(db.server.line())
    _say(f"{what} in database {db.name}: {details}; Ctrl-C stops it")
    try:
        report = start(db, settings, progress=_progress_line())
    except KeyboardInterrupt:
        _say("interrupted: every worker process was stopped")
        return 130
    _say(report.summary())
    return 0 if report.ok else 1


def _worker_processes(args: argparse.Namespace) -> int:
    """`--processes M`: M worker processes, each this command with one
    process; SIGTERM and Ctrl-C reach them all, and each prints its own report."""
    import signal
    import subprocess

    argv = ["worker", "--db", args.db, "--sleep-ms", str(args.sleep_ms), "--fail-rate", str(args.fail_rate)]
    argv += ["--lease", str(args.lease), "--batch", str(args.batch), "--poll", str(args.poll)]
    argv += ["--concurrency", str(args.concurrency)] + (["--until-idle"] if args.until_idle else [])
    argv += [f"--kind={kind}" for kind in args.kind or []]
    children = [
        subprocess.Popen([sys.executable, "-m", "pgq_teach.cli", *argv]) for _ in range(args.processes)
    ]

    def stop_all(*_: object) -> None:
        for child in children:
            child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop_all)
    try:
        codes = [child.wait() for child in children]
    except KeyboardInterrupt:
        codes = [child.wait() for child in children]  # the terminal sent each child its own SIGINT
    return max(codes)


def cmd_fault_run(args: argparse.Namespace) -> int:
    from .faults import run_faults

    s = _settings(FaultSettings, args)
    details = (
        f"{s.jobs:,} jobs due over {s.seconds:g} s, {s.workers} worker processes, "
        f"dead jobs requeued every {s.requeue_every:g} s"
    )
    return _run_in_fresh_database(args, "fault run", run_faults, s, details)


def cmd_load(args: argparse.Namespace) -> int:
    from .faults import run_load

    s = _settings(LoadSettings, args)
    details = (
        f"{s.jobs:,} jobs, {s.workers} worker processes, {s.fail_rate:.0%} of calls "
        "raising; the retries alone take over 60 s"
    )
    return _run_in_fresh_database(args, "load run", run_load, s, details)


def _settings(settings: type[S], args: argparse.Namespace) -> S:
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
}


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
        shown = f"{default:,}" if isinstance(default, int) else f"{default:g}"
        flag, text = f"--{name.replace('_', '-')}", f"{RUN_OPTIONS[name]} (default {shown})"
        sp.add_argument(flag, type=_typed(type(default)), default=argparse.SUPPRESS, help=text)
    sp.add_argument("--db", default=label, help=f"database label (default pgq_{label}; reset first)")


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


def cmd_interview(args: argparse.Namespace) -> int:
    """The interview rehearsal on stdin/stdout; no database needed. It continues
    the open rehearsal (the notebook's too) until the learner types finish."""
    from .interview.estimation import fmt
    from .interview.rehearsal import Rehearsal
    from .interview.render import summary_html, summary_markdown
    from .interview.terminal import rehearse_in_terminal

    if args.summary:
        _say(summary_markdown())
        return 0
    if args.html is not None:  # an empty name is refused, not taken for "no --html"
        path = checks.output_file("--html", args.html)
        page = "<!doctype html><meta charset='utf-8'><title>The job queue on one page</title>"
        try:
            path.write_text(page + summary_html(), encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"--html: cannot write {path} ({exc.strerror})") from None
        _say(f"wrote the one-page summary to {path}; open it in a browser and print it")
        return 0
    if args.minutes is not None:
        try:
            args.minutes = float(args.minutes)
        except ValueError:
            raise BadInput(f"minutes must be 5 to 180, got {args.minutes!r}") from None
    rehearsal = Rehearsal(scenario=args.scenario, minutes=args.minutes)
    if args.scenario and rehearsal.current["scenario"] != args.scenario:
        _say_fitted(
            f"(your open rehearsal is {rehearsal.scenario.title!r}: it continues; "
            f"finish it to start {args.scenario})"
        )
    if args.minutes is not None and rehearsal.current.get("minutes") != args.minutes:
        _say_fitted(f"(your open rehearsal keeps its {fmt(rehearsal.current['minutes'])} minutes)")

    record = rehearse_in_terminal(TerminalInput(), _say_fitted, rehearsal)
    return 0 if record is not None else 1


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


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import check_inputs, run_bench

    jobs, repeats, samples = (300, 2, 10) if args.quick else (args.jobs, args.repeats, args.samples)
    check_inputs(jobs=jobs, repeats=repeats, samples=samples)  # before the first line, not inside the run
    # Checked before the run, so a bad path cannot throw the whole run away at the end.
    default = time.strftime("bench-%Y%m%d-%H%M%S.json")
    out = checks.output_file("--json", default if args.json is None else args.json)
    _say_fitted(
        f"bench: every setup {repeats} times, interleaved, {jobs:,} no-op jobs per run, each on a fresh "
        f"database; Ctrl-C stops it"
    )
    try:
        result = run_bench(jobs=jobs, repeats=repeats, samples=samples, progress=_bar())
    except KeyboardInterrupt:
        _say("interrupted")
        return 130
    _say(result.summary())
    try:
        out.write_text(json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:  # a full disk, or a device: the summary above keeps the figures
        raise SetupError(
            f"--json: could not write {out} ({exc.strerror}); the summary above has the figures"
        ) from None
    _say(f"JSON: {out}")
    return 0 if result.ok else 1


def cmd_reproduce(args: argparse.Namespace) -> int:
    out = checks.output_folder("--out", args.out)  # before the experiments' import, a second of CPU
    from . import reproduce as rp
    from .reproduce import runner, terminal

    figures = rp.parse_only(args.only)  # bad input: one line and exit 2, before anything runs
    if args.compare:
        runner.check_compare()
    bar = terminal.ProgressBar()

    def work(stop):
        if args.compare:
            return rp.compare(figures, quick=args.quick, progress=bar, stop=stop, on_server=bar.server)
        return rp.reproduce_here(figures, quick=args.quick, progress=bar, stop=stop)

    found, interrupted = terminal.run_until_done(work, _say)
    bar.finish()
    _say(found.text())
    for path in found.write(out):
        _say(f"wrote {path}")
    if interrupted:
        return 130
    return 0 if found.ok else 1


class Parser(argparse.ArgumentParser):
    """argparse, with its refusals in one line (and exit code 2, as argparse gives), and no
    abbreviations: `--max-att 3` is refused, not read as --max-attempts (nor would a new
    option quietly change what an old abbreviation meant)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def joined_negative_values(argv: list[str]) -> list[str]:
    """`--delay -1e12` as `--delay=-1e12`: argparse takes a value that starts
    with "-" and is not a plain integer or decimal for an option, and would
    say "expected one argument" instead of refusing the number itself."""
    out: list[str] = []
    for token in argv:
        if (
            out
            and out[-1].startswith("--")
            and "=" not in out[-1]
            and token.startswith("-")
            and _is_number(token)
        ):
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class DefaultsShown(argparse.HelpFormatter):
    """Help that ends each option's text with its default, unless the text already gives it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        unset = (
            action.default is None or isinstance(action.default, bool) or action.default == argparse.SUPPRESS
        )
        # a flag (store_true, or --no-restart storing False) says what it does; "default True" would mislead
        if "default" in text or unset or not action.option_strings:
            return action.help
        return f"{text} (default %(default)s)"


def parser() -> argparse.ArgumentParser:
    """The command line: a subcommand each for lab, server, enqueue, worker, stats, fault-run, load, ..."""
    p = Parser(prog="pgq-teach", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    lab = sub.add_parser("lab", help="open the course in JupyterLab on a live PostgreSQL")
    lab.add_argument(
        "--port", type=_typed(int), help="JupyterLab's port (default 8888, or the next free one)"
    )
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

    srv = sub.add_parser("server", help="the PostgreSQL the course uses")
    srv.add_argument(
        "action",
        choices=["start", "stop", "status", "url", "restart"],
        help="start: find or start the server and print the backend line; stop: stop what "
        "pgq-teach started (the embedded server, the course's container), never a PGQ_DSN "
        "server; status: is the server the course would use up; url: print the connection "
        "string; restart: a fast restart of the embedded server or the container",
    )
    srv.set_defaults(func=cmd_server)

    brk = sub.add_parser("broker", help="lesson 11's broker: a NATS server with JetStream on 127.0.0.1")
    brk.add_argument(
        "action",
        choices=["start", "status", "stop"],
        help="start: start it (or find it running) on a free port and print its line; status: its line "
        "(exit 1 if it is not running); stop: stop it (server stop stops it too)",
    )
    brk.set_defaults(func=cmd_broker)

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

    def db_option(sp):
        sp.add_argument(
            "--db", default=DEFAULT_DB, help=f"database label (default {DEFAULT_DB} -> pgq_{DEFAULT_DB})"
        )

    enq = sub.add_parser("enqueue", help="add one job")
    enq.add_argument("kind", help="the job's kind, for example send_receipt")
    enq.add_argument("payload", help="the job's JSON payload, for example '{\"order_id\": 101}'")
    enq.add_argument(
        "--delay",
        type=_typed(float),
        help="seconds from now before it may run, up to a year (default 0: now)",
    )
    enq.add_argument("--max-attempts", type=_typed(int), default=5, help="tries before the job goes dead")
    db_option(enq)
    enq.set_defaults(func=cmd_enqueue)

    wrk = sub.add_parser("worker", help="run a demo worker whose handlers sleep, or fail on request")
    wrk.add_argument(
        "--kind", action="append", help="a kind to handle (repeatable; default: the store's three)"
    )
    wrk.add_argument("--sleep-ms", type=_typed(int), default=10, help="work per job in milliseconds")
    wrk.add_argument(
        "--fail-rate", type=_typed(float), default=0.0, help="fraction of calls that raise (0..1)"
    )
    wrk.add_argument("--lease", type=_typed(float), default=300.0, help="lease in seconds")
    wrk.add_argument("--batch", type=_typed(int), default=1, help="jobs per claim")
    wrk.add_argument(
        "--concurrency",
        type=_typed(int),
        default=1,
        help="executor threads in each process (handlers that wait)",
    )
    wrk.add_argument(
        "--processes",
        type=_typed(int),
        default=1,
        help="worker processes (for handlers that keep a CPU busy)",
    )
    wrk.add_argument("--poll", type=_typed(float), default=5.0, help="fallback poll in seconds")
    wrk.add_argument("--until-idle", action="store_true", help="exit when nothing is due")
    db_option(wrk)
    wrk.set_defaults(func=cmd_worker)

    sts = sub.add_parser("stats", help="jobs by status, oldest due wait, dead row versions")
    db_option(sts)
    sts.set_defaults(func=cmd_stats)
    tor = sub.add_parser(
        "fault-run",
        aliases=["torture"],
        help="the fault run: kill, freeze and cut off workers, restart the server, requeue "
        "dead jobs, then check that nothing was lost or done twice (alias: torture)",
    )
    names = (
        "jobs workers seconds lease kill_every terminate_every pause_every requeue_every restart "
        "concurrency batch long_every beat_kill_every"
    )
    _run_options(tor, FaultSettings, "fault_run", names)
    tor.set_defaults(func=cmd_fault_run)

    cln = sub.add_parser(
        "clean",
        help="drop the course's databases (pgq_...) and let the WAL go, saying how much it freed",
    )
    cln.add_argument(
        "--all",
        action="store_true",
        help="then also stop the embedded PostgreSQL and remove its data folder (asks first)",
    )
    cln.add_argument("--yes", action="store_true", help="do not ask before --all removes the folder")
    cln.add_argument(
        "--this-server",
        action="store_true",
        help="clean on a PGQ_DSN server or the Docker container too (only its pgq_ databases)",
    )
    cln.epilog = (
        "A database a session still uses (an open notebook) is kept, and named. Your progress, "
        "answers and copy of the lessons are in your data folder, which clean never touches."
    )
    cln.set_defaults(func=cmd_clean)

    prg = sub.add_parser("progress", help="which lessons' exercises you have passed")
    prg.set_defaults(func=cmd_progress)

    lod = sub.add_parser("load", help="the load run: many workers, planned failures, retries and dead jobs")
    _run_options(lod, LoadSettings, "load", "jobs workers fail_rate max_attempts seed")
    lod.set_defaults(func=cmd_load)

    itv = sub.add_parser(
        "interview", help="rehearse the system-design interview answer, timed, in the terminal"
    )
    itv.add_argument(  # checked by the rehearsal, so a wrong one is one line, not argparse's usage
        "--scenario",
        help="the interviewer's scenario for a new rehearsal: "
        f"{', '.join(sorted(interview_scenarios()))} (default: drawn at random)",
    )
    itv.add_argument(  # a string, read by cmd_interview, so 'abc' is one line like '0' is
        "--minutes", help="the time for the whole rehearsal, 5 to 180 (default about 45)"
    )
    itv.add_argument("--summary", action="store_true", help="print the one-page summary (markdown) and exit")
    itv.add_argument(
        "--html", metavar="FILE", help="write the one-page summary as printable HTML to FILE and exit"
    )
    itv.set_defaults(func=cmd_interview)

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
    for command in sub.choices.values():  # every subcommand's --help shows its defaults
        command.formatter_class = DefaultsShown
    return p


LAB_OPTIONS = ("--port", "--no-browser", "--dir", "--fresh")


def _abbreviates(word: str, options: tuple[str, ...]) -> bool:
    """True if `word` is a shortened form of one of `options` (`--no-b` for --no-browser),
    which lab must refuse rather than pass on to jupyter lab."""
    name = word.split("=", 1)[0]
    return name.startswith("--") and len(name) > 2 and any(o.startswith(name) and o != name for o in options)


def split_psql(argv: list[str]) -> tuple[list[str], list[str]]:
    """`psql [LESSON] [psql's own options]`: pgq-teach's part (the lesson and
    --help) and the rest, passed on to psql as typed. Only a first word that is
    not an option is a lesson, so `psql -c "select 1"` goes to the shop database."""
    ours = argv[:1] if argv and not argv[0].startswith("-") else []
    rest = argv[len(ours) :]
    if any(a in ("-h", "--help") for a in rest[:1]):
        ours, rest = [*ours, rest[0]], rest[1:]
    return ours, rest


def main(argv: list[str] | None = None) -> int:
    """Run one command; a PgqError is one line on stderr and exit code 2, never a traceback."""
    argv = sys.argv[1:] if argv is None else list(argv)
    p = parser()
    passed_on: list[str] = []
    if argv[:1] == ["psql"]:  # psql's options are psql's: parse only ours
        ours, passed_on = split_psql(argv[1:])
        argv = ["psql", *ours]
    args, extra = p.parse_known_args(joined_negative_values(argv))
    if extra and (args.command != "lab" or any(_abbreviates(word, LAB_OPTIONS) for word in extra)):
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


if __name__ == "__main__":
    sys.exit(main())
