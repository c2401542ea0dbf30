"""The README's first-run commands, run exactly as shown, as a learner without
Docker or PGQ_DSN would: on a fresh embedded server of the test's own."""

import os
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Waits up to 60 s for the lab to answer (any HTTP status: it may ask for its token).
LAB_WAIT = (
    "python -c 'import socket, sys, time\n"
    "for _ in range(120):\n"
    '    try: socket.create_connection(("127.0.0.1", {port}), 1).close(); sys.exit(0)\n'
    "    except OSError: time.sleep(0.5)\n"
    "sys.exit(1)'"
)


def first_run_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## First run", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL).group(1)
    return [line for line in block.splitlines() if line.strip()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_script(commands: list[str], port: int) -> str:
    """The commands as one bash script. The lab runs until stopped, so it runs in the
    background until it serves, then is stopped (SIGTERM: a background job in a script ignores
    Ctrl-C's SIGINT)."""
    lines = ["set -e"]
    for command in commands:
        if command.startswith("pgq-teach lab"):
            command = command.split(" #")[0].rstrip()  # its comment would swallow the redirection
            command = re.sub(r"--port \d+", f"--port {port}", command)  # a port free on this machine
            lines += [
                f'{command} > "$PGQ_HOME.lab.log" 2>&1 &',
                "lab=$!",
                LAB_WAIT.format(port=port),
                "kill -TERM $lab; wait $lab || true",
                'echo LAB-SERVED; cat "$PGQ_HOME.lab.log"',
            ]
        else:
            lines.append(command)
    return "\n".join(lines) + "\n"


@pytest.fixture
def learner_home():
    home = Path(tempfile.mkdtemp(prefix="pgq-teach-first-run-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PGQ_", "VIRTUAL_ENV"))}
    env.update(
        PGQ_DATA_DIR=str(home / "pg18"),
        PGQ_HOME=str(home / "learner"),
        PGQ_CONTAINER=f"pgq-teach-first-run-{home.name[-8:]}",
        DOCKER_HOST="unix:///nonexistent/docker.sock",
    )  # a learner without Docker
    yield home, env
    subprocess.run(
        [str(ROOT / ".venv/bin/pgq-teach"), "server", "stop"], env=env, capture_output=True, check=False
    )
    shutil.rmtree(home, ignore_errors=True)


def test_the_readmes_first_run_commands_work_as_shown(learner_home):
    home, env = learner_home
    commands = first_run_commands()
    assert commands[0].startswith("make install") and any(c.startswith("pgq-teach lab") for c in commands)
    script = home / "first-run.sh"
    script.write_text(as_script(commands, free_port()))
    out = subprocess.run(
        ["bash", str(script)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    started, served, after = out.stdout.split("LAB-SERVED")[0], out.stdout, out.stdout.split("LAB-SERVED")[1]
    assert "backend embedded" in started and "Unix socket in" in started
    assert "Stopping the lab (Ctrl-C) leaves PostgreSQL running" in served
    assert "embedded PostgreSQL: running" in after  # the lab has stopped; the server has not
    assert after.rstrip().endswith("stopped the embedded PostgreSQL")
