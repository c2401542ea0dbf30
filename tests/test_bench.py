"""pgq-teach bench --quick: every setup runs and every run's end state holds
(all jobs done, none claimed twice). Timings are printed, never asserted."""

import json

from pgq_teach import bench, cli


def test_bench_quick_runs_every_setup_and_checks_every_end_state(pg, tmp_path, capsys):
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
    assert "| setup | median |" in text and "CPUs" in text


def test_bad_bench_settings_are_refused():
    import pytest

    from pgq_teach.errors import BadInput

    with pytest.raises(BadInput, match="jobs"):
        bench.run_bench(jobs=5)
    with pytest.raises(BadInput, match="repeats"):
        bench.run_bench(repeats=0)
