"""PostgreSQL in Docker (PGQ_BACKEND=docker, or auto when an engine answers).

One container serves the course, as the embedded server does: it outlives the
process that started it (a CLI call, a notebook kernel), the next process
finds it by its name and labels and reuses it, and `pgq-teach server stop`
removes it. testcontainers' reaper (Ryuk) exists to remove containers when
their process ends, which is the opposite of what the course needs, so this
module asks the Docker engine directly; whether Ryuk is on or off changes
nothing here. The host port is fixed when the container is made, so a
restart keeps the same connection string.

A pull that fails (offline, a registry error) is remembered for ten minutes
in a small file beside the embedded server's data directory, so each later
call in auto goes straight to the embedded fallback instead of waiting on the
same failure again. PGQ_BACKEND=docker and `pgq-teach server start` forget it
and try the pull again.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import psycopg

from ..errors import SetupError

DEFAULT_IMAGE = "postgres:18"
NAME = "pgq-teach-postgres"  # PGQ_CONTAINER names another (the tests use private ones)
LABEL = "org.pgq-teach.server"
READY_SECONDS = 90.0  # first start runs initdb; on the vfs storage driver that takes a few seconds
PULL_MEMO_SECONDS = 600.0  # a failed pull is not tried again for this long (unless asked for)


class NoImage(SetupError):
    """Docker answers, but the image is not here and cannot be pulled."""


def name() -> str:
    return os.environ.get("PGQ_CONTAINER", "").strip() or NAME


def image() -> str:
    return os.environ.get("PGQ_IMAGE", "").strip() or DEFAULT_IMAGE


def client(timeout: float = 60.0):
    import docker

    # docker hands the timeout to requests, which takes any number of seconds; the stub says int
    return docker.from_env(timeout=timeout)  # type: ignore[arg-type]


def engine_answers(timeout: float = 1.0) -> bool:
    """True if a Docker engine answers a ping within `timeout` seconds."""
    try:
        import docker.errors
        import requests

        return bool(client(timeout).ping())
    except ImportError:
        return False  # testcontainers (and with it the docker package) is not installed
    except (docker.errors.DockerException, requests.RequestException, OSError):
        return False


def _host() -> str:
    """Where the mapped port is reached: this machine, unless DOCKER_HOST names another."""
    url = urlparse(os.environ.get("DOCKER_HOST", ""))
    return url.hostname if url.scheme in ("tcp", "http", "https") and url.hostname else "127.0.0.1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find(engine=None):
    """The course's container, running or not, or None."""
    import docker.errors

    try:
        return (engine or client()).containers.get(name())
    except docker.errors.NotFound:
        return None


def _dsn(box) -> str:
    env = dict(item.split("=", 1) for item in box.attrs["Config"]["Env"] if "=" in item)
    port = box.attrs["HostConfig"]["PortBindings"]["5432/tcp"][0]["HostPort"]
    return psycopg.conninfo.make_conninfo(
        host=_host(),
        port=port,
        user=env.get("POSTGRES_USER", "postgres"),
        password=env.get("POSTGRES_PASSWORD", ""),
        dbname=env.get("POSTGRES_DB", "postgres"),
    )


def pull_memo() -> Path:
    """Where a failed pull is remembered: beside the embedded server's data
    directory, so each course folder (and each test's private one) has its own."""
    from .server import data_folder  # imported here: server imports this module as it loads

    pgdata = data_folder()
    return pgdata.with_name(f"{pgdata.name}-failed-pull.json")


def remember_failed_pull(wanted: str, why: str) -> None:
    """Note that pulling `wanted` failed just now, and the line that said why."""
    try:
        pull_memo().parent.mkdir(parents=True, exist_ok=True)
        pull_memo().write_text(json.dumps({"image": wanted, "at": time.time(), "why": why}), encoding="utf-8")
    except OSError:
        pass  # only a shortcut: without it the next call tries the pull again


def failed_pull(wanted: str) -> str | None:
    """Why pulling `wanted` failed, if it failed less than PULL_MEMO_SECONDS ago; else None."""
    try:
        memo = json.loads(pull_memo().read_text(encoding="utf-8"))
        age = time.time() - float(memo["at"])
        fresh = memo["image"] == wanted and 0 <= age < PULL_MEMO_SECONDS
        return str(memo["why"]) if fresh else None
    except (OSError, ValueError, TypeError, KeyError):
        return None  # none, or unreadable: try the pull


def forget_failed_pull() -> None:
    """Let the next start try the pull again (PGQ_BACKEND=docker, `pgq-teach server start`)."""
    try:
        pull_memo().unlink(missing_ok=True)
    except OSError:
        pass  # a folder we cannot write to: the note, if any, ages out by itself


def ensure_image(engine, wanted: str) -> None:
    """Make sure the engine has the image `wanted`, pulling it if need be.

    Raises NoImage when it is not here and cannot be pulled, or when a pull
    of it failed less than PULL_MEMO_SECONDS ago (then no pull is tried)."""
    import docker.errors
    import requests  # the engine's client raises its timeouts as these

    try:
        engine.images.get(wanted)
        return
    except docker.errors.ImageNotFound:
        pass
    recent = failed_pull(wanted)
    if recent:
        raise NoImage(recent)
    if sys.stderr.isatty():  # a terminal, never a notebook's output (nbval fails on stderr)
        print(f"pgq-teach: pulling {wanted} once; the next start reuses it", file=sys.stderr, flush=True)
    try:
        engine.images.pull(wanted)
    except (docker.errors.DockerException, requests.RequestException) as exc:
        why = getattr(exc, "explanation", None) or str(exc) or type(exc).__name__
        line = f"the image {wanted} is not here and cannot be pulled: {why.strip().splitlines()[0][:160]}"
        remember_failed_pull(wanted, line)
        raise NoImage(line) from None


def _create(engine, wanted: str):
    import docker.errors

    ensure_image(engine, wanted)
    try:
        return engine.containers.run(
            wanted,
            detach=True,
            name=name(),
            labels={LABEL: "postgres", f"{LABEL}.image": wanted},
            environment={
                "POSTGRES_USER": "postgres",
                "POSTGRES_PASSWORD": secrets.token_hex(12),
                "POSTGRES_DB": "postgres",
            },
            ports={"5432/tcp": ("127.0.0.1" if _host() == "127.0.0.1" else "0.0.0.0", _free_port())},
        )
    except docker.errors.APIError as exc:
        if exc.status_code != 409:
            raise
    # Another process is making it this moment. Docker reserves the name before the
    # container can be looked up, so wait for it to appear, then use that one.
    deadline = time.monotonic() + 10
    while True:
        try:
            return engine.containers.get(name())
        except docker.errors.NotFound:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _wait_ready(box, dsn: str) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while True:
        try:
            with psycopg.connect(dsn, connect_timeout=3):
                return
        except psycopg.OperationalError as exc:
            box.reload()
            if box.status in ("exited", "dead") or time.monotonic() > deadline:
                tail = box.logs(tail=5).decode(errors="replace").strip()
                raise SetupError(
                    f"The container {name()} ({box.image.tags or box.attrs['Config']['Image']}) "
                    f"did not accept connections ({exc}). Its last log lines:\n{tail}"
                ) from None
            time.sleep(0.3)


def start() -> tuple[str, str]:
    """Find or start the course's container; return (connection string, image).

    Raises NoImage when the image can be neither found nor pulled, and
    SetupError when no engine answers or the container will not come up."""
    import docker.errors
    import requests

    wanted = image()
    try:
        engine = client()
        box = find(engine)
        if box is not None and box.attrs["Config"]["Labels"].get(f"{LABEL}.image") != wanted:
            running = box.attrs["Config"]["Labels"].get(f"{LABEL}.image")
            raise SetupError(
                f"The course's container {name()} runs {running}, but PGQ_IMAGE asks for {wanted}. "
                "`pgq-teach server stop` removes it; the next start uses the image you asked for."
            )
        if box is None:
            box = _create(engine, wanted)
        box.reload()
        # Stopped (a reboot, `docker stop`), or made by another process that has yet to start it.
        if box.status in ("exited", "created"):
            box.start()
            box.reload()
        dsn = _dsn(box)
        _wait_ready(box, dsn)
    except (docker.errors.DockerException, requests.RequestException) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SetupError(f"Docker did not start {wanted}: {first[:300]}") from None
    return dsn, wanted


def status() -> dict:
    """Is the course's container there, and running? Never starts or pulls anything."""
    if not engine_answers():
        return {"engine": False, "running": False, "name": name(), "image": None}
    box = find()
    return {
        "engine": True,
        "running": box is not None and box.status == "running",
        "name": name(),
        "image": box.attrs["Config"]["Labels"].get(f"{LABEL}.image") if box else None,
    }


def stop() -> bool:
    """Remove the course's container if there is one; True if there was.

    Its data goes with it: the lessons rebuild their databases on the next start."""
    if not engine_answers():
        return False
    box = find()
    if box is None:
        return False
    box.remove(force=True)
    return True


def restart() -> None:
    """A fast restart: sessions end, committed data stays. SIGINT is PostgreSQL's
    fast shutdown (docker's own restart sends SIGTERM, a smart shutdown that waits
    for every session to leave). The host port stays, so the DSN is unchanged."""
    box = find()
    if box is None or box.status != "running":
        raise SetupError(f"The container {name()} is not running; nothing to restart.")
    dsn = _dsn(box)
    box.kill(signal="SIGINT")
    box.wait(timeout=60)
    box.start()
    box.reload()
    _wait_ready(box, dsn)
