"""The pgq-teach command: help everywhere, a round trip, and clear errors."""

import os
import re
import subprocess
import sys

import pytest

COMMANDS = [[], ["lab"], ["server"], ["enqueue"], ["worker"], ["stats"], ["fault-run"], ["torture"], ["load"]]


def cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "pgq_teach.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


@pytest.mark.parametrize("words", COMMANDS)
def test_help_on_each_command(words):
    out = cli(*words, "--help")
    assert out.returncode == 0 and "usage: pgq-teach" in out.stdout


def test_enqueue_work_and_stats_round_trip(db):
    label = db.name[len("pgq_") :]
    assert cli("enqueue", "send_receipt", '{"order_id": 101}', "--db", label).returncode == 0
    assert "ready 1" in cli("stats", "--db", label).stdout
    out = cli("worker", "--db", label, "--until-idle", "--sleep-ms", "0")
    assert out.returncode == 0 and "done 1" in out.stdout
    assert "done 1" in cli("stats", "--db", label).stdout


def test_stats_show_each_kind_with_its_due_jobs_and_job_timeout(db, conn):
    from pgq_teach import kinds, queue, tables

    label = db.name[len("pgq_") :]
    kinds.set_policy(conn, "invoice", timeout_s=90)
    queue.enqueue_many(conn, "invoice", [{}, {}])
    out = cli("stats", "--db", label, env={"COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    [row] = [line.split() for line in out.stdout.splitlines() if line.split()[:1] == ["invoice"]]
    assert row[1] == "2" and tables.duration(90) in " ".join(row)  # 2 due, and its timeout


def test_server_start_prints_the_backend_line(pg):
    out = cli("server", "start")
    assert out.returncode == 0 and f"PostgreSQL {pg.version}" in out.stdout


@pytest.mark.parametrize(
    "args, env, says",
    [
        (["enqueue", "send_receipt", "{not json"], {}, "PAYLOAD is not valid JSON"),
        (["enqueue", "", "{}"], {}, "kind must be a non-empty string"),
        (["stats"], {"PGQ_BACKEND": "kafka"}, "auto, dsn, docker, embedded"),
        (["stats"], {"PGQ_BACKEND": "dsn", "PGQ_DSN": "postgresql://x:pw@127.0.0.1:9/db"}, "127.0.0.1:9"),
        (["worker", "--fail-rate", "2"], {}, "--fail-rate must be a number from 0 to 1, got 2"),
        (["worker", "--sleep-ms", "-5"], {}, "--sleep-ms must be from 0 to 3,600,000, got -5"),
        (["enqueue", "k", "{}", "--priority", "10"], {}, "priority"),
        (["enqueue", "k", "{}", "--tenant", ""], {}, "tenant"),
        (["enqueue", "k", "{}", "--unique-key", "x" * 201], {}, "unique_key"),
        (["worker", "--per-tenant", "2"], {}, "per_tenant caps the fair claim"),
        (["worker", "--fair", "--priorities"], {}, "not both"),
        (["worker", "--timeout", "0"], {}, "timeout"),
        (["worker", "--rate", "call_webhook"], {}, "--rate takes KIND=PER_SECOND"),
        (["worker", "--rate", "call_webhook=fast"], {}, "--rate call_webhook=fast"),
        (["worker", "--rate", "invoice=5"], {}, "rate_limits names kind 'invoice'"),
        (["fault-run", "--timeout", "0"], {}, "--timeout must be a number of seconds"),
        (["fault-run", "--rate-limit", "-1"], {}, "--rate-limit must be"),
    ],
)
def test_bad_input_is_one_clear_line_not_a_traceback(args, env, says):
    out = cli(*args, env=env)
    assert out.returncode == 2
    assert says in out.stderr
    assert "Traceback" not in out.stderr


def test_the_fault_run_is_named_fault_run_and_torture_is_its_alias():
    top = cli("--help").stdout
    assert "fault-run" in top
    options = [set(re.findall(r"--[a-z-]+", cli(name, "--help").stdout)) for name in ("fault-run", "torture")]
    assert options[0] == options[1] and "--requeue-every" in options[0]


def test_the_worker_counts_a_retry_as_retried(db):
    label = db.name[len("pgq_") :]
    assert (
        cli("enqueue", "send_receipt", '{"fail": true}', "--db", label, "--max-attempts", "2").returncode == 0
    )
    out = cli("worker", "--db", label, "--until-idle", "--sleep-ms", "0")
    assert out.returncode == 0 and "retried 1," in out.stdout and "dead 0" in out.stdout


def test_a_second_enqueue_of_a_live_unique_key_names_the_first_job_and_adds_nothing(db):
    label = db.name[len("pgq_") :]
    args = ("enqueue", "send_receipt", '{"order_id": 7}', "--db", label, "--unique-key", "order-7")
    first, again = cli(*args), cli(*args)
    assert first.returncode == again.returncode == 0, again.stderr
    job_id = re.search(r"enqueued job (\d+)", first.stdout)[1]
    assert f"job {job_id} (send_receipt) already holds unique key 'order-7': nothing added" in again.stdout
    assert "ready 1" in cli("stats", "--db", label).stdout


def test_a_fair_worker_with_a_rate_limit_and_a_timeout_drains_tenants_jobs(db, conn):
    """The options reach the library: every job is done, with its tenant and priority."""
    from helpers import job_row

    label = db.name[len("pgq_") :]
    ids = []
    for tenant in ("acme", "acme", "globex"):
        out = cli("enqueue", "send_receipt", "{}", "--db", label, "--tenant", tenant, "--priority", "3")
        assert out.returncode == 0, out.stderr
        ids.append(int(re.search(r"enqueued job (\d+)", out.stdout)[1]))
    out = cli(
        "worker", "--db", label, "--until-idle", "--sleep-ms", "0", "--fair", "--per-tenant", "1",
        "--timeout", "30", "--rate", "send_receipt=100",
    )  # fmt: skip
    assert out.returncode == 0 and "done 3" in out.stdout, (out.stdout, out.stderr)
    rows = [job_row(conn, job_id) for job_id in ids]
    assert [(r["tenant"], r["priority"], r["status"]) for r in rows] == [
        ("acme", 3, "done"),
        ("acme", 3, "done"),
        ("globex", 3, "done"),
    ]
