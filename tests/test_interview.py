"""The interview rehearsal: content, the learner's numbers, saving as you
type, the timer, the widget headless, and `pgq-teach interview` through its
input and output. No database: the rehearsal reads the learner's files."""

from __future__ import annotations

import io
import json

import pytest

from pgq_teach import cli, interview, learner
from pgq_teach.errors import BadInput
from pgq_teach.interview import Rehearsal


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    return tmp_path


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def all_rubric_text() -> str:
    return " ".join(i.text for s in interview.STEPS for i in s.rubric).lower()


def test_the_guide_six_steps_plus_the_numbers_each_complete():
    titles = [s.title for s in interview.STEPS]
    assert titles == [
        "1. State the need",
        "2. Describe the table",
        "3. Explain the claim",
        "4. Handle failure",
        "5. Cover operations",
        "6. Do the numbers",
        "7. Name the exit",
    ]
    for s in interview.STEPS:
        assert s.prompt and s.minutes > 0 and len(s.rubric) >= 4 and len(s.hints) >= 3 and s.red_flags
        assert len(s.model()) > 200
        assert interview.red_flags_in(s.key, s.model()) == [], s.key  # the model answers raise none


def test_the_rubric_names_what_an_interviewer_listens_for():
    text = all_rubric_text()
    for phrase in (
        "double claims",
        "crashed workers",
        "table bloat",
        "at-least-once",
        "idempotent",
        "literal 'ready'",
        "partial index",
        "fallback poll",
        "no long transactions",
    ):
        assert phrase in text, phrase


def test_at_least_ten_follow_ups_with_model_answers_and_no_exactly_once_promise():
    keys = {f.key for f in interview.FOLLOW_UPS}
    assert len(interview.FOLLOW_UPS) >= 10
    assert {
        "priorities",
        "exactly_once",
        "two_hours",
        "scheduled",
        "unique",
        "fairness",
        "ten_thousand",
        "breaks_first",
        "poolers",
        "to_broker",
    } <= keys
    for f in interview.FOLLOW_UPS:
        assert f.question.endswith("?") and len(f.model()) > 100
    assert interview.red_flags_in("failure", interview.follow_up("exactly_once").model()) == []
    assert (
        "at least once" in interview.follow_up("to_broker").model()
        or "again" in interview.follow_up("to_broker").model()
    )


def test_red_flags_are_found_and_a_denial_is_not_one():
    assert interview.red_flags_in("need", "We guarantee exactly-once delivery.") == [
        "promising exactly-once delivery"
    ]
    assert interview.red_flags_in("need", "Delivery is at least once, not exactly once.") == []
    # "at least once" in one sentence does not excuse "exactly once" promised in the next
    promised = "Delivery is at least once. With the fence it is exactly once."
    assert interview.red_flags_in("need", promised) == ["promising exactly-once delivery"]
    assert interview.red_flags_in("numbers", "lots of workers and a big server") == ["no numbers at all"]
    assert interview.red_flags_in("numbers", "500 workers at 50 ms") == []
    assert "a transaction held open for the whole job" in interview.red_flags_in(
        "claim", "Each worker keeps the transaction open during the job."
    )


def test_model_answers_fall_back_to_the_guide_and_say_so():
    q = interview.quote("idle_snapshot_buffers")
    assert not q.mine and q.value == 1_609 and "guide #18" in q.source
    answer = interview.step("operations").model()
    assert "1,609 buffers" in answer and "the guide's figure (guide #18)" in answer


def test_model_answers_quote_the_learners_own_measurement():
    learner.record_measurement("09-bloat-and-vacuum", "idle_snapshot_buffers", 1234, "buffers")
    learner.record_measurement("11-when-to-switch", "drain_jobs_per_s", 8000.0, "jobs/s")
    q = interview.quote("idle_snapshot_buffers")
    assert q.mine and q.value == 1234 and "09-bloat-and-vacuum" in q.source
    answer = interview.step("operations").model()
    assert "one idle REPEATABLE READ transaction made my empty claim read 1,234 buffers" in answer
    assert "1,609" not in answer
    assert "my measured drain rate 8,000 jobs/s" in interview.step("numbers").model()


def test_the_envelope_from_the_measured_rate():
    env = interview.envelope(10_000, drain_per_s=40_000, work_ms=50, batch=10, keep_done_minutes=10)
    assert env.workers == 500  # Little's law: 10,000/s x 0.05 s
    assert env.dead_per_s == 30_000  # claim, complete and delete each leave one
    assert env.server_share == pytest.approx(0.25)
    assert env.autovacuum_trigger_rows == 1000 + 0.01 * 6_000_000
    assert "comfortably" in env.verdict
    slow = interview.envelope(10_000, drain_per_s=5_000)
    assert slow.server_share == pytest.approx(2.0) and "broker" in slow.verdict
    middle = interview.envelope(10_000, drain_per_s=20_000)
    assert "with care" in middle.verdict
    assert not interview.envelope(10_000).drain_is_mine  # nothing recorded: the guide's 25,000/s
    assert interview.envelope(10_000).drain_per_s == 25_000


def test_the_envelope_is_a_result_with_the_guess_beside_it(db):
    env = interview.envelope(10_000, drain_per_s=40_000, work_ms=50, guess=50, db=db)
    assert env.comparison()[0] == ("worker slots (jobs in flight)", 50, 500, None)
    assert env.server_version == db.server.version and "your guess: 50 worker slots" in env.summary()
    assert "guide #19" in env.summary()
    unguessed = interview.envelope(10_000, drain_per_s=40_000)
    assert unguessed.comparison()[0][1] == "no guess" and "your guess: no guess" in unguessed.summary()
    assert "worked out, not measured" in unguessed.summary()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"target_per_s": 0},
        {"work_ms": -1},
        {"batch": float("nan")},
        {"drain_per_s": 0},
        {"target_per_s": "fast"},
    ],
)
def test_the_envelope_refuses_bad_input(kwargs):
    with pytest.raises(BadInput):
        interview.envelope(**kwargs)


def test_answers_and_ticks_are_saved_as_typed_and_survive_a_restart(home):
    r = Rehearsal()
    r.answer("need", "Jobs commit with the order.")
    r.tick("need", "why")
    r.tick("need", "once")
    r.tick("need", "once", False)
    assert r.next_hint("need") == interview.step("need").hints[0]
    saved = json.loads((home / "rehearsal.json").read_text())
    assert saved["current"]["answers"]["need"] == "Jobs commit with the order."
    again = Rehearsal()  # a new kernel: nothing but the file
    assert again.answer_of("need") == "Jobs commit with the order."
    assert again.ticked("need") == ["why"] and again.score("need") == (1, 4)
    assert again.hints_shown("need") == [interview.step("need").hints[0]]


def test_bad_step_or_item_is_refused_and_nothing_changes(home):
    r = Rehearsal()
    r.answer("need", "kept")
    for call in (lambda: r.answer("nope", "x"), lambda: r.tick("need", "nope"), lambda: r.answer("need", 3)):
        with pytest.raises(BadInput):
            call()
    assert Rehearsal().current["answers"] == {"need": "kept"}
    with pytest.raises(BadInput):
        Rehearsal("../escape")


def test_the_timer_totals_and_over_time():
    clock = Clock()
    r = Rehearsal(clock=clock)
    r.start("need")
    clock.now += 150  # 2.5 min on a 2 min step
    r.start("table")  # switching stops the other timer
    clock.now += 60
    r.stop()
    assert r.spent("need") == 150 and r.spent("table") == 60
    assert [k for k, _, _ in r.over_time()] == ["need"]
    r.start("claim")
    clock.now += 30
    assert r.spent("claim") == 30  # a running timer counts


def test_a_second_rehearsal_shows_the_first_ones_scores_beside_it():
    clock = Clock()
    r = Rehearsal(clock=clock)
    r.tick("need", "why")
    r.tick("need", "every")
    first = r.finish()
    assert first["scores"]["need"] == [2, 4] and first["total"] == [2, 32]
    assert r.answer_of("need") == "" and r.score("need") == (0, 4)  # a fresh one
    r.tick("need", "why")
    board = {row[0]: row for row in Rehearsal().scoreboard()}
    assert board["1. State the need"][1:3] == ("1/4", "2/4")
    assert board["total"][1:3] == ("1/32", "2/32")


def test_the_widget_saves_what_is_typed_and_ticked_and_reloads_it():
    from pgq_teach.widgets.rehearsal import FollowUpDrill, RehearsalWidget

    w = RehearsalWidget(Rehearsal())
    w.answer.value = "We promise exactly once."
    assert "exactly-once" in w.flags.value  # the red flag shows as they type
    w.model_button.click()
    assert "at least once" in w.model.value
    w.boxes[0].value = True
    w.hint_button.click()
    assert interview.step("need").hints[0] in w.hints.value
    w.next_button.click()
    assert w.key == "table" and w.answer.value == ""
    again = RehearsalWidget(Rehearsal())  # after a kernel restart
    assert again.answer.value == "We promise exactly once."
    assert [b.value for b in again.boxes] == [True, False, False, False]
    assert "A model answer" in again.model.value  # revealed stays revealed
    record = again.finish()
    assert record["total"][0] == 1 and "1/32" in again.score.value
    drill = FollowUpDrill(Rehearsal())
    drill.answer.value = "ORDER BY priority"
    drill.model_button.click()
    assert "starvation" in drill.model.value
    assert Rehearsal().current["follow_ups"]["priorities"] == "ORDER BY priority"


def test_the_widget_timer_thread_only_sets_the_label():
    from pgq_teach.widgets.rehearsal import RehearsalWidget

    w = RehearsalWidget(Rehearsal(), tick_seconds=0.05)
    w.start_button.click()
    assert w.rehearsal.active == "need"
    w.pause_button.click()
    assert w.rehearsal.active is None and not w.ticker.is_alive()
    assert w.rehearsal.spent("need") >= 0.0


def run_cli(monkeypatch, capsys, text: str, *args: str) -> tuple[int, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code = cli.main(["interview", *args])
    return code, capsys.readouterr().out


def test_cli_interview_through_stdin_and_stdout(monkeypatch, capsys, home):
    text = (
        "Jobs commit in the order's transaction.\n?\n!\nAt least once.\n\n1 4 9\n"
        "One FOR UPDATE SKIP LOCKED claim.\n\n2\n"
        "Add a priority column.\n\n"
    )
    code, out = run_cli(monkeypatch, capsys, text, "--step", "need", "--step", "claim", "--follow-ups", "1")
    assert code == 0
    assert "== 1. State the need  (suggested 2:00) ==" in out
    assert "hint: " + interview.step("need").hints[0] in out
    assert "model answer: Every order needs background work" in out
    assert "(ignored '9': not an item number 1 to 4)" in out
    assert "score 2/4" in out and "score 1/5" in out
    assert "Follow-up: How would you add priorities?" in out and "starvation" in out
    assert "total                        3/32          –" in out
    saved = learner.load("rehearsal")
    assert saved["past"][0]["answers"]["need"] == "Jobs commit in the order's transaction.\nAt least once."
    assert saved["past"][0]["scores"]["need"] == [2, 4]
    # a second rehearsal shows the first one's scores beside it
    code, out = run_cli(monkeypatch, capsys, "x\n\n1\n", "--step", "need", "--follow-ups", "0")
    assert code == 0 and "Last time: 3/32" in out
    assert "1. State the need             1/4        2/4" in out


def test_cli_interview_keeps_a_half_typed_answer_when_input_ends(monkeypatch, capsys):
    code, out = run_cli(monkeypatch, capsys, "half an answer\n", "--step", "table")
    assert code == 1 and "your answers are saved" in out
    assert Rehearsal().answer_of("table") == "half an answer"
    code, out = run_cli(monkeypatch, capsys, "\n", "--step", "table")
    assert "(your saved answer: 'half an answer'; an empty line keeps it)" in out


def test_cli_interview_refuses_a_bad_step(monkeypatch, capsys):
    code = cli.main(["interview", "--step", "nope"])
    assert code == 2 and "no step 'nope'" in capsys.readouterr().err


def test_the_one_page_summary():
    md = interview.summary_markdown("18.6")
    assert md.startswith("# The PostgreSQL job queue on one page")
    assert "FOR UPDATE SKIP LOCKED" in md and "**at least once**" in md
    assert "the guide's figure (guide #19)" in md and "Measured on PostgreSQL 18.6" in md
    html = interview.summary_html("18.6")
    assert (
        "<table class='pgq-numbers'>" in html and "@media print" in html and "<pre class='pgq-sql'>" in html
    )
    assert "exactly once" not in md.lower()


def test_the_operations_answer_quotes_lesson_10_only_once_it_ran():
    assert "big DELETE of done jobs left" not in interview.step("operations").model()
    learner.record_measurement("10-operations", "bulk_delete_dead_rows", 200_000, "dead rows")
    assert "one big DELETE of done jobs left 200,000 dead rows behind" in interview.step("operations").model()


def test_cli_prints_the_summary_and_writes_it_as_printable_html(monkeypatch, capsys, tmp_path):
    code, out = run_cli(monkeypatch, capsys, "", "--summary")
    assert code == 0 and out.startswith("# The PostgreSQL job queue on one page") and "sql/claim.sql" in out
    page = tmp_path / "summary.html"
    code, out = run_cli(monkeypatch, capsys, "", "--html", str(page))
    assert code == 0 and "wrote the one-page summary" in out
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>") and "@media print" in html and "FOR UPDATE SKIP LOCKED" in html
