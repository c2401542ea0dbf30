"""Each lesson works in its own database, and the tests in theirs, so they run
in any order and never touch the learner's own tables."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg

from .errors import BadInput, SetupError
from .infra.server import Server, get_server
from .statements import run

PREFIX = "pgq_"
TAG_VARIABLE = "PGQ_DB_TAG"  # set by each parallel test worker (tests/conftest.py), unset for everyone else


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def database_name(label: str) -> str:
    """pgq_ plus the label in lower case, as a safe identifier. Where
    $PGQ_DB_TAG is set (a parallel test worker), the tag ends every name, so
    two workers never share a database; a label that already ends with it
    (read back from a name) keeps a single tag."""
    if not isinstance(label, str) or not label.strip():
        raise BadInput(f"a database label must be a non-empty string, got {label!r}")
    slug = _slug(label)
    if not slug or not label.isascii():
        raise BadInput(
            "a database label is letters a-z, digits, '-' and '_', such as shop or 02-row-locks; "
            f"got {label!r}"
        )
    tag = _slug(os.environ.get(TAG_VARIABLE, ""))
    if not tag:
        return (PREFIX + slug)[:63]
    ending = "_" + tag
    slug = slug.removesuffix(ending)
    return (PREFIX + slug)[: 63 - len(ending)] + ending


@dataclass(frozen=True)
class Database:
    """One database on the course's server: its name, how to connect, and the server it lives on."""

    name: str
    dsn: str
    server: Server

    def connect(self, *, autocommit: bool = True, **kwargs: Any) -> psycopg.Connection:
        """A new connection (autocommit unless told otherwise); the caller closes it."""
        kwargs.setdefault("connect_timeout", 5)
        return psycopg.connect(self.dsn, autocommit=autocommit, **kwargs)

    @contextmanager
    def connection(self, **kwargs: Any) -> Iterator[psycopg.Connection]:
        """A connection for a `with` block, closed when the block ends."""
        conn = self.connect(**kwargs)
        try:
            yield conn
        finally:
            conn.close()

    def apply(self, statement: str) -> None:
        """Run a statement that takes no parameters, such as schema.sql."""
        with self.connection() as conn:
            run(conn, statement)


def _maintenance_connection(server: Server) -> psycopg.Connection:
    """A connection to the server's own database, to create and drop the lessons' databases."""
    return psycopg.connect(server.dsn, autocommit=True, connect_timeout=5)


def _create(conn: psycopg.Connection, name: str) -> None:
    allowed, role = run(conn, "admin/can_create_database").fetchone() or (False, "(unknown)")
    if not allowed:
        raise SetupError(
            f"Role {role!r} cannot create databases, and each lesson needs its own. "
            f"As a superuser run: ALTER ROLE {role} CREATEDB;"
        )
    try:
        run(conn, "admin/create_database", idents={"name": name})
    except psycopg.errors.DuplicateDatabase:
        pass  # another process made it first


def open_database(
    label: str, *, reset: bool = False, schema: bool = True, server: Server | None = None
) -> Database:
    """The database for `label`, created if missing, emptied if `reset`,
    with the course's tables in place; on `server` (the lessons' server if None)."""
    name = database_name(label)
    server = server or get_server()
    with _maintenance_connection(server) as conn:
        if reset:
            run(conn, "admin/drop_database", idents={"name": name})
        if not run(conn, "admin/database_exists", {"name": name}).fetchone():
            _create(conn, name)
    db = Database(name, server.dsn_for(name), server)
    if schema:
        db.apply("schema")
    return db


def existing_database(label: str) -> Database | None:
    """The database for `label` on the lessons' server if it exists, else None; never
    creates one (a command that only reads, such as `stats`, must not make a typo's database)."""
    name = database_name(label)
    server = get_server()
    with _maintenance_connection(server) as conn:
        if not run(conn, "admin/database_exists", {"name": name}).fetchone():
            return None
    return Database(name, server.dsn_for(name), server)


def course_labels() -> list[str]:
    """The labels of the course's databases on the lessons' server, by name."""
    with _maintenance_connection(get_server()) as conn:
        names = [row[0] for row in run(conn, "admin/course_databases", {"prefix": PREFIX})]
    return [name.removeprefix(PREFIX) for name in names]


def clone_database(label: str, template: Database, admin: psycopg.Connection | None = None) -> Database:
    """The database for `label`, made anew as a copy of `template` (its tables
    and rows): much quicker than creating one and applying schema.sql, so the
    tests clone each of theirs from one template made per run. `admin`: an
    autocommit connection to the template's server to use (the tests keep one:
    two new sessions per test cost the server about as much as the copy)."""
    name = database_name(label)
    with contextlib.ExitStack() as own:
        conn = admin or own.enter_context(_maintenance_connection(template.server))
        run(conn, "admin/drop_database", idents={"name": name})
        run(conn, "admin/clone_database", idents={"name": name, "template": template.name})
    return Database(name, template.server.dsn_for(name), template.server)


def drop_database(
    label: str, admin: psycopg.Connection | None = None, *, server: Server | None = None
) -> None:
    """Drop the database for `label`, if it exists (through `admin`, as for clone_database;
    else on `server`, the lessons' server if None)."""
    name = database_name(label)
    with contextlib.ExitStack() as own:
        conn = admin or own.enter_context(_maintenance_connection(server or get_server()))
        run(conn, "admin/drop_database", idents={"name": name})
