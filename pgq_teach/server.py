"""Which PostgreSQL the course uses, chosen in one place.

1. PGQ_DSN is set: that server, as it is.
2. Docker answers a ping within a second (or PGQ_BACKEND=docker): a
   testcontainers PostgresContainer, image $PGQ_IMAGE (postgres:18).
3. Otherwise the embedded PostgreSQL 18, which needs nothing installed.

PGQ_BACKEND=auto|dsn|docker|embedded forces the choice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from . import container, embedded
from .errors import SetupError
from .statements import run

BACKENDS = ("auto", "dsn", "docker", "embedded")
CONNECT_TIMEOUT = 5  # seconds; an unreachable PGQ_DSN must fail fast, not hang


@dataclass(frozen=True)
class Server:
    backend: str
    dsn: str
    version: str
    version_num: int
    origin: str = ""

    @property
    def major(self) -> int:
        return self.version_num // 10000

    @property
    def where(self) -> str:
        return describe(self.dsn)

    def line(self) -> str:
        """The one line every entry point prints."""
        via = f" ({self.origin})" if self.origin else ""
        return f"PostgreSQL {self.version} · backend {self.backend}{via} · {self.where}"

    def dsn_for(self, dbname: str) -> str:
        return make_conninfo(self.dsn, dbname=dbname)


def describe(dsn: str) -> str:
    """Where a connection string points, with any password masked."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "an unparseable PGQ_DSN"
    host = parts.get("host") or "localhost"
    home = os.path.expanduser("~")
    if host.startswith(home + os.sep):
        host = "~" + host[len(home):]  # the learner's own path stays out of shared notebooks
    place = f"socket {host}" if host.startswith("/") else f"{host}:{parts.get('port') or 5432}"
    user = parts.get("user") or "(default user)"
    secret = ":***" if parts.get("password") else ""
    return f"{user}{secret}@{place}/{parts.get('dbname') or user}"


def chosen_backend() -> str:
    value = os.environ.get("PGQ_BACKEND", "auto").strip().lower() or "auto"
    if value not in BACKENDS:
        raise SetupError(f"PGQ_BACKEND={value!r} is not one of: {', '.join(BACKENDS)}.")
    if value == "auto":
        if os.environ.get("PGQ_DSN"):
            return "dsn"
        return "docker" if container.engine_answers() else "embedded"
    return value


def _ways() -> str:
    return (
        "The three ways: set PGQ_DSN to a server you run; or PGQ_BACKEND=docker "
        "with a Docker engine; or unset both for the embedded PostgreSQL."
    )


def _probe(backend: str, dsn: str, origin: str = "") -> Server:
    try:
        with psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT, autocommit=True) as conn:
            version, num = run(conn, "admin/server_version").fetchone()
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SetupError(f"Cannot reach PostgreSQL at {describe(dsn)}: {first}. {_ways()}") from None
    return Server(backend, dsn, version.split()[0], num, origin)


@lru_cache(maxsize=1)
def get_server() -> Server:
    """Provision (or find) the server once per process."""
    backend = chosen_backend()
    if backend == "dsn":
        dsn = os.environ.get("PGQ_DSN")
        if not dsn:
            raise SetupError(f"PGQ_BACKEND=dsn, but PGQ_DSN is not set. {_ways()}")
        return _probe("dsn", dsn, os.environ.get("PGQ_ORIGIN", ""))
    if backend == "docker":
        dsn, image = container.start()
        return _probe("docker", dsn, image)
    return _probe("embedded", embedded.start())


def reset_choice() -> None:
    """Forget the cached choice (after changing PGQ_* variables)."""
    get_server.cache_clear()
