"""pgq-teach bench --quick: every setup runs and every run's end state holds
(all jobs done, none claimed twice). Timings are printed, never asserted."""

import json
import statistics

from helpers import assert_fits
from pgq_teach import bench, cli


def test_bench_quick_runs_every_setup_and_checks_every_end_state(pg, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = tmp_path / "bench.json"
    assert cli.main(["bench", "--quick", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["ok"] and data["repeats"] == 2 and data["jobs"] == 300
    names = [row["name"] for row in data["rows"]]
    want = len(bench.setups(10, bench.pgqueuer_version() is not None))
    assert len(names) == want and len(set(names)) == want
    for row in data["rows"]:
        assert row["ok"], row
        assert len(row["values"]) == 2 and all(v > 0 for v in row["values"])
    text = capsys.readouterr().out
    assert "setup" in text and "median" in text and "CPUs" in text
    # the terminal's width, from COLUMNS; a file's path is printed whole, however long
    assert max(len(line) for line in text.splitlines() if not line.startswith("JSON:")) <= 80, text
    for row in data["rows"]:
        if row["unit"] == "jobs/s":
            assert f"{statistics.median(row['values']):,.0f}" in text, row


def test_the_bench_table_keeps_to_the_terminal_and_its_figures():
    rows = [
        bench.BenchRow(
            "Worker, batch 100, 4 workers", "jobs/s", "", 100, 4, [12_345.6, 12_001.2], vs_ceiling=0.8
        ),
        bench.BenchRow(
            "LISTEN/NOTIFY wake-up latency",
            "ms",
            "",
            None,
            1,
            [3.2, 4.1],
            p99_ms=[9.5, 11.0],
            wakeups_per_job=[1.0],
            sessions=[1],
        ),
        bench.BenchRow("PgQueuer", "jobs/s", "", None, None, ok=False, notes=["not installed"]),
    ]
    result = bench.BenchResult("PostgreSQL 18.6", 2, 300, 2, rows, "not installed")
    for width in (60, 80, 120):
        text = result.summary(width)
        assert_fits(text, width, "12,173 12,001–12,346 0.80 3.6 10.2 3.2–4.1 1")
        assert "session" in text and "installed" in text


def test_bad_bench_settings_are_refused():
    import pytest

    from pgq_teach.errors import BadInput

    with pytest.raises(BadInput, match="jobs"):
        bench.run_bench(jobs=5)
    with pytest.raises(BadInput, match="repeats"):
        bench.run_bench(repeats=0)


def _pool_result(machine_load):
    rows = [
        bench.BenchRow("Worker batch 100, 4 workers", "jobs/s", "worker", 100, 4, [10_000.0]),
        bench.BenchRow("Worker batch 100, 1 worker, 4 executors", "jobs/s", "pool", 100, 1, [9_500.0]),
    ]
    result = bench.BenchResult("PostgreSQL 18.6", 2, 300, 1, rows, "not installed", machine=machine_load)
    bench._compare(result)
    return {text: met for text, _, met in result.targets if "4 executors" in text}


def test_a_busy_machine_gets_no_verdict_on_the_targets():
    from pgq_teach.machine import MachineLoad

    quiet = MachineLoad(2, 0.2, 0.9, 60.0, others_cpus=0.05, server_seen=True)
    busy = MachineLoad(2, 0.2, 3.0, 60.0, others_cpus=1.2, server_seen=True)
    loaded_at_start = MachineLoad(2, 4.0, 0.5, 60.0, others_cpus=0.0, server_seen=True)
    assert (quiet.busy, busy.busy, loaded_at_start.busy) == (False, True, True)
    assert list(_pool_result(quiet).values()) == [True]  # 0.95 of separate Workers: met
    for machine_load in (busy, loaded_at_start, None):
        assert list(_pool_result(machine_load).values()) == [None]
    assert "no verdict" in busy.line() and "quiet" in quiet.line()


def test_the_server_watch_counts_the_servers_own_cpu(db):
    """A backend that works and then ends inside the watch still counts as the server's."""
    import time

    from pgq_teach import machine

    with db.connection() as conn:
        postmaster = machine.postmaster_of(conn.info.backend_pid)
    with machine.ServerWatch(postmaster, every=0.05) as watch:
        began = time.process_time()
        bench._seed(db, 200_000)  # on a session of its own, closed before the watch ends
        client = time.process_time() - began
    # the seed is the server's work: a watch that lost the ended backend would see next to none
    assert watch.seconds() is not None and watch.seconds() > client
