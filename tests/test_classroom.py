"""A class on JupyterHub (docs/classroom.md): a real hub and its proxy
(`jupyterhub`, and `configurable-http-proxy` from npm), three learners, each
with a single-user server of their own that runs lesson 01's race and a "Your
turn" check in a kernel, and sees only their own files, PostgreSQL (its
databases), checker and broker.

Run as root (as .ci/run is), the hub makes three throwaway local users and
spawns each learner's server as that user (LocalProcessSpawner), so the
operating system keeps them apart; the users and their homes are removed
after. Run as anyone else, it uses JupyterHub's SimpleLocalProcessSpawner
with three homes: one user's processes, kept apart only by their homes, which
is what the course's defaults use. A missing part is a failure, never a skip.

Every process the learners started (PostgreSQL, the checker, the broker) is
stopped from their kernel and then, if still alive, ended by its pid."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from helpers import free_port

ROOT = Path(__file__).resolve().parent.parent
LEARNERS = 3
START_TIMEOUT_S = 240  # a learner's first start: the server, then a kernel (three at once, 2 CPUs)
RUN_TIMEOUT_S = 240  # the kernel's work: initdb of the learner's server and checker, the race, a check
AS_ROOT = os.geteuid() == 0

# What each learner's kernel runs: lesson 01's opening (its database, the race at the
# lesson's size), the "Your turn" check of 01/claim with its model answer, a database named
# after the learner, and lesson 11's broker; then one line of JSON saying what it saw.
LEARNER_WORK = """
import json, os
from pgq_teach import databases, exercises, lesson, statements
from pgq_teach.experiments.race import run_race
from pgq_teach.infra import broker, embedded, learner, server

db = lesson.start("01-double-send")
race = run_race(db, workers=8, jobs=400, work_ms=10, mode="naive")
verdict = exercises.check("01/claim", exercises.EXERCISES["01/claim"].answer_text())
databases.open_database("mark-" + os.environ["JUPYTERHUB_USER"])
with databases.open_database("shop").connect() as conn:
    names = sorted(row[0] for row in statements.run(conn, "admin/database_names"))
the_broker = broker.Broker()
status = the_broker.start()
print("SEEN " + json.dumps({
    "user": os.environ["JUPYTERHUB_USER"], "uid": os.getuid(), "home": os.path.expanduser("~"),
    "data_dir": str(embedded.data_dir()), "pid": embedded.status()["pid"],
    "checker": str(embedded.checker_folder()), "learner_home": str(learner.home()),
    "databases": names, "race_jobs": race.jobs, "race_more_than_once": race.run_more_than_once,
    "verdict_passed": verdict.passed, "verdict_exercise": verdict.exercise,
    "passed_on_file": exercises.progress_file.entries(learner.load("progress"))["01/claim"].done,
    "broker_port": status.port, "broker_pid": status.pid, "broker_store": str(status.store),
    "broker_token": the_broker.token(),
}))
"""

# Run in one learner's kernel with another's broker port: its own token does not open it.
KNOCK = """
import socket
with socket.create_connection(("127.0.0.1", {port}), timeout=5) as raw:
    raw.recv(4096)
    raw.sendall(b'CONNECT {{"verbose":false,"auth_token":"{token}"}}\\r\\nPING\\r\\n')
    print("KNOCK " + repr(raw.recv(4096)))
"""

# The learner's processes, stopped as `pgq-teach server stop` and `broker stop` would.
STOP_ALL = """
from pgq_teach.infra import broker, embedded
broker.Broker().stop(); embedded.stop_checker(); embedded.stop()
print("STOPPED")
"""


def proxy_binary() -> str:
    """configurable-http-proxy: beside this Python (npm install --global --prefix .venv) or on PATH."""
    here = Path(sysconfig.get_path("scripts")) / "configurable-http-proxy"
    found = str(here) if here.exists() else shutil.which("configurable-http-proxy")
    assert found, (
        "configurable-http-proxy is not installed: npm install --global configurable-http-proxy@5 "
        "(or --prefix .venv); .ci/run installs it"
    )
    return found


def learner_python() -> tuple[str, dict[str, str]]:
    """The Python a learner's server runs, and the environment it needs. As root this venv's
    own interpreter lives under /root, which other users may not enter, so the learners run the
    system's python3 of the same minor version with this venv's packages and the course on
    PYTHONPATH (the single-user image in docs/classroom.md installs them instead)."""
    if not AS_ROOT:
        return sys.executable, {}
    system = shutil.which("python3", path="/usr/bin:/usr/local/bin")
    assert system, "as root, the learners need a python3 outside /root (apt-get install python3)"
    minor = subprocess.run(
        [system, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert minor == str(sys.version_info[:2]), (
        f"{system} is Python {minor}, this venv {sys.version_info[:2]}: its compiled packages need one minor"
    )
    path = os.pathsep.join([sysconfig.get_path("purelib"), str(ROOT)])
    scripts = os.pathsep.join([sysconfig.get_path("scripts"), "/usr/local/bin", "/usr/bin", "/bin"])
    return system, {"PYTHONPATH": path, "PATH": scripts}  # PATH: the wheel's nats-server is in scripts


class Hub:
    """A JupyterHub of the test's own in `folder`, on free loopback ports, with an API token
    for the test (a service whose role may start servers and reach them)."""

    def __init__(self, folder: Path, users: list[str], homes: dict[str, Path]):
        self.folder, self.users = folder, users
        self.token = secrets.token_hex(24)
        self.port, hub_port, api_port = free_port(), free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        python, env = learner_python()
        env = {**env, "PGQ_BACKEND": "embedded"}
        config = {
            "JupyterHub": {
                "ip": "127.0.0.1",
                "port": self.port,
                "hub_ip": "127.0.0.1",
                "hub_port": hub_port,
                "db_url": f"sqlite:///{folder / 'hub.sqlite'}",
                "cookie_secret_file": str(folder / "cookie_secret"),
                "authenticator_class": "dummy",  # the test reaches servers through the API only
                "spawner_class": "localprocess" if AS_ROOT else "simple",
                "services": [{"name": "classroom-test", "api_token": self.token}],
                "load_roles": [
                    {
                        "name": "classroom-test",
                        "scopes": ["admin:users", "admin:servers", "servers", "access:servers", "read:users"],
                        "services": ["classroom-test"],
                    }
                ],
                "cleanup_servers": True,
            },
            "ConfigurableHTTPProxy": {
                "api_url": f"http://127.0.0.1:{api_port}",
                "command": [proxy_binary()],
                "pid_file": str(folder / "proxy.pid"),
            },
            "Authenticator": {"allowed_users": users},
            "Spawner": {
                "cmd": [python, "-m", "jupyterhub.singleuser"],
                "environment": env,
                "start_timeout": START_TIMEOUT_S,
                "http_timeout": START_TIMEOUT_S,
                "default_url": "/lab",
            },
            "SimpleLocalProcessSpawner": {"home_dir_template": str(folder / "homes" / "{username}")},
        }
        (folder / "jupyterhub_config.json").write_text(json.dumps(config), encoding="utf-8")
        self.log = open(folder / "hub.log", "wb")  # noqa: SIM115  # closed in stop
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(folder / "jupyterhub_config.json")],
            cwd=folder,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "CONFIGPROXY_AUTH_TOKEN": secrets.token_hex(16)},
        )
        try:  # the proxy answers 404 for /hub/ until the hub has given it its routes
            self.wait_until(lambda: self.api("GET", "/hub/api/", not_yet=404) is not None, 90, "the hub")
        except BaseException:
            self.stop()
            raise

    def log_tail(self) -> str:
        return (self.folder / "hub.log").read_text(errors="replace")[-4000:]

    def api(self, method: str, path: str, body: dict | None = None, not_yet: int = 503) -> dict | None:
        """The hub's answer as JSON (None if it does not answer yet)."""
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            if exc.code in (502, 503, 599, not_yet):
                return None
            raise AssertionError(
                f"{method} {path}: {exc.code} {exc.read()[:500]!r}\n{self.log_tail()}"
            ) from None
        except OSError:
            return None
        return json.loads(text) if text else {}

    def wait_until(self, ready, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"the hub exited:\n{self.log_tail()}"
            if ready():
                return
            time.sleep(0.5)
        raise AssertionError(f"waited {timeout_s:.0f} s for {what}:\n{self.log_tail()}")

    def start_server(self, user: str) -> None:
        self.api("POST", f"/hub/api/users/{user}/server")

    def server_ready(self, user: str) -> bool:
        model = self.api("GET", f"/hub/api/users/{user}") or {}
        return bool(model.get("servers", {}).get("", {}).get("ready"))

    def run(self, user: str, code: str, timeout_s: float = RUN_TIMEOUT_S) -> str:
        """Run `code` in a new kernel of the learner's server (through the proxy, as the
        learner's browser would) and return what it printed; its error, if any, fails the test."""
        kernel = self.server_api(user, "POST", "api/kernels", {"name": "python3"})
        try:
            return asyncio.run(self._execute(user, kernel["id"], code, timeout_s))
        finally:
            self.server_api(user, "DELETE", f"api/kernels/{kernel['id']}")

    def server_api(self, user: str, method: str, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(
            f"{self.url}/user/{user}/{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            text = answer.read()
        return json.loads(text) if text else {}

    async def _execute(self, user: str, kernel: str, code: str, timeout_s: float) -> str:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        url = f"ws://127.0.0.1:{self.port}/user/{user}/api/kernels/{kernel}/channels"
        ws = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {self.token}"}))
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "username": user, "session": msg_id}
        header["version"] = "5.3"
        content = {"code": code, "silent": False, "store_history": False, "allow_stdin": False}
        request = {"header": header, "parent_header": {}, "metadata": {}, "content": content}
        await ws.write_message(json.dumps({**request, "channel": "shell"}))
        printed: list[str] = []
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                left = deadline - time.monotonic()
                assert left > 0, (
                    f"{user}'s kernel ran over {timeout_s:.0f} s; printed {''.join(printed)[-2000:]}"
                )
                raw = await asyncio.wait_for(ws.read_message(), left)
                assert raw is not None, f"{user}'s kernel channel closed; printed {''.join(printed)[-2000:]}"
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, body = msg["msg_type"], msg["content"]
                if kind == "stream" and body["name"] == "stdout":
                    printed.append(body["text"])
                if kind == "error":
                    trace = "\n".join(body["traceback"])
                    raise AssertionError(
                        f"{user}'s kernel failed: {body['ename']}: {body['evalue']}\n{trace}"
                    )
                if kind == "status" and body["execution_state"] == "idle":
                    return "".join(printed)
        finally:
            ws.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # the hub stops the learners' servers (cleanup_servers)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.log.close()


def line_after(mark: str, printed: str) -> str:
    [line] = [line for line in printed.splitlines() if line.startswith(mark + " ")]
    return line[len(mark) + 1 :]


@pytest.fixture
def classroom() -> Iterator[tuple[Path, list[str], dict[str, Path]]]:
    """A folder for the hub, three learners' names and their homes; as root, three local users
    made for the test (their homes readable by their owner only) and removed after."""
    folder = Path(tempfile.mkdtemp(prefix="pgq-classroom-"))
    folder.chmod(0o755)  # the learners' homes are inside: each must reach their own
    tag = secrets.token_hex(2)
    users = [f"pgqlearner{tag}{n}" for n in range(1, LEARNERS + 1)]
    homes = {user: folder / "homes" / user for user in users}
    (folder / "homes").mkdir(mode=0o755)
    made: list[str] = []
    try:
        if AS_ROOT:
            for user in users:
                subprocess.run(
                    [
                        "useradd",
                        "--create-home",
                        "--home-dir",
                        str(homes[user]),
                        "--shell",
                        "/bin/bash",
                        user,
                    ],
                    check=True,
                    capture_output=True,
                )
                made.append(user)
                homes[user].chmod(0o700)
        yield folder, users, homes
    finally:
        end_what_is_left(folder, {pwd.getpwnam(user).pw_uid for user in made})
        for user in made:
            subprocess.run(["userdel", "--remove", user], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def end_what_is_left(folder: Path, uids: set[int]) -> None:
    """What the learners left running (their kernel's stop failed, say): every process of the
    test's own users, or started from the test's folder (the homes, the hub), each ended by its
    pid, politely first (a postmaster stops its children), then by SIGKILL."""
    import psutil

    def left() -> list[psutil.Process]:
        mine = []
        for proc in psutil.process_iter(["uids", "cmdline"]):
            try:
                ours = proc.info["uids"].real in uids or str(folder) in " ".join(proc.info["cmdline"] or [])
            except (psutil.Error, TypeError, AttributeError):
                continue
            if ours and proc.pid != os.getpid():
                mine.append(proc)
        return mine

    for sig in (signal.SIGTERM, signal.SIGKILL):
        procs = left()
        for proc in procs:
            try:
                proc.send_signal(sig)
            except psutil.Error:
                pass
        psutil.wait_procs(procs, timeout=15)


@pytest.mark.classroom
def test_three_learners_on_jupyterhub_each_see_only_their_own(classroom):
    folder, users, homes = classroom
    began = time.monotonic()
    hub = Hub(folder, users, homes)
    try:
        for user in users:  # all three start at once, as a class does at the start of a lesson
            hub.start_server(user)
        for user in users:
            hub.wait_until(lambda u=user: hub.server_ready(u), START_TIMEOUT_S, f"{user}'s server")
        started = time.monotonic() - began
        with ThreadPoolExecutor(LEARNERS) as class_at_work:  # at once, as a class runs a lesson
            printed = dict(
                zip(users, class_at_work.map(lambda u: hub.run(u, LEARNER_WORK), users), strict=True)
            )
        seen = {user: json.loads(line_after("SEEN", printed[user])) for user in users}

        for user, mine in seen.items():
            others = [u for u in users if u != user]
            assert mine["user"] == user and mine["race_jobs"] == 400
            assert mine["race_more_than_once"] > 0  # the naive race double-sends here too
            assert mine["verdict_exercise"] == "01/claim" and mine["verdict_passed"] is True
            assert mine["passed_on_file"] is True  # the verdict went to this learner's progress file
            home = Path(mine["home"]).resolve()
            assert home == homes[user].resolve(), (user, mine["home"])
            for part in ("data_dir", "checker", "learner_home", "broker_store"):
                assert home in Path(mine[part]).resolve().parents, (user, part, mine[part])
            # their own server: their own database, and not one of the other learners'
            assert databases_named("mark", user) in mine["databases"]
            assert not any(databases_named("mark", other) in mine["databases"] for other in others)
            if AS_ROOT:
                assert mine["uid"] == pwd.getpwnam(user).pw_uid
        assert len({s["pid"] for s in seen.values()}) == LEARNERS  # three postmasters
        assert len({s["broker_port"] for s in seen.values()}) == LEARNERS
        assert len({s["broker_token"] for s in seen.values()}) == LEARNERS

        # each learner's token opens their own broker only
        for user, other in zip(users, users[1:] + users[:1], strict=True):
            knock = KNOCK.format(port=seen[other]["broker_port"], token=seen[user]["broker_token"])
            assert "Authorization Violation" in line_after("KNOCK", hub.run(user, knock, 30))
            own = KNOCK.format(port=seen[user]["broker_port"], token=seen[user]["broker_token"])
            assert "PONG" in line_after("KNOCK", hub.run(user, own, 30))
        if AS_ROOT:  # and the operating system keeps each learner's files from the others
            for user, other in zip(users, users[1:] + users[:1], strict=True):
                peek = f"import os; print('PEEK', os.access({seen[other]['data_dir']!r}, os.R_OK))"
                assert line_after("PEEK", hub.run(user, peek, 30)) == "False"
        for user in users:
            assert "STOPPED" in hub.run(user, STOP_ALL, 60)
        print(
            f"three learners' servers ready in {started:.0f} s; whole test {time.monotonic() - began:.0f} s"
        )
    finally:
        hub.stop()  # what the learners' kernels left running is ended by the fixture


def databases_named(label: str, user: str) -> str:
    """The database name `databases.open_database(f"{label}-{user}")` makes in a learner's kernel
    (no test worker's tag there: the kernel's environment is the hub's, not this process's)."""
    return f"pgq_{label}_{user}"
