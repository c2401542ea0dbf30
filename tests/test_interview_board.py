"""Write it on the board (issue 48): the deep dive's six mechanisms, written in SQL and
checked live by the Your turn checker; the lease extension and the hand-back by graders
of their own. The model answer's lines pass; the common wrong ones fail, each with a
hint that names its mistake."""

from __future__ import annotations

import pytest

from pgq_teach import interview
from pgq_teach.interview import board

pytestmark = pytest.mark.usefixtures("pg")

EXTEND = "UPDATE jobs SET leased_until = clock_timestamp() + :'lease'::interval"
FENCED = "WHERE id = :id AND status = 'running' AND fence_token = :fence_token"
HAND_BACK = "UPDATE jobs SET status = 'ready', leased_until = NULL, last_error = :'error'"

# (mechanism, a wrong answer, what its hint must name)
WRONG = [
    ("extend", f"{EXTEND} WHERE id = :id AND status = 'running'", "AND fence_token = :fence_token"),
    ("extend", f"{EXTEND} WHERE id = :id AND fence_token = :fence_token", "status = 'running'"),
    ("extend", f"{EXTEND} WHERE status = 'running' AND fence_token = :fence_token", "WHERE id = :id"),
    (
        "extend",
        f"UPDATE jobs SET leased_until = clock_timestamp() + interval '1 hour' {FENCED}",
        "clock_timestamp() + :'lease'::interval",
    ),
    ("extend", f"{EXTEND}, fence_token = fence_token + 1 {FENCED}", "sets leased_until only"),
    (
        "hand_back",
        f"{HAND_BACK}, run_at = greatest(run_at, now() + :'wait'::interval) {FENCED}",
        "attempts = greatest(attempts - 1, 0)",
    ),
    ("hand_back", f"{HAND_BACK}, attempts = greatest(attempts - 1, 0) {FENCED}", "now() + :'wait'::interval"),
    (
        "hand_back",
        f"{HAND_BACK}, attempts = attempts - 1, run_at = now() + :'wait'::interval "
        "WHERE id = :id AND status = 'running'",
        "AND fence_token = :fence_token",
    ),
    # the lessons' own checkers catch the four others' classic mistakes
    (
        "fail",
        "UPDATE jobs SET status = 'ready', "
        f"run_at = now() + power(2, attempts) * interval '10 seconds' {FENCED}",
        "cap",
    ),
    ("complete", "UPDATE jobs SET status = 'done' WHERE id = :id AND status = 'running'", "fence"),
]


def model_lines() -> dict[str, str]:
    shown = {s.name.split(" (")[0]: s.text for s in interview.step("deep_dive").sql if s.shown}
    return {m.key: shown[m.name] for m in board.BOARD}


def test_the_board_has_the_deep_dive_s_six_mechanisms():
    assert [m.name for m in board.BOARD] == [
        "the claim",
        "the fenced completion",
        "the reaper",
        "the backoff on failure",
        "the lease extension",
        "the hand-back",
    ]
    assert set(model_lines()) == set(board.BOARD_KEYS)


def test_the_model_answer_s_six_lines_pass_the_checker():
    verdicts = board.check_board(model_lines())
    for key, verdict in verdicts.items():
        assert verdict.passed and not verdict.refused, (key, verdict.summary())


@pytest.mark.parametrize(("key", "sql", "names"), WRONG)
def test_a_wrong_line_fails_with_a_hint_that_names_its_mistake(key, sql, names):
    verdict = board.check_board({key: sql})[key]
    assert not verdict.passed and not verdict.refused, verdict.summary()
    assert names in verdict.hint, verdict.hint


def test_a_blank_mechanism_is_not_run_and_says_so_and_a_select_is_refused():
    verdicts = board.check_board({"extend": "SELECT 1"})
    assert verdicts["claim"].headline == "not written yet" and not verdicts["claim"].passed
    assert verdicts["extend"].refused and "one UPDATE" in verdicts["extend"].headline


def test_the_terminal_writes_the_board_after_the_deep_dive_checks_it_and_keeps_it(tmp_path, monkeypatch):
    """In `pgq-teach interview`, after the deep dive's answer: each mechanism's lines up to an
    empty line (an empty line at once skips it), saved in the attempt, then checked live."""
    from pgq_teach.interview import Rehearsal, terminal_step

    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    r = Rehearsal(seed=3)
    model = model_lines()
    wrong_extension = f"{EXTEND} WHERE id = :id AND status = 'running'"  # no fence
    typed = iter(
        [
            "my deep dive",
            "",  # the step's answer ends
            *model["claim"].strip().splitlines(),
            "",
            "",  # the fenced completion: skipped
            "",  # the reaper: skipped
            "",  # the backoff: skipped
            wrong_extension,
            "",
            *model["hand_back"].strip().splitlines(),
            "",
            "",  # no flags
            "3",
        ]
    )
    out: list[str] = []
    terminal_step(r, "deep_dive", lambda: next(typed, None), out.append)
    saved = Rehearsal().board()
    assert set(saved) == {"claim", "extend", "hand_back"} and saved["extend"] == wrong_extension
    text = "\n".join(out)
    assert "[ok] the claim:" in text and "[ok] the hand-back:" in text
    assert "[--] the lease extension:" in text and "AND fence_token = :fence_token" in text
    assert "[--] the reaper: not written yet" in text
    assert text.index("[ok] the claim") < text.index("A model answer")  # checked before it is shown


def test_the_notebook_s_board_saves_as_typed_checks_on_a_click_and_shows_only_in_the_deep_dive(
    tmp_path, monkeypatch
):
    from pgq_teach.interview import Rehearsal
    from pgq_teach.widgets.rehearsal import RehearsalWidget

    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    widget = RehearsalWidget(Rehearsal(seed=4))
    assert widget.board.layout.display == "none"  # the requirements step: no board
    widget.steps.value = "deep_dive"
    assert widget.board.layout.display == ""
    widget.board_boxes["complete"].value = model_lines()["complete"]
    widget.board_boxes["hand_back"].value = f"{HAND_BACK}, run_at = now() + :'wait'::interval {FENCED}"
    widget.board_button.click()
    shown = widget.board_verdicts.value
    assert "✓ <b>the fenced completion</b>" in shown
    assert "✗ <b>the hand-back</b>" in shown and "attempts = greatest(attempts - 1, 0)" in shown
    assert "✗ <b>the claim</b>: not written yet" in shown
    reloaded = RehearsalWidget(Rehearsal())
    reloaded.steps.value = "deep_dive"
    assert reloaded.board_boxes["complete"].value == model_lines()["complete"]
