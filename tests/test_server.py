"""Choosing the server, and the clear errors when it cannot be had. The
Docker tests run where an engine answers (CI's container run); each uses a
container of its own name, so the course's container is never disturbed."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from pgq_teach import SetupError
from pgq_teach.infra import container, server

ENGINE = container.engine_answers()
UNPULLABLE = "pgq-teach-test/never-published:0"  # no registry has it, reachable or not
# The container path's tests need a Docker engine, which is the machine's to run, not the
# suite's: make test starts none (and tries no pull), so without one they skip, saying so.
# .ci/run's container stage runs them on a daemon of its own with a stand-in image.
OUTSIDE = "the machine's, not the suite's: make test starts none; .ci/run's container stage runs this"
NEEDS_ENGINE = pytest.mark.skipif(not ENGINE, reason=f"no Docker engine answers a ping here ({OUTSIDE})")


def image_is_here() -> bool:
    if not ENGINE:
        return False
    import docker.errors

    try:
        container.client().images.get(container.image())
        return True
    except docker.errors.ImageNotFound:
        return False


NEEDS_IMAGE = pytest.mark.skipif(
    not image_is_here(),
    reason=f"no Docker engine here, or PGQ_IMAGE is not pulled and no pull is tried ({OUTSIDE})",
)


@pytest.fixture
def fresh_choice(monkeypatch):
    server.reset_choice()
    yield monkeypatch
    server.reset_choice()


def test_the_line_names_backend_version_and_place(pg):
    line = pg.line()
    assert f"PostgreSQL {pg.version}" in line and f"backend {pg.backend}" in line
    assert pg.major >= 15


def test_unknown_backend_lists_the_valid_values(fresh_choice):
    fresh_choice.setenv("PGQ_BACKEND", "kafka")
    with pytest.raises(SetupError, match="auto, dsn, docker, embedded"):
        server.get_server()


def test_unreachable_dsn_names_host_port_the_reason_and_the_three_ways(fresh_choice):
    fresh_choice.setenv("PGQ_BACKEND", "auto")
    fresh_choice.setenv("PGQ_DSN", "postgresql://learner:s3cret@127.0.0.1:9/shop")
    with pytest.raises(SetupError) as err:
        server.get_server()
    message = str(err.value)
    assert "127.0.0.1:9" in message and "PGQ_DSN" in message and "embedded" in message
    assert "refused" in message  # the reason the connection failed, as the server's host gave it
    assert "s3cret" not in message


def test_dsn_backend_without_a_dsn_says_so(fresh_choice):
    fresh_choice.setenv("PGQ_BACKEND", "dsn")
    fresh_choice.delenv("PGQ_DSN", raising=False)
    with pytest.raises(SetupError, match="PGQ_DSN is not set"):
        server.get_server()


def test_an_existing_server_is_used_as_it_is(pg, fresh_choice):
    fresh_choice.setenv("PGQ_DSN", pg.dsn)
    fresh_choice.setenv("PGQ_BACKEND", "auto")
    chosen = server.get_server()
    assert chosen.backend == "dsn" and chosen.version == pg.version


def test_password_is_masked_in_descriptions():
    assert server.describe("postgresql://u:pw@db.example:5433/shop") == "u:***@db.example:5433/shop"


def test_docker_without_an_engine_suggests_the_embedded_default(fresh_choice):
    fresh_choice.setenv("PGQ_BACKEND", "docker")
    fresh_choice.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(SetupError, match="no Docker engine answers.*embedded"):
        server.get_server()


def test_a_socket_server_is_described_as_a_folder_not_a_port():
    where = server.describe("host=/var/lib/pgq-teach/pg18 user=postgres dbname=shop")
    assert where == "user postgres, database shop, Unix socket in /var/lib/pgq-teach/pg18 (no TCP port)"
    assert ":5432" not in where


def cli(*args, **env):
    return subprocess.run(
        [sys.executable, "-m", "pgq_teach.cli", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **env},
        check=False,
    )


def test_status_and_start_speak_about_an_unreachable_dsn_not_the_embedded_server():
    dsn = "postgresql://learner:s3cret@127.0.0.1:9/shop"
    status = cli("server", "status", PGQ_DSN=dsn, PGQ_BACKEND="auto")
    assert status.returncode == 1
    assert "PGQ_DSN server (learner:***@127.0.0.1:9/shop): not reachable" in status.stdout
    assert "embedded" not in status.stdout.split("not reachable")[0] and "s3cret" not in status.stdout
    start = cli("server", "start", PGQ_DSN=dsn, PGQ_BACKEND="auto")
    assert start.returncode == 2 and "127.0.0.1:9" in start.stderr
    assert "set PGQ_DSN to a server you run" not in start.stderr  # it is already set
    assert "unset PGQ_DSN" in start.stderr


@pytest.fixture
def private_memo(fresh_choice, tmp_path):
    """An embedded data folder of this test's own, so the failed-pull memo beside it is too."""
    fresh_choice.setenv("PGQ_DATA_DIR", str(tmp_path / "pg18"))
    fresh_choice.delenv("PGQ_PG_MAJOR", raising=False)
    yield fresh_choice


class OfflineEngine:
    """The two answers an offline Docker engine gives the course: the image is not here, and a
    pull cannot reach the registry. It stands in for the engine only, to count the pulls."""

    def __init__(self):
        self.images = self
        self.pulls = []

    def get(self, name):
        import docker.errors

        raise docker.errors.ImageNotFound(f"No such image: {name}")

    def pull(self, name):
        import requests

        self.pulls.append(name)
        raise requests.ConnectionError("registry-1.docker.io: Temporary failure in name resolution")


def test_a_failed_pull_is_not_tried_again_for_ten_minutes_and_says_the_same_line(private_memo):
    engine = OfflineEngine()
    with pytest.raises(container.NoImage) as first:
        container.ensure_image(engine, UNPULLABLE)
    assert engine.pulls == [UNPULLABLE]
    assert f"the image {UNPULLABLE} is not here and cannot be pulled" in str(first.value)
    with pytest.raises(container.NoImage) as again:
        container.ensure_image(engine, UNPULLABLE)
    assert engine.pulls == [UNPULLABLE]  # remembered: no second pull
    assert str(again.value) == str(first.value)  # and the same one line for the backend line
    assert container.failed_pull("pgq-teach-test/another:0") is None  # another image gets its own pull

    memo = json.loads(container.pull_memo().read_text(encoding="utf-8"))
    memo["at"] -= container.PULL_MEMO_SECONDS + 1  # the same failure, eleven minutes ago
    container.pull_memo().write_text(json.dumps(memo), encoding="utf-8")
    assert container.failed_pull(UNPULLABLE) is None
    with pytest.raises(container.NoImage):
        container.ensure_image(engine, UNPULLABLE)
    assert engine.pulls == [UNPULLABLE, UNPULLABLE]  # an old memo does not skip the pull


def test_an_unreadable_memo_means_try_the_pull(private_memo):
    container.pull_memo().parent.mkdir(parents=True, exist_ok=True)
    for text in ("", "{", "[]", '{"image": 1}'):
        container.pull_memo().write_text(text, encoding="utf-8")
        assert container.failed_pull(UNPULLABLE) is None


def test_docker_by_name_and_server_start_try_the_pull_again(pg, private_memo):
    line = f"the image {UNPULLABLE} is not here and cannot be pulled: offline"
    container.remember_failed_pull(UNPULLABLE, line)
    assert container.failed_pull(UNPULLABLE) == line
    private_memo.setenv("PGQ_BACKEND", "docker")
    private_memo.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(SetupError, match="no Docker engine answers"):
        server.get_server()
    assert not container.pull_memo().exists()

    container.remember_failed_pull(UNPULLABLE, line)
    started = cli("server", "start", PGQ_BACKEND="dsn", PGQ_DSN=pg.dsn)
    assert started.returncode == 0, started.stderr
    assert not container.pull_memo().exists()


@pytest.fixture
def private_container(fresh_choice):
    """A container name and an embedded data folder of this test's own."""
    home = Path(tempfile.mkdtemp(prefix="pgq-teach-test-"))
    fresh_choice.setenv("PGQ_CONTAINER", f"pgq-teach-test-{uuid.uuid4().hex[:8]}")
    fresh_choice.setenv("PGQ_DATA_DIR", str(home / "pg18"))
    fresh_choice.delenv("PGQ_DSN", raising=False)
    yield fresh_choice
    container.stop()
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.docker
@NEEDS_ENGINE
def test_explicit_docker_names_the_image_that_cannot_be_pulled_and_the_fix(private_container):
    private_container.setenv("PGQ_BACKEND", "docker")
    private_container.setenv("PGQ_IMAGE", UNPULLABLE)
    with pytest.raises(SetupError) as err:
        server.get_server()
    message = str(err.value)
    assert f"the image {UNPULLABLE} is not here and cannot be pulled" in message
    assert (
        "PGQ_IMAGE" in message
        and "pgq_teach.infra.standin_image" in message
        and "unset PGQ_BACKEND" in message
    )
    assert "no Docker engine answers" not in message
    assert container.find() is None


@pytest.mark.docker
@NEEDS_ENGINE
def test_auto_falls_back_to_embedded_with_one_line_saying_why(private_container):
    private_container.setenv("PGQ_BACKEND", "auto")
    private_container.setenv("PGQ_IMAGE", UNPULLABLE)
    out = cli("server", "start")
    try:
        assert out.returncode == 0 and out.stderr == "", out.stderr
        [line] = out.stdout.splitlines()
        assert "backend embedded (Docker answers, but the image" in line
        assert f"{UNPULLABLE} is not here and cannot be pulled" in line
        assert container.find() is None
    finally:
        assert "stopped the embedded PostgreSQL" in cli("server", "stop").stdout


@pytest.mark.docker
@NEEDS_ENGINE
def test_auto_remembers_the_failed_pull_and_falls_back_with_the_same_line(private_container):
    private_container.setenv("PGQ_BACKEND", "auto")
    private_container.setenv("PGQ_IMAGE", UNPULLABLE)
    try:
        first = server.get_server().line()
        why = container.failed_pull(UNPULLABLE)  # the pull failed, and is noted
        assert why and f"backend embedded (Docker answers, but {why})" in first
        server.reset_choice()
        assert server.get_server().line() == first  # the next call: no pull, the same line
    finally:
        assert "stopped the embedded PostgreSQL" in cli("server", "stop").stdout


@pytest.mark.docker
@NEEDS_IMAGE
@pytest.mark.parametrize("ryuk_disabled", ["true", "false"])
def test_the_container_outlives_each_process_is_reused_and_server_stop_leaves_none(
    private_container, ryuk_disabled
):
    private_container.setenv("PGQ_BACKEND", "docker")
    private_container.setenv("TESTCONTAINERS_RYUK_DISABLED", ryuk_disabled)
    client = container.client()
    before = {c.id for c in client.containers.list(all=True)}
    first = cli("server", "url")
    assert first.returncode == 0 and first.stderr == "", first.stderr
    box = container.find()
    assert box is not None and box.status == "running"  # its process has ended; the container has not
    second = cli("server", "url")
    assert second.stdout == first.stdout  # found and reused, same port and password
    line = cli("server", "start").stdout
    assert f"backend docker ({container.image()})" in line
    made = {c.id for c in client.containers.list(all=True)} - before
    assert made == {box.id}  # one container, and no reaper beside it
    stopped = cli("server", "stop")
    assert f"removed the container {container.name()}" in stopped.stdout
    assert {c.id for c in client.containers.list(all=True)} - before == set()


@pytest.mark.docker
@NEEDS_IMAGE
def test_processes_starting_at_once_share_one_container(private_container):
    # Kernels of a Run All, or CLI calls in a script, ask at the same moment.
    private_container.setenv("PGQ_BACKEND", "docker")
    calls = [
        subprocess.Popen(
            [sys.executable, "-m", "pgq_teach.cli", "server", "url"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    answers = [call.communicate(timeout=180) for call in calls]
    assert [err for _, err in answers] == [""] * 4
    assert len({out for out, _ in answers}) == 1
    assert [c.name for c in container.client().containers.list(all=True)].count(container.name()) == 1


@pytest.mark.docker
@NEEDS_IMAGE
def test_a_restart_or_a_stopped_container_keeps_the_connection_string_and_the_data(private_container):
    import psycopg

    from pgq_teach.statements import run

    private_container.setenv("PGQ_BACKEND", "docker")
    dsn, _ = container.start()
    with psycopg.connect(dsn, autocommit=True) as conn:
        before = run(conn, "lab/server_session").fetchone()[0]
    container.restart()
    assert container.start()[0] == dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert run(conn, "lab/server_session").fetchone()[0] > before
        run(conn, "admin/create_database", idents={"name": "pgq_kept"})
    container.find().stop(timeout=5)  # as a reboot would leave it
    assert container.start()[0] == dsn  # started again, same port and password
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert run(conn, "admin/database_exists", {"name": "pgq_kept"}).fetchone() == (1,)


@pytest.mark.docker
@NEEDS_IMAGE
def test_the_image_serves_testcontainers_own_postgres_container(monkeypatch):
    # testcontainers' readiness check runs sh and psql inside the container, and passes its own
    # user, password and database: the stand-in image must honour all of them.
    import psycopg
    from testcontainers.community.postgres import PostgresContainer
    from testcontainers.core.config import testcontainers_config

    from pgq_teach.statements import run

    monkeypatch.setattr(
        testcontainers_config, "ryuk_disabled", True
    )  # its reaper image cannot be pulled offline
    with PostgresContainer(container.image()) as box:
        with psycopg.connect(box.get_connection_url(driver=None)) as conn:
            assert run(conn, "lab/server_session").fetchone()[1:] == ("test", "test")
        made = box.get_wrapped_container().id
    assert made not in {c.id for c in container.client().containers.list(all=True)}


def test_a_role_without_createdb_is_told_which_grant_it_needs(pg, fresh_choice):
    import psycopg
    from psycopg.conninfo import make_conninfo

    from pgq_teach.databases import open_database
    from pgq_teach.statements import run

    with psycopg.connect(pg.dsn, autocommit=True) as admin:
        run(admin, "lab/create_login_role", idents={"name": "pgq_no_createdb"}, params={"password": "pw"})
    try:
        fresh_choice.setenv("PGQ_BACKEND", "dsn")
        fresh_choice.setenv("PGQ_DSN", make_conninfo(pg.dsn, user="pgq_no_createdb", password="pw"))
        with pytest.raises(SetupError, match="ALTER ROLE pgq_no_createdb CREATEDB"):
            open_database("never_made")
    finally:
        with psycopg.connect(pg.dsn, autocommit=True) as admin:
            run(admin, "lab/drop_role", idents={"name": "pgq_no_createdb"})


def test_embedded_server_survives_its_starting_process_and_is_reused(pg):
    if pg.backend != "embedded":
        pytest.skip("the embedded server is not the one in use")
    code = "from pgq_teach.infra import server; print(server.get_server().dsn)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "PGQ_DSN"},
    )
    assert out.stdout.strip() == pg.dsn
    assert out.stderr == ""


def test_a_lab_kernel_prints_the_line_the_lab_printed(pg, monkeypatch):
    """`pgq-teach lab` hands its server to kernels as a DSN (cli.course.kernel_env); a
    lesson's banner names the backend the terminal named, in the same words, while the
    kernel still treats the server as one it was handed (backend dsn: never stops it)."""
    from pgq_teach.cli.course import kernel_env

    for name, value in kernel_env(pg).items():
        monkeypatch.setenv(name, value)
    server.get_server.cache_clear()
    try:
        kernel = server.get_server()
    finally:
        server.get_server.cache_clear()
    # the same words on every backend (.ci/run runs this on Debian's server and a container too)
    assert kernel.line() == pg.line() and f" · backend {pg.kind}" in kernel.line()
    assert kernel.backend == "dsn" and kernel.kind == pg.kind
