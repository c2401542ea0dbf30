"""`pgq-teach clean`: give back the disk the course took.

Every database the course makes is named with `databases.PREFIX` (pgq_): the
lessons', the Your-turn scratch databases, the runs' and the tests'. Clean drops
those and no other, each only if no session is connected to it (an open
notebook keeps its database, and says so). Then a CHECKPOINT makes the WAL
written so far unneeded; the embedded server, with wal_recycle off
(`embedded.bound_wal`, behind `infra.server`), removes those segment files rather than keeping them
for reuse, so one is left.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from .. import tables
from ..databases import PREFIX
from ..statements import run, run_one
from . import broker, learner
from .server import Server, checker_data, checker_folder, data_folder, stop_checker, stop_server

NAMES_SHOWN = 10  # databases named in clean's line; after an aborted test run there can be hundreds


@dataclass
class Cleaned:
    """What clean did: the databases dropped and kept, and the bytes before and after."""

    dropped: list[str] = field(default_factory=list)
    in_use: list[str] = field(default_factory=list)
    not_owned: list[str] = field(default_factory=list)  # another role's, on a shared server
    before: int = 0  # the data folder (embedded), or the course's databases (any other server)
    after: int = 0
    measured: str = "the data folder"
    wal_note: str = ""

    @property
    def freed(self) -> int:
        return max(self.before - self.after, 0)

    def line(self) -> str:
        """One line: what was dropped and how much it freed."""
        # Each by name (the first ten): anything named pgq_ counts as the course's, one made by
        # hand too. repr-quoted only where a name needs it, so no name can break the line.
        shown = [n if n.isprintable() else repr(n) for n in self.dropped[:NAMES_SHOWN]]
        more = len(self.dropped) - len(shown)
        named = f" ({', '.join(shown)}{f', and {more} more' if more else ''})" if shown else ""
        text = (
            f"dropped {tables.count(len(self.dropped), 'course database')}{named}; freed {mib(self.freed)} "
            f"({self.measured}: {mib(self.before)} before, {mib(self.after)} after)"
        )
        if self.in_use:
            close = tables.plural(len(self.in_use), "its notebook", "their notebooks")
            text += f"; kept {len(self.in_use)} in use ({', '.join(self.in_use)}): close {close}"
        if self.not_owned:
            text += f"; left {len(self.not_owned)} another role owns ({', '.join(self.not_owned)})"
        return text + self.wal_note


def mib(size: int) -> str:
    """Bytes as MB (2^20), the unit du -m and PostgreSQL's settings use."""
    return f"{size / 2**20:,.1f} MB"


def folder_size(path: Path) -> int:
    """The bytes the files under `path` take (files that vanish while it counts are skipped)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def course_databases(conn: psycopg.Connection) -> list[tuple[str, int]]:
    """The course's databases on this server, with their sizes in bytes."""
    return [(name, size) for name, size in run(conn, "admin/course_databases", {"prefix": PREFIX})]


def clean(server: Server) -> Cleaned:
    """Drop every course database no session uses, then checkpoint the WAL away."""
    embedded_here = server.backend == "embedded"
    folder = data_folder()
    result = Cleaned(measured="the data folder" if embedded_here else "the course's databases")
    with psycopg.connect(server.dsn, autocommit=True, connect_timeout=5) as conn:
        found = course_databases(conn)
        result.before = folder_size(folder) if embedded_here else sum(size for _, size in found)
        for name, size in found:
            try:
                run(conn, "admin/drop_idle_database", idents={"name": name})
                result.dropped.append(name)
            except psycopg.errors.ObjectInUse:
                result.in_use.append(name)
                result.after += 0 if embedded_here else size
            except psycopg.errors.InsufficientPrivilege:  # only its owner (or a superuser) may drop it
                result.not_owned.append(name)
                result.after += 0 if embedded_here else size
        result.wal_note = _let_wal_go(conn)
        if embedded_here:
            result.after = folder_size(folder)
    return result


def stop_if_alone(server: Server) -> str:
    """Stop the embedded server clean started, unless another client session has come
    meanwhile (a notebook, `pgq-teach lab`): one line saying which."""
    with psycopg.connect(server.dsn, autocommit=True, connect_timeout=5) as conn:
        (others,) = run_one(conn, "admin/other_client_sessions")
    if others:
        came = tables.count(others, "other session")
        return f"left the embedded PostgreSQL running: {came} connected meanwhile"
    stop_server()
    return "stopped the embedded PostgreSQL again, as clean found it"


def _let_wal_go(conn: psycopg.Connection) -> str:
    """CHECKPOINT; a note if the role may not."""
    try:
        run(conn, "admin/checkpoint")
    except psycopg.errors.InsufficientPrivilege:
        return "; no CHECKPOINT (this role may not), so the WAL goes at the server's next one"
    return ""


def clean_checker() -> str:
    """Stop the checker and give its copy back to its template's size (the next check starts
    it afresh anyway): one line, or "" when there was nothing to do."""
    folder = checker_folder()
    if not folder.is_dir():
        return ""
    before = folder_size(folder)
    was_running = stop_checker()
    data = checker_data()
    if data.is_dir():
        shutil.rmtree(data, ignore_errors=True)
    freed = max(before - folder_size(folder), 0)
    if not was_running and not freed:
        return ""
    stopped = "stopped the checker and " if was_running else "the checker: "
    return f"{stopped}emptied its scratch copy: freed {mib(freed)} ({folder})"


def removed_by_all() -> list[Path]:
    """The folders `clean --all` removes: the data folder, the checker's folder and the broker
    store beside it (none for a data folder with no name, /, which the server refuses anyway)."""
    folder = data_folder()
    return [folder, checker_folder(), broker.default_store()] if folder.name else [folder]


def learner_home_inside(folders: list[Path]) -> Path | None:
    """The folder among `folders` that holds the learner's home (PGQ_HOME set inside
    PGQ_DATA_DIR, say), or None: `--all` must not remove the learner's progress,
    answers and copy of the lessons with the server's files."""
    home = learner.home().expanduser().resolve()
    for folder in folders:
        if home == folder.resolve() or folder.resolve() in home.parents:
            return folder
    return None


def remove(folder: Path) -> int:
    """Remove a folder of the course's and return the bytes it held."""
    size = folder_size(folder)
    shutil.rmtree(folder, ignore_errors=True)
    return size


def remove_data_folder() -> tuple[Path, int]:
    """Stop the embedded server and remove its data folder. Returns the folder and the
    bytes it held."""
    folder = data_folder()
    stop_server()
    size = remove(folder)
    if folder.name:  # the checker's folder goes with it
        stop_checker()
        size += remove(checker_folder())
    return folder, size
