"""The interview rehearsal: its content files, the seeded draw, the estimate
against the measured capacity, quoting lesson 11's stored run, the rubric shown
only after a step ends, saving as you type, and the terminal and the notebook
continuing one attempt."""

from __future__ import annotations

import io
import math
import os
import subprocess
import sys

import pytest

from pgq_teach import cli, interview, measurements
from pgq_teach.errors import BadInput
from pgq_teach.infra import learner
from pgq_teach.interview import Rehearsal
from pgq_teach.interview import content as interview_content


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    return tmp_path


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


CAPACITY = {  # a stored capacity run, as lesson 12 records it (values from one run under load)
    "runs": {
        str(b): {
            "batch": b,
            "commits_per_s": c,
            "wal_bytes_per_s": w,
            "wal_bytes_per_job": j,
            "insert_wal_bytes_per_job": 288.0,
        }
        for b, c, w, j in [
            (1, 1600, 630_000, 786),
            (10, 1300, 4_060_000, 637),
            (20, 1250, 7_890_000, 648),
            (50, 900, 15_230_000, 717),
        ]
    },
    "bytes_per_job": 254.0,
    "synchronous_commit": "on",
}


# --- the content -----------------------------------------------------------------------


def test_the_content_has_every_part_the_rehearsal_needs():
    assert interview.STEP_KEYS == ("requirements", "estimation", "design", "deep_dive", "trade_offs")
    assert interview.DIMENSIONS == (
        "requirements",
        "estimation",
        "high-level design",
        "deep dive",
        "trade-offs",
        "communication",
    )
    for s in interview.STEPS:
        assert s.prompt and s.minutes > 0 and len(s.hints) >= 3 and len(s.red_flags) >= 3
        assert [lv.level for lv in s.rubric.levels] == [1, 2, 3]
        for scenario in interview.SCENARIOS:
            assert interview.model_answer(s.key, scenario)
            rubric = interview.rubric_for(s.key, scenario)
            assert all(lv.says and lv.example for lv in rubric.levels)
    assert set(interview.SCENARIOS) == {"small-store", "flash-sale", "multi-tenant-saas"}
    assert len(interview.FOLLOW_UPS) >= 25


def test_the_follow_ups_cover_what_a_real_interviewer_asks():
    topics = {f.topic for f in interview.FOLLOW_UPS.values()}
    for must in (
        "HA and failover",
        "multi-region",
        "backpressure on a shared database",
        "partner rate limits",
        "per-key ordering",
        "cancellation and a status API",
        "poison jobs",
        "10x and 100x",
        "SLO-based alerting",
        "scheduled and cron jobs",
        "multi-tenant fairness",
        "exactly once",
        "fencing",
        "bloat",
        "poolers",
    ):
        assert must in topics, must


def test_the_design_model_answer_covers_the_whole_system_for_its_scenario():
    flash = interview.model_answer("design", "flash-sale")
    for must in ("object store", "refund", "per\nkind", "token bucket", "no label to cancel"):
        assert " ".join(must.split()) in " ".join(flash.split()), must
    small = " ".join(interview.model_answer("design", "small-store").split())
    assert "payment check" not in small and "label" not in small  # it has neither
    saas = " ".join(interview.model_answer("trade_offs", "multi-tenant-saas").split())
    assert "runs one system" not in saas and "already" in saas  # the team already runs Kafka


@pytest.mark.parametrize("step_key", interview.STEP_KEYS)
def test_every_step_is_written_per_scenario(step_key):
    """The model answer, the strong-hire example and the rubric notes differ by scenario."""
    answers = {sc: interview.model_answer(step_key, sc) for sc in interview.SCENARIOS}
    assert len(set(answers.values())) == len(answers)
    strong = {sc: interview.rubric_for(step_key, sc).levels[-1] for sc in interview.SCENARIOS}
    assert len({lv.example for lv in strong.values()}) == len(strong)
    assert len({lv.says for lv in strong.values()}) == len(strong)


@pytest.mark.parametrize("scenario", sorted(interview.SCENARIOS))
def test_each_hard_part_has_an_answer_section_in_each_step_it_names(scenario):
    """Each scenario file lists its hard parts by key; every step a hard part names has a
    section under that key (not a keyword somewhere), and the answer shows it, titled."""
    s = interview.scenario_named(scenario)
    assert len(s.hard_parts) >= 3
    for hard in s.hard_parts:
        assert hard.steps, hard
        for step_key in hard.steps:
            section = s.steps[step_key].section(hard.key)
            assert len(section.split()) >= 25, (scenario, hard.key, step_key)
            title = hard.title[0].upper() + hard.title[1:]
            assert f"{title}: " in interview.model_answer(step_key, scenario), (hard.key, step_key)


def test_the_communication_rubric_at_strong_hire_shows_and_answers_first():
    says = interview.COMMUNICATION.level(3).says
    assert "Answers first, then explains" in says and "shows a mechanism" in says


def test_every_trade_off_cell_has_a_source_for_every_system():
    systems, rows = interview_content.trade_offs()
    assert set(systems) == {
        "postgres",
        "sqs_standard",
        "sqs_fifo",
        "rabbitmq",
        "kafka",
        "redis_streams",
        "nats_jetstream",
    }
    assert {r.key for r in rows} == {
        "retry_and_delay",
        "ordering",
        "fan_out_replay",
        "retention",
        "dedup",
        "operations_cost",
        "exactly_once",
        "message_size",
    }
    for row in rows:
        for cell in row.cells.values():
            assert cell.source.startswith(("https://", "guide, ", "measurement: ")), cell
            if cell.source.startswith("measurement: "):
                assert hasattr(measurements, cell.source.split(": ")[1])
    table = interview.trade_off_markdown()
    assert "SQS FIFO" in table and "[1] " in table


def test_the_trade_off_table_has_what_the_review_found_missing():
    _, rows = interview_content.trade_offs()
    cell = {(r.key, s): c.text for r in rows for s, c in r.cells.items()}
    assert "streams drop a repeat" in cell["dedup", "rabbitmq"]
    assert "365 days" in cell["fan_out_replay", "sqs_fifo"]
    assert "4.2" in cell["retry_and_delay", "kafka"] and "preview" in cell["retry_and_delay", "kafka"]
    peak = interview.work_estimate("flash-sale").kinds
    events = sum(k.jobs_per_s for k in peak)  # 1,208 jobs a second at the flash sale's peak
    assert f"100 / {events:,.0f} = {100 / events:.2f} s" in cell["dedup", "redis_streams"]
    for model in (interview.model_answer("trade_offs", sc) for sc in interview.SCENARIOS):
        assert "RabbitMQ give leases" not in model and "delays and dead-letter queues built in" not in model


def test_every_vendor_fact_in_the_trade_off_table_is_dated_or_versioned():
    """Issue 48, item 11: products change, so a cell that cites a web page says when it was
    read, in the table the learner sees; PostgreSQL's pages are the major version the course
    runs, not 'current', which moves."""
    import re

    _, rows = interview_content.trade_offs()
    table = interview.trade_off_markdown()
    months = "January|February|March|April|May|June|July|August|September|October|November|December"
    for row in rows:
        for cell in row.cells.values():
            if cell.source.startswith("https://"):
                assert re.fullmatch(rf"(?:{months}) 20\d\d", cell.read), cell
                assert cell.cited.endswith(f"(read {cell.read})") and cell.cited in table
                assert "/docs/current/" not in cell.source, cell
            else:  # the guide and a measurement carry their own edition and time
                assert cell.cited == cell.source


def test_the_two_wrong_model_answers_are_fixed():
    fairness = interview.follow_up("fairness").model()
    assert "LATERAL" in fairness and "refuses FOR UPDATE with\nDISTINCT" not in fairness
    assert "DISTINCT ON tenant" not in fairness
    unique = interview.follow_up("unique")
    assert "WHERE status IN" not in "".join(s.text for s in unique.sql)
    assert "is not enough" in unique.model_text


# --- the draw --------------------------------------------------------------------------


def test_two_rehearsals_in_a_row_differ_in_scenario_and_follow_ups():
    r = Rehearsal("draw", seed=1)
    first = r.current
    record = r.finish(seed=2)
    second = r.current
    assert record["scenario"] == first["scenario"]
    assert second["scenario"] != first["scenario"]
    assert not set(second["follow_ups"]) & set(first["follow_ups"])
    assert len(second["follow_ups"]) == interview.FOLLOW_UPS_PER_REHEARSAL


def test_the_same_seed_draws_the_same_rehearsal(home):
    a = Rehearsal("a", seed=7).current
    b = Rehearsal("b", seed=7).current
    assert (a["scenario"], a["follow_ups"]) == (b["scenario"], b["follow_ups"])


def test_a_scenario_asked_for_is_used_and_a_wrong_one_refused():
    assert Rehearsal("s", scenario="flash-sale").current["scenario"] == "flash-sale"
    with pytest.raises(BadInput, match="no scenario"):
        Rehearsal("s2", scenario="huge-store")
    with pytest.raises(BadInput, match="minutes"):
        Rehearsal("s3", minutes=1)


# --- the estimate ----------------------------------------------------------------------


def test_the_estimate_recomputed_by_hand_from_the_profile_and_measured_commits():
    measurements.record(measurements.CAPACITY_12, CAPACITY)
    est = interview.scenario_estimate("flash-sale")
    # flash sale: 400 orders/s at peak, 1 + 1 + 1 + 0.02 jobs an order, batches of 50
    jobs = 400 * 3.02
    assert math.isclose(est.jobs_per_s, jobs)
    assert math.isclose(est.commits_per_s, jobs * 2 / 50)  # a claim and a completion per batch
    assert math.isclose(est.commit_share, (jobs * 2 / 50) / 900)  # measured at the same batch, 50
    assert math.isclose(est.row_writes_per_s, 4 * jobs)
    assert math.isclose(est.wal_bytes_per_s, jobs * (717 + 288))
    assert math.isclose(est.wal_share, jobs * (717 + 288) / 15_230_000)
    avg = 400_000 / 86_400 * 3.02
    assert math.isclose(est.storage_bytes_per_day, avg * 86_400 * 254)
    assert math.isclose(est.rows_kept, avg * 60 * 7 * 24 * 60)
    assert est.verdict.startswith("fits")  # about 6 % of commits and 8 % of WAL, under the 50 % headroom


def test_the_flash_sale_s_binding_constraint_is_the_carrier_recomputed_by_hand():
    """400 labels a second against the carrier's 100 for ten minutes: (400 - 100) x 600 =
    180,000 queued; the last peak label waits 180,000 / 100 = 1,800 s, 30 minutes, against
    its 15-minute SLO. No server measurement is needed to see it."""
    work = interview.work_estimate("flash-sale")
    carrier = next(p for p in work.partners if p.name == "carrier API")
    assert carrier.sends_per_s == 400 and carrier.quota_per_s == 100
    assert carrier.backlog == (400 - 100) * 10 * 60 == 180_000
    assert carrier.wait_s == 180_000 / 100 == 30 * 60 and carrier.slo_s == 15 * 60 and not carrier.slo_holds
    after = 400_000 / 86_400  # the day's average arrivals keep coming after the peak
    assert math.isclose(carrier.drain_s, 180_000 / (100 - after))
    binding = work.binding()
    assert binding.startswith("binding constraint: the carrier API's quota") and "180,000" in binding
    assert "30 min" in binding
    labels = next(k for k in work.kinds if k.kind == "shipping_label")
    assert math.isclose(labels.cpu_s_per_s, 400 * 0.020) and labels.stored_bytes_per_day == 400_000 * 60_000
    text = interview.model_answer("estimation", "flash-sale")
    assert text.splitlines()[0] == binding  # answer first
    measurements.record(measurements.CAPACITY_12, CAPACITY)
    text = interview.model_answer("estimation", "flash-sale")
    assert "a floor, not the server's capacity" in text and "what a real capacity test adds" in text


def test_the_other_scenarios_name_their_own_binding_constraint():
    small = interview.work_estimate("small-store")
    assert small.binding().startswith("binding constraint: the warehouse API's outages")
    warehouse = small.partners[0]
    assert warehouse.outage_backlog == 20_000 / 36_000 * 3600  # an hour of the ten busy hours' orders
    invoices = next(k for k in small.kinds if k.kind == "invoice_pdf")
    assert invoices.cpu_s_per_s == 5 * 0.4  # two CPUs rendering at the peak
    saas = interview.work_estimate("multi-tenant-saas")
    tax = saas.partners[0]
    assert tax.backlog == (120 - 50) * 3600 and tax.slo_holds  # queued, but by the nightly export
    assert "tax service's quota" in saas.binding()


def test_the_small_store_by_hand_and_a_small_share_never_reads_zero_percent():
    measurements.record(measurements.CAPACITY_12, CAPACITY)
    est = interview.scenario_estimate("small-store")
    # small store: 5 orders/s at peak, 3 jobs an order, 20,000 orders a day, batches of 10, 30 days
    assert math.isclose(est.commits_per_s, 5 * 3 * 2 / 10)  # 3 commits/s
    assert math.isclose(est.wal_bytes_per_s, 15 * (637 + 288))  # 13,875 bytes/s
    assert math.isclose(est.storage_bytes_per_day, 20_000 * 3 * 254)  # 15.2 MB a day
    assert math.isclose(est.rows_kept, 20_000 * 3 * 30)
    text = "\n".join(est.lines())
    assert "0.2% of the commits" in text and "0.3% of the WAL" in text and " 0% " not in text


def test_the_verdict_follows_the_share_against_the_headroom():
    m = interview.Measured(10, 100.0, 0.0, 0.0, 0.0, 0.0, "test")
    assert interview.estimate(200, measured=m).verdict.startswith("fits")  # 40 commits/s of 100
    assert interview.estimate(400, measured=m).verdict.startswith("tight")  # 80 of 100
    assert interview.estimate(1000, measured=m).verdict.startswith("does not fit")  # 200 of 100


def test_the_estimate_needs_the_capacity_at_the_same_batch():
    with pytest.raises(BadInput, match="no capacity measured yet"):
        interview.scenario_estimate("small-store")
    measurements.record(measurements.CAPACITY_12, {**CAPACITY, "runs": {"1": CAPACITY["runs"]["1"]}})
    with pytest.raises(BadInput, match="no capacity measured at batch 10"):
        interview.scenario_estimate("small-store")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"jobs_per_s": 0},
        {"jobs_per_s": float("nan")},
        {"work_ms": -1},
        {"jobs_per_s": True},
        {"keep_minutes": 0},
    ],
)
def test_the_estimate_refuses_bad_input(kwargs):
    args = {"jobs_per_s": 100, "measured": interview.Measured(1, 1.0, 1.0, 1.0, 1.0, 1.0, "t")} | kwargs
    with pytest.raises(BadInput):
        interview.estimate(**args)


def test_lessons_11_and_12_quote_the_same_stored_run():
    """Lesson 11 records its drain under DRAIN_JOBS_PER_S_11; whatever lesson 12
    quotes of it must be that stored value, with its lesson and time."""
    measurements.record(measurements.DRAIN_JOBS_PER_S_11, 15_154)
    stored = measurements.read(measurements.DRAIN_JOBS_PER_S_11)
    quoted = interview.drain_quote()
    assert quoted.value == stored["value"] and quoted.at == stored["at"]
    text = interview.model_answer("estimation", "flash-sale")
    assert f"drained {interview.readable(15_154)} jobs/s" in text and stored["at"] in text
    assert "lesson 11-when-to-switch" in text
    measurements.record(measurements.DRAIN_JOBS_PER_S_11, 8_639)  # a new run of lesson 11
    assert "drained 8,639 jobs/s" in interview.model_answer("estimation", "flash-sale")
    assert "15,154" not in interview.summary_markdown()


# --- the rehearsal ---------------------------------------------------------------------


FOLD = {"twofold": 2, "fivefold": 5, "tenfold": 10, "twentyfold": 20, "fiftyfold": 50, "hundredfold": 100}


def test_lesson_12_s_factor_between_batch_sizes_is_the_one_its_arithmetic_gives():
    """Issue 48, item 5: the lesson said "fiftyfold" for 0.2 against 0.02 commits a job.
    The factor named is recomputed from the two batch sizes the sentence gives, and the
    larger one is the batch lesson 11's stored drain ran with."""
    import re
    from pathlib import Path

    import nbformat

    notebooks = Path(__file__).parent.parent / "notebooks"
    nb = nbformat.read(notebooks / "12-the-interview.ipynb", as_version=4)
    (prose,) = [c.source for c in nb.cells if c.get("id") == "46d4f1eb"]
    eleven = nbformat.read(notebooks / "11-when-to-switch.ipynb", as_version=4)
    (drained,) = [c for c in eleven.cells if c.get("id") == "ad93c49d"]
    ran = re.search(r"in batches of (\d+)", "".join(o.get("text", "") for o in drained.outputs))
    assert ran, "lesson 11's stored drain summary"
    said = re.search(r"differ (\w+) \(2 / (\d+) = ([\d.]+) against 2 / (\d+) = ([\d.]+)\)", prose)
    assert said, prose
    word, small, per_small, big, per_big = said.groups()
    assert float(per_small) == 2 / int(small) and float(per_big) == 2 / int(big)
    assert FOLD[word] == (2 / int(small)) / (2 / int(big))
    assert big == ran.group(1)


def test_the_rubric_and_model_answer_show_only_after_the_step_ends():
    r = Rehearsal("hidden", seed=3)
    with pytest.raises(BadInput, match="end step"):
        r.model("design")
    with pytest.raises(BadInput, match="end step"):
        r.score("high-level design", 3)
    r.answer("design", "checkout writes the order and its jobs in one transaction")
    assert r.end_step("design").dimension == "high-level design"
    assert "inserts the order" in r.model("design")
    r.score("high-level design", 2)
    assert r.scores() == {"high-level design": 2}


def test_everything_typed_is_saved_and_survives_a_new_process_view():
    clock = Clock()
    r = Rehearsal("saved", clock=clock, seed=4)
    r.ask("How many orders at peak?\nWhich jobs?")
    r.answer("requirements", "at least once; 400 orders/s at peak")
    r.flag("requirements", 1)
    r.end_step("requirements")
    r.score("requirements", 3)
    key = r.follow_up_keys[0]
    r.answer_follow_up(key, "my follow-up answer")
    r.start("estimation")
    clock.now += 90
    r.stop()
    again = Rehearsal("saved", clock=clock)
    assert again.current["questions"].startswith("How many orders")
    assert again.answer_of("requirements") == "at least once; 400 orders/s at peak"
    assert again.flags("requirements") == [1] and again.scores() == {"requirements": 3}
    assert again.follow_up_answer(key) == "my follow-up answer" and again.spent("estimation") == 90
    assert "my follow-up answer" in "\n".join(interview.summary_lines(again))
    record = again.finish()
    assert record["follow_up_answers"] == {key: "my follow-up answer"}
    assert again.trend()[0] == ("requirements", [3, None])  # last time's 3 beside this time's none yet


def test_the_interviewer_answers_every_clarify_topic_from_the_scenario():
    r = Rehearsal("clarify", scenario="flash-sale")
    answers = dict(r.interviewer_answers())
    assert set(answers) == set(interview_content.opening()["topics"])
    assert "100 label requests a second" in answers["partners"]


def test_a_step_s_time_scales_with_the_minutes_asked_for():
    short = Rehearsal("short", minutes=interview.DEFAULT_MINUTES / 2)
    assert short.seconds_for("design") == interview.step("design").minutes * 60 / 2


# --- the terminal and the notebook on one attempt ---------------------------------------


def lines(*typed: str):
    it = iter(typed)
    return lambda: next(it, None)


def test_the_terminal_continues_the_notebook_s_attempt_and_changes_nothing_it_did_not_type():
    from pgq_teach.widgets.rehearsal import RehearsalWidget

    widget = RehearsalWidget(Rehearsal(seed=5))
    widget.questions.value = "Peak orders a second?"
    widget.answer.value = "typed in the notebook"
    widget.end_button.click()
    widget.flag_boxes[0].value = True
    widget.score_pick.value = 2
    out: list[str] = []
    # the terminal: estimation ended with empty lines (answer twice, flags, score), one line for the
    # design step, then input ends
    typed = ["", "", "", "", "a line typed in the terminal", ""]  # the 2nd Enter ends an empty step
    result = interview.rehearse_in_terminal(lines(*typed), out.append, Rehearsal())
    assert result is None  # input ended: nothing finished
    r = Rehearsal()
    assert r.answer_of("requirements") == "typed in the notebook"
    assert r.flags("requirements") == [0] and r.scores()["requirements"] == 2  # empty lines kept them
    assert r.answer_of("design") == "a line typed in the terminal"
    assert r.past == []
    text = "\n".join(out)
    assert "continuing your open rehearsal" in text and "[0:00 of" not in text
    assert text.count("time 0:00 of") == 2  # the time once a step, when it ends
    reloaded = RehearsalWidget(Rehearsal())
    reloaded.steps.value = "design"
    assert reloaded.answer.value == "a line typed in the terminal"


def test_the_terminal_runs_a_whole_rehearsal_and_finishes_only_when_told():
    measurements.record(measurements.CAPACITY_12, CAPACITY)
    r = Rehearsal(seed=6, scenario="flash-sale")
    per_step = ["my answer", "", "1", "2"]  # answer, end, tick flag 1, score 2
    follow_ups = [x for key in r.follow_up_keys for x in (f"answer to {key}", "")]
    board = [""] * 6  # after the deep dive's answer: each mechanism skipped with an empty line
    deep_dive = [per_step[0], per_step[1], *board, *per_step[2:]]
    typed = ["Peak?", "", *per_step * 3, *deep_dive, *per_step, *follow_ups, "3", "finish"]
    out: list[str] = []
    record = interview.rehearse_in_terminal(lines(*typed), out.append, r)
    assert record is not None and record["scenario"] == "flash-sale"
    assert record["scores"] == {**{s.rubric.dimension: 2 for s in interview.STEPS}, "communication": 3}
    assert all(record["follow_up_answers"][k] == f"answer to {k}" for k in record["follow_ups"])
    text = "\n".join(out)
    assert "The interviewer answers:" in text and "strong hire" in text
    assert Rehearsal().current["scenario"] != "flash-sale"  # the next one draws another


def test_the_cli_runs_the_rehearsal_with_a_scenario_and_minutes(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("How many orders?\n\n"))
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["interview", "--scenario", "flash-sale", "--minutes", "45"]) == 0  # input ended, saved
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80, out  # prose wraps to the terminal
    words = " ".join(out.split())
    assert "a flash sale, about 45 minutes" in words and "400 orders a second" in words


def test_the_cli_takes_a_scenario_s_short_name_and_refuses_an_ambiguous_one(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("How many tenants?\n\n"))
    assert cli.main(["interview", "--scenario", "saas"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "a multi-tenant SaaS" in out and "it continues" not in out
    assert Rehearsal().current["scenario"] == "multi-tenant-saas"
    assert interview.scenario_key("flash") == "flash-sale"
    for name in ("s", "sale-flash", "multi-tenant"):  # no word of one key, or not one word
        with pytest.raises(BadInput, match="the scenarios are"):
            interview.scenario_key(name)


def test_a_stray_enter_does_not_end_an_empty_step_but_a_second_one_does():
    out: list[str] = []
    r = Rehearsal(seed=2)
    interview.rehearse_in_terminal(lines("Peak?", "", "", "typed after the warning", ""), out.append, r)
    assert out.count(interview.NOTHING_TYPED) == 1 and not r.ended("estimation")
    assert r.answer_of("requirements") == "typed after the warning" and r.ended("requirements")
    out.clear()
    interview.rehearse_in_terminal(lines(""), out.append, Rehearsal())  # the next run: one Enter
    assert out.count(interview.NOTHING_TYPED) == 1 and not Rehearsal().ended("estimation")


def test_ctrl_c_and_ctrl_d_keep_every_line_typed_so_far(monkeypatch, capsys):
    typed = iter(["How many orders at peak?\n", "Which jobs?\n"])

    def readline() -> str:
        line = next(typed, None)
        if line is None:
            raise KeyboardInterrupt  # Ctrl-C while the learner is still listing questions
        return line

    monkeypatch.setattr(sys, "stdin", type("Keys", (), {"readline": staticmethod(readline)})())
    assert cli.main(["interview", "--scenario", "flash-sale", "--minutes", "45"]) == 0  # a clean stop
    out = capsys.readouterr()
    assert "to stop: Ctrl-C" in " ".join(out.out.split())  # said before the first question
    last = out.out.strip().split("\n(")[-1]  # the last message, wrapped to the terminal's width
    assert "Traceback" not in out.err and last.startswith("interrupted:")
    assert Rehearsal().current["questions"] == "How many orders at peak?\nWhich jobs?"
    r = Rehearsal()
    key = r.follow_up_keys[0]
    for s in interview.STEPS:  # every step already answered and ended elsewhere
        r.answer(s.key, "done")
        r.end_step(s.key)
    interview.rehearse_in_terminal(lines("half a follow-up answer"), [].append, Rehearsal())  # Ctrl-D
    assert Rehearsal().follow_up_answer(key) == "half a follow-up answer"
    out: list[str] = []
    interview.rehearse_in_terminal(lines(), out.append, Rehearsal())  # the next run shows its model answer
    assert out[out.index(f"Follow-up: {interview.follow_up(key).question}") + 2].startswith("A model answer")


def test_text_at_the_red_flag_prompt_ticks_nothing_and_is_kept_in_the_answer():
    from pgq_teach.widgets.rehearsal import RehearsalWidget

    widget = RehearsalWidget(Rehearsal(seed=4))
    widget.questions.value = "Peak?"
    widget.answer.value = "my requirements"
    widget.end_button.click()
    widget.flag_boxes[0].value = True  # ticked in the notebook
    out: list[str] = []
    # a pasted answer whose blank line ended the estimation step: the rest lands at the prompts
    typed = ["jobs: 400 orders/s x 3", "", "-1 of the 2 workers wait", "9", "", "then 2 more lines", "3"]
    interview.rehearse_in_terminal(lines("", *typed), out.append, Rehearsal())  # "" keeps step 1's flags
    r = Rehearsal()
    assert r.flags("requirements") == [0]  # the notebook's tick, untouched
    assert r.flags("estimation") == []  # no '-1' or '2' read out of the text
    assert r.answer_of("estimation") == "jobs: 400 orders/s x 3\n-1 of the 2 workers wait\nthen 2 more lines"
    assert r.scores().get("estimation") == 3
    text = "\n".join(out)
    assert text.count("not flag numbers") == 1 and "nothing ticked: the flags are" in text
    assert text.count("not a score, so it is added") == 1 and "ignored" not in text


def test_the_cli_refuses_bad_input_in_one_line():
    for args in (
        ["--minutes", "1"],
        ["--minutes", "0"],
        ["--minutes", "-5"],
        ["--minutes", "nan"],
        ["--minutes", "abc"],
        ["--scenario", "huge"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "pgq_teach.cli", "interview", *args],
            capture_output=True,
            text=True,
            input="",
        )
        assert done.returncode == 2, done
        assert "Traceback" not in done.stderr and args[0][2:] in done.stderr.strip().splitlines()[-1]
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # no usage block before it


def test_the_cli_says_when_an_open_rehearsal_keeps_its_scenario_and_minutes(monkeypatch, capsys):
    r = Rehearsal(scenario="small-store", minutes=30)
    r.add_question("Peak?")
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    cli.main(["interview", "--scenario", "flash-sale", "--minutes", "45"])
    out = " ".join(capsys.readouterr().out.split())
    assert "it continues; finish it to start flash-sale" in out and "keeps its 30 minutes" in out
    assert Rehearsal().current["minutes"] == 30 and Rehearsal().current["questions"] == "Peak?"


def test_the_cli_refuses_a_summary_file_it_cannot_write_in_one_line(tmp_path, capsys):
    for where in (tmp_path, tmp_path / "no-such-folder" / "page.html"):
        assert cli.main(["interview", "--html", str(where)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--html" in err and "Traceback" not in err


def test_the_content_ships_in_the_wheel(tmp_path):
    import zipfile
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(root)], check=True
    )
    names = zipfile.ZipFile(next(tmp_path.glob("*.whl"))).namelist()
    scenarios = [f"scenarios/{key}" for key in interview_content.SCENARIO_FILES]
    for name in ("prompt", "steps", "follow_ups", "tradeoffs", *scenarios):
        assert f"pgq_teach/interview/content/{name}.yaml" in names


def test_learner_file_name_is_the_rehearsal_s():
    Rehearsal(seed=1)
    assert learner.path_of(interview.FILE).exists()


def test_a_line_added_in_the_terminal_survives_typing_in_a_stale_notebook_view():
    from pgq_teach.widgets.rehearsal import RehearsalWidget

    widget = RehearsalWidget(Rehearsal(seed=8))
    widget.answer.value = "notebook line"
    Rehearsal().add_to_answer("requirements", "terminal line")  # while the widget still shows the old text
    widget.answer.value = "notebook line, and more"
    assert Rehearsal().answer_of("requirements") == "notebook line\nterminal line\n, and more"
    assert widget.answer.value == Rehearsal().answer_of("requirements")


def test_merged_keeps_both_views_text():
    assert interview.merged("a", "a", "ab") == "ab"  # nothing changed elsewhere
    assert interview.merged("a", "a\nt", "ab") == "a\nt\nb"  # the other view added t
    assert interview.merged("", "t", "x") == "t\nx"


def test_two_processes_adding_lines_at_once_lose_none(home):
    """The terminal and the notebook's kernel are two processes writing one file: each
    change re-reads and writes it, so without a lock between them one could write back
    a copy that misses the other's line."""
    Rehearsal(seed=9)
    script = (
        "import sys\n"
        "from pgq_teach.interview import Rehearsal\n"
        "r = Rehearsal()\n"
        "for n in range(150):\n"
        "    r.add_to_answer('requirements', f'{sys.argv[1]} {n}')\n"
    )
    writers = [subprocess.Popen([sys.executable, "-c", script, who]) for who in ("terminal", "notebook")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    saved = Rehearsal().answer_of("requirements").splitlines()
    assert len(saved) == 300 and len(set(saved)) == 300


def test_the_terminal_input_knows_a_paste_is_waiting(monkeypatch):
    read_end, write_end = os.pipe()
    os.write(write_end, "one\r\ntwo ✓\nthree".encode())
    monkeypatch.setattr(sys, "stdin", os.fdopen(read_end, "r"))
    typed = cli.TerminalInput()
    assert typed() == "one" and typed.waiting()  # 'two' was pasted with it
    assert typed() == "two ✓" and not typed.waiting()  # 'three' has no end of line yet
    os.close(write_end)
    assert typed() == "three" and typed() is None and not typed.waiting()


def test_a_huge_paste_into_the_terminal_keeps_every_line_in_a_few_writes(home):
    """20,000 pasted lines: saved a line at a time, each write rewrote the whole growing
    file (10,000 lines took 155 s, measured under load); saved as one paste, seconds."""
    paste = "Peak?\n\n" + "".join(f"line {n} of the answer\n" for n in range(20_000)) + "\n"
    done = subprocess.run(
        [sys.executable, "-m", "pgq_teach.cli", "interview", "--scenario", "flash-sale"],
        input=paste,
        capture_output=True,
        text=True,
        timeout=60,  # wide: well over what one write of the paste takes
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr  # input ended at the flags, saved
    saved = Rehearsal().answer_of("requirements").splitlines()
    assert saved == [f"line {n} of the answer" for n in range(20_000)]


def test_a_real_ctrl_c_in_the_terminal_saves_and_exits_0(home):
    """`pgq-teach interview` says how to stop; SIGINT (Ctrl-C) while it waits for a line
    keeps what was typed and ends with exit code 0, no traceback (issue 45)."""
    import signal

    from helpers import default_sigint, wait_for

    with default_sigint():  # SIGINT's default in the command, even if this run ignores it
        run = subprocess.Popen(
            [sys.executable, "-m", "pgq_teach.cli", "interview", "--scenario", "flash-sale"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    try:
        run.stdin.write("How many orders at peak?\n")
        run.stdin.flush()
        assert wait_for(lambda: Rehearsal().current["questions"] == "How many orders at peak?", timeout=30)
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, (out, err)
    assert "Traceback" not in err and "to stop: Ctrl-C" in " ".join(out.split())
    assert "interrupted:" in out and Rehearsal().current["questions"] == "How many orders at peak?"


def test_the_follow_ups_the_review_found_wrong_or_short_now_say_it():
    """Items 1, 7, 8 and 10 of issue 48's review, each held to the point it was missing."""

    def said(key: str) -> str:
        return " ".join(interview.follow_up(key).model().split())

    to_broker = said("to_broker")  # lesson 11: the plain claim reorders; backing off kills the backlog
    assert "the same claim" not in to_broker and "per-key claim" in to_broker
    assert "try given back" in to_broker and "300 s" in to_broker
    rate_limit = said("rate_limit")
    assert "claims only as many jobs as it holds tokens" in rate_limit and "try given back" in rate_limit
    failover = said("failover")
    assert "outbox message ids" in failover and "failover slot" in failover
    assert "fencing epoch" in failover and "2^32" in failover and "id sequence" in failover
    assert "prepare_threshold" in said("poolers")
    cancel = said("cancel_status")
    assert "CHECK constraint" in cancel and "conditional update" in cancel and "not a fence" not in cancel
    bloat = said("bloat")
    assert "replication slot" in bloat and "hot_standby_feedback" in bloat
    assert "a transaction that might still see them" not in bloat  # the simplification lesson 09 corrects
    fairness = said("fairness")
    assert "clock_timestamp()" in "".join(s.text for s in interview.follow_up("fairness").sql if s.shown)
    assert "jobs.tenant" in fairness and "shared FIFO" in fairness and "fair=True" not in fairness
    assert "cancel-label" not in said("dependencies")
    small = interview.scenario_named("small-store")
    assert "payment check" not in small.answers["ordering"]  # it names no job the store lacks


def test_the_model_answers_point_at_the_mechanisms_the_library_has():
    """The library gained the pause per kind, job timeouts, the shared rate limit's hand-back,
    enqueued_at/finished_at and the fair claim (docs/per-kind.md, docs/beyond-fifo.md): the
    answers describe those, not a paused_until column the course never had, and no longer
    say the Worker lacks a fair claim."""
    texts = {
        (step_key, sc): " ".join(interview.model_answer(step_key, sc, board=False).split())
        for step_key in interview.STEP_KEYS
        for sc in interview.SCENARIOS
    }
    texts |= {(key, ""): " ".join(f.model().split()) for key, f in interview.FOLLOW_UPS.items()}
    for where, text in texts.items():
        assert "does not claim per tenant yet" not in text and "does not have it yet" not in text, where
        assert "paused_until per kind" not in text and "paused_until row" not in text, where
    for sc in ("small-store", "flash-sale"):  # the outage pauses a kind; the pause is each process's
        deep = texts["deep_dive", sc]
        assert "pauses a kind after" in deep and "lives in each worker process" in deep, sc
    for sc in interview.SCENARIOS:  # a hung job: the timeout, and the alerts that see it
        deep = texts["deep_dive", sc]
        assert "job timeout" in deep and "oldest running job" in deep and "99th percentile" in deep, sc
    saas = texts["design", "multi-tenant-saas"]
    assert "per-tenant cap" in saas and "pauses per kind" in saas  # and why that is not per tenant
    alerts = texts["slo_alerts", ""]
    assert "enqueued_at" in alerts and "job timeout" in alerts and "oldest running" in alerts
    assert "one bucket row per kind that every process shares" in texts["rate_limit", ""]


def test_a_ctrl_c_that_lands_while_a_line_is_saved_saves_it_once():
    """CI saw it: the Ctrl-C arrived after the line was written and before the reader forgot
    it, and the reader's clean-up saved it a second time."""
    import signal

    from pgq_teach.interview.terminal import read_until_empty

    saved: list[str] = []

    def keep(text: str) -> None:
        saved.append(text)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, just after the write

    lines = iter(["How many orders at peak?", ""])
    # Python's own Ctrl-C handler, whatever an earlier test in this process left in place
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            read_until_empty(lambda: next(lines), print, keep, has_text=False)
    finally:
        signal.signal(signal.SIGINT, before)
    assert saved == ["How many orders at peak?"]
