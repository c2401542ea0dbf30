"""`pgq-teach clean` gives back the disk a course run took, on a fresh embedded
server of the test's own (tests/conftest.py, own_server: clean drops every course
database on its server, so it never runs on the server the other tests share)."""

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from helpers import wait_for
from pgq_teach import databases, seeding
from pgq_teach.infra import embedded, tidy
from pgq_teach.infra.tidy import Cleaned, folder_size
from pgq_teach.statements import run, run_one

# A course run's shape, scaled down: the lessons' databases, each filled and filled again (the
# drains and resets that make WAL), where a full run left 25 databases and 562 MB.
LESSONS = ["03-claim-with-a-lease", "08-indexes", "09-bloat-and-vacuum", "10-operations", "01_claim"]
JOBS = 40_000


def wal_settings_become(dsn: str, wanted: tuple) -> bool:
    """A reload reaches new sessions a moment after pg_reload_conf returns: poll for it."""

    def now() -> tuple:
        with psycopg.connect(dsn, autocommit=True) as admin:
            return tuple(run_one(admin, "admin/wal_settings"))

    return wait_for(lambda: now() == wanted, timeout=10, step=0.1)


def data_size(folder: Path) -> int:
    """The data folder's bytes outside its WAL."""
    return folder_size(folder) - folder_size(folder / "pg_wal")


def clean(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pgq_teach.cli", "clean", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def test_clean_frees_what_the_course_took_and_keeps_what_is_not_its(own_server):
    srv, folder = own_server
    assert wal_settings_become(srv.dsn, (256, "off"))  # set at the first start
    with psycopg.connect(srv.dsn, autocommit=True) as admin:
        fresh, fresh_data = folder_size(folder), data_size(folder)
        run(admin, "admin/create_database", idents={"name": "my_own_notes"})  # not the course's
    for label in LESSONS:
        db = databases.open_database(label, reset=True)
        with db.connection() as conn:
            for _ in range(2):
                seeding.reset_and_seed(conn, "send_receipt", JOBS)
    busy = databases.open_database("02-row-locks").connect()  # an open notebook's session
    before, before_data = folder_size(folder), data_size(folder)
    assert before - fresh > 150 * 2**20, (fresh, before)  # the course took room worth freeing

    done = clean()
    after = folder_size(folder)
    busy.close()

    assert done.returncode == 0, done.stderr
    # Outside the WAL, all the course added beyond a fresh server is given back but the two
    # databases kept, to within 2 MB (the commit log and statistics files). The WAL is judged
    # by what happened, not by size: no segment from before the CHECKPOINT's redo point is
    # left (a segment more or fewer, 16 MB, depends on where that point fell, and once tipped
    # a bound on the whole folder).
    with psycopg.connect(srv.dsn, autocommit=True) as admin:
        redo_file = run_one(admin, "admin/checkpoint_redo_file")[0]
        kept = sum(
            run_one(admin, "admin/database_size", {"name": name})[0]
            for name in ("my_own_notes", databases.database_name("02-row-locks"))
        )
    segments = sorted(p.name for p in (folder / "pg_wal").iterdir() if len(p.name) == 24)
    assert segments and segments[0] >= redo_file, (segments, redo_file)
    left = data_size(folder) - fresh_data - kept
    assert abs(left) < 2 * 2**20, (left, fresh_data, before_data, kept, done.stdout)
    line = done.stdout.splitlines()[-1]
    named = ", ".join(sorted(databases.database_name(label) for label in LESSONS))
    assert line.startswith(f"dropped {len(LESSONS)} course databases ({named}); freed "), line
    assert " MB" in line, line
    freed_mb = float(line.split("freed ", 1)[1].split(" MB", 1)[0].replace(",", ""))
    assert abs(freed_mb - (before - after) / 2**20) < 5, (freed_mb, before, after)
    assert "kept 1 in use (pgq_02_row_locks" in line and "): close its notebook" in line
    with psycopg.connect(srv.dsn, autocommit=True) as admin:
        names = {row[0] for row in run(admin, "admin/database_names")}
    assert "my_own_notes" in names and databases.database_name("02-row-locks") in names
    assert not any(databases.database_name(label) in names for label in LESSONS)


@pytest.mark.parametrize(
    "n, dropped, close",
    [
        (1, "dropped 1 course database (pgq_00);", "close its notebook"),
        (2, "dropped 2 course databases (pgq_00, pgq_01);", "close their notebooks"),
    ],
)
def test_the_clean_line_says_one_database_in_the_singular(n, dropped, close):
    names = [f"pgq_{i:02}" for i in range(n)]
    line = Cleaned(dropped=names, in_use=names, before=2 * 2**20, after=2**20).line()
    assert line.startswith(f"{dropped} freed 1.0 MB") and line.endswith(f"): {close}"), line


def test_clean_on_a_stopped_server_names_what_it_drops_and_stops_it_again(own_server):
    srv, _ = own_server
    with psycopg.connect(srv.dsn, autocommit=True) as admin:  # made by hand, with the course's prefix
        run(admin, "admin/create_database", idents={"name": "pgq_my_scratch"})
    assert embedded.stop()
    done = clean()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-2].startswith("dropped 1 course database (pgq_my_scratch); freed "), lines
    assert lines[-1] == "stopped the embedded PostgreSQL again, as clean found it"
    assert not embedded.status()["running"]


def test_clean_line_names_ten_and_counts_the_rest_and_a_newline_cannot_break_it():
    names = [f"pgq_t_{i:02}" for i in range(12)] + ["pgq_a\nb"]
    line = Cleaned(dropped=names).line()
    assert "\n" not in line and "(pgq_t_00, " in line and "pgq_t_09, and 3 more);" in line, line
    assert repr("pgq_a\nb") in Cleaned(dropped=["pgq_a\nb"]).line()


def test_a_server_clean_started_is_left_running_if_someone_connected_meanwhile(own_server):
    srv, _ = own_server
    with psycopg.connect(srv.dsn, autocommit=True):  # a notebook, say
        said = tidy.stop_if_alone(srv)
    assert said == "left the embedded PostgreSQL running: 1 other session connected meanwhile"
    assert embedded.status()["running"]
    assert tidy.stop_if_alone(srv) == "stopped the embedded PostgreSQL again, as clean found it"
    assert not embedded.status()["running"]


def test_clean_where_no_server_was_ever_made_says_so_and_makes_none(tmp_path):
    folder = tmp_path / "pg18"
    done = clean(env={**os.environ, "PGQ_DATA_DIR": str(folder), "PGQ_BACKEND": "embedded"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"no embedded PostgreSQL in {folder} yet: nothing to clean"]
    assert not folder.exists()


def test_clean_all_asks_first_and_without_a_yes_leaves_the_folder(own_server):
    _, folder = own_server
    kept = databases.open_database("03-claim-with-a-lease", reset=True)
    done = clean("--all")
    assert done.returncode == 1 and folder.is_dir() and "left" in done.stdout
    with kept.connection() as conn:  # asked before dropping anything: a no drops nothing
        assert run_one(conn, "lab/count_jobs") == (0,)
    done = clean("--all", "--yes")
    assert done.returncode == 0, done.stderr
    assert not folder.exists() and "removed" in done.stdout.splitlines()[-1]


def test_clean_refuses_a_server_it_did_not_start(tmp_path):
    env = {**os.environ, "PGQ_DSN": "postgresql://nobody@127.0.0.1:9/x", "PGQ_BACKEND": "dsn"}
    done = subprocess.run(
        [sys.executable, "-m", "pgq_teach.cli", "clean"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "--this-server" in done.stderr


def test_the_wal_settings_are_set_once_and_a_learners_own_value_stays(own_fresh_server):
    srv, _ = own_fresh_server  # set by its own first start, not copied from the run's template
    assert wal_settings_become(srv.dsn, (256, "off"))
    with psycopg.connect(srv.dsn, autocommit=True) as admin:
        run(admin, "admin/alter_system", {"value": "512MB"}, idents={"name": "max_wal_size"})
        run(admin, "admin/reload_config")
    assert wal_settings_become(srv.dsn, (512, "off"))
    embedded.bound_wal(srv.dsn)  # as every start calls it: PostgreSQL's defaults are gone, so it keeps 512
    with psycopg.connect(srv.dsn, autocommit=True) as admin:  # the files, whatever a reload has reached
        assert run_one(admin, "admin/file_setting", {"name": "max_wal_size"}) == ("512MB",)


def test_clean_leaves_a_template_and_odd_names_and_still_finishes(own_server):
    """A pgq_ database marked as a template (PostgreSQL refuses to drop one) is not the
    course's: the course never marks one. Clean passes it by rather than stopping with a
    traceback before the databases after it and the CHECKPOINT; a name with a quote and
    a semicolon is dropped as one name, and one that differs only in case is not the course's."""
    srv, _ = own_server
    odd = 'pgq_x"; drop database postgres; --'
    with psycopg.connect(srv.dsn, autocommit=True) as admin:
        for name in ("pgq_a_template", odd, "PGQ_SHOUTED"):
            run(admin, "admin/create_database", idents={"name": name})
        run(admin, "admin/clone_database", idents={"name": "pgq_b_lesson", "template": "pgq_a_template"})
        run(admin, "admin/mark_template", idents={"name": "pgq_a_template"})

    done = clean()

    assert done.returncode == 0 and done.stderr == "", done.stderr
    dropped = f"dropped 2 course databases (pgq_b_lesson, {odd});"  # the odd name, as it is
    assert done.stdout.splitlines()[-1].startswith(dropped), done.stdout
    with psycopg.connect(srv.dsn, autocommit=True) as admin:
        names = {row[0] for row in run(admin, "admin/database_names")}
    assert {"pgq_a_template", "PGQ_SHOUTED", "postgres"} <= names
    assert odd not in names and "pgq_b_lesson" not in names


def test_clean_all_refuses_when_the_learners_files_are_inside_the_data_folder(own_server, monkeypatch):
    """PGQ_HOME inside PGQ_DATA_DIR: --all would remove the learner's progress with the
    server's files. One line, exit 2, before anything runs: no database dropped, no file gone."""
    srv, folder = own_server
    home = folder / "learner"
    home.mkdir()
    (home / "progress.json").write_text('{"kept": true}', encoding="utf-8")
    monkeypatch.setenv("PGQ_HOME", str(home))
    databases.open_database("02-row-locks")

    done = clean("--all", "--yes")

    assert done.returncode == 2 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "PGQ_HOME" in done.stderr, done.stderr
    assert (home / "progress.json").read_text(encoding="utf-8") == '{"kept": true}'
    with psycopg.connect(srv.dsn, autocommit=True) as admin:
        names = {row[0] for row in run(admin, "admin/database_names")}
    assert databases.database_name("02-row-locks") in names


def test_a_data_folder_that_is_not_postgresqls_is_refused_and_left_as_it_was(tmp_path):
    """PGQ_DATA_DIR naming a folder of the learner's own (their home, say) that holds
    files and no PostgreSQL: one line, exit 2, and the folder keeps its files and its
    owner (run as root, the wheel hands the data folder to its own system user first)."""
    for name, file in (("my-notes", "notes.txt"), ("a-home", ".profile")):  # a home: only dot files
        refused_and_left_as_it_was(tmp_path, name, file)


def refused_and_left_as_it_was(tmp_path: Path, name: str, file: str) -> None:
    mine = tmp_path / name
    mine.mkdir()
    (mine / file).write_text("mine", encoding="utf-8")
    owner = mine.stat().st_uid
    env = {k: v for k, v in os.environ.items() if k != "PGQ_DSN"}
    env.update(PGQ_DATA_DIR=str(mine), PGQ_HOME=str(tmp_path / "learner"), PGQ_BACKEND="embedded")
    for command in (["clean"], ["clean", "--all", "--yes"], ["server", "start"]):
        done = subprocess.run(
            [sys.executable, "-m", "pgq_teach.cli", *command],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 2 and done.stderr.count("\n") == 1, (command, done.stderr[-2000:])
        assert "PGQ_DATA_DIR" in done.stderr and "not a PostgreSQL data folder" in done.stderr
        assert sorted(p.name for p in mine.iterdir()) == [file] and mine.stat().st_uid == owner


def test_clean_on_a_shared_server_leaves_what_another_role_owns(own_server):
    """--this-server on a server shared with others, as a role with no extra rights: a pgq_
    database another role owns is refused by PostgreSQL (42501). Clean names it and finishes,
    rather than stopping with a traceback before the databases after it."""
    srv, _ = own_server
    with psycopg.connect(srv.dsn, autocommit=True) as admin:
        run(admin, "lab/create_login_role", {"password": "unused"}, idents={"name": "plain_learner"})
        run(admin, "admin/create_database", idents={"name": "pgq_someone_elses"})
    dsn = srv.dsn.replace("postgres:@", "plain_learner:unused@", 1)
    assert dsn != srv.dsn
    env = {**os.environ, "PGQ_DSN": dsn, "PGQ_BACKEND": "dsn"}
    done = subprocess.run(
        [sys.executable, "-m", "pgq_teach.cli", "clean", "--this-server"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]
    line = done.stdout.splitlines()[-1]
    assert line.startswith("dropped 0 course databases;") and "pgq_someone_elses" in line, line
    with psycopg.connect(srv.dsn, autocommit=True) as admin:
        names = {row[0] for row in run(admin, "admin/database_names")}
    assert "pgq_someone_elses" in names


def test_the_folders_all_would_remove_are_named_for_any_data_folder(monkeypatch):
    """PGQ_DATA_DIR=/ has no name to put -nats after: the check before --all names the
    data folder alone rather than stopping with a ValueError traceback (the server then
    refuses / in one line)."""
    from pgq_teach.infra import tidy

    monkeypatch.setenv("PGQ_DATA_DIR", "/")
    assert tidy.removed_by_all() == [Path("/")]
    monkeypatch.setenv("PGQ_DATA_DIR", "/srv/course/pg")
    assert tidy.removed_by_all() == [
        Path("/srv/course/pg"),
        Path("/srv/course/pg-checker"),
        Path("/srv/course/pg-nats"),
    ]


def test_clean_all_for_a_new_data_folder_makes_no_server_only_to_remove_it(tmp_path):
    """No server was ever made there: --all stops lesson 11's broker and removes its store
    (what start wrote, token and all), and runs no initdb (it used to make a cluster to
    delete it)."""
    from pgq_teach.infra import broker

    folder = tmp_path / "pg18"
    env = {k: v for k, v in os.environ.items() if k != "PGQ_DSN"}
    env.update(PGQ_DATA_DIR=str(folder), PGQ_HOME=str(tmp_path / "home"), PGQ_BACKEND="embedded")
    store = tmp_path / "pg18-nats"
    the_broker = broker.Broker(store)
    the_broker.start()
    try:
        done = clean("--all", "--yes", env=env)
    finally:
        the_broker.stop()
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.splitlines() == [
        "stopped the NATS broker (lesson 11)",
        done.stdout.splitlines()[1],
        f"no embedded PostgreSQL in {folder}: nothing more to remove",
    ]
    assert done.stdout.splitlines()[1].startswith(f"removed lesson 11's broker store {store} (")
    assert sorted(p.name for p in tmp_path.iterdir()) == [], list(tmp_path.iterdir())


@pytest.mark.parametrize("held", [["notes.txt"], ["nats.conf"], ["nats.conf", "jetstream", "thesis.tex"]])
def test_clean_all_leaves_a_folder_named_like_the_broker_store_that_is_not_it(tmp_path, held):
    """$PGQ_DATA_DIR-nats holding anything but what the course's broker writes (or a
    nats.conf of someone else's): one line, exit 2, before anything runs, every file kept."""
    folder = tmp_path / "pg18"
    store = tmp_path / "pg18-nats"
    store.mkdir()
    for name in held:
        (store / name).write_text(f"mine: {name}", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PGQ_DSN"}
    env.update(PGQ_DATA_DIR=str(folder), PGQ_HOME=str(tmp_path / "home"), PGQ_BACKEND="embedded")
    done = clean("--all", "--yes", env=env)
    assert done.returncode == 2 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "not lesson 11's broker store" in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pg18-nats"]  # no data folder made
    assert {p.name: p.read_text(encoding="utf-8") for p in store.iterdir()} == {n: f"mine: {n}" for n in held}


@pytest.mark.parametrize(
    "held",
    [["notes.txt"], ["data/thesis.tex"], ["template/notes.txt", ".lock"], ["data/PG_VERSION", "mine.txt"]],
)
def test_clean_all_leaves_a_folder_named_like_the_checkers_that_is_not_it(tmp_path, held):
    """$PGQ_DATA_DIR-checker holding anything the checker does not write there: one line,
    exit 2, before anything runs, every file kept."""
    folder = tmp_path / "pg18"
    checker = tmp_path / "pg18-checker"
    for name in held:
        (checker / name).parent.mkdir(parents=True, exist_ok=True)
        (checker / name).write_text(f"mine: {name}", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PGQ_DSN"}
    env.update(PGQ_DATA_DIR=str(folder), PGQ_HOME=str(tmp_path / "home"), PGQ_BACKEND="embedded")
    done = clean("--all", "--yes", env=env)
    assert done.returncode == 2 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "is not the checker's folder" in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pg18-checker"]  # no data folder made
    kept = {
        str(p.relative_to(checker)): p.read_text(encoding="utf-8") for p in checker.rglob("*") if p.is_file()
    }
    assert kept == {n: f"mine: {n}" for n in held}
