"""Write it on the board (issue 48): the deep dive's six mechanisms, written in SQL and
checked live by the Your turn checker; the lease extension and the hand-back by graders
of their own. The model answer's lines pass; the common wrong ones fail, each with a
hint that names its mistake."""

from __future__ import annotations

import pytest

from pgq_teach import interview, statements
from pgq_teach.interview import board
from pgq_teach.statements import statement

pytestmark = pytest.mark.usefixtures("pg")

# wrong answer -> what its hint must name: the board's own (sql/exercise/board/), and for the
# lessons' exercises one classic mistake each, from their files
NAMES_THE_MISTAKE = {
    "exercise/board/extend_without_fence": "AND fence_token = :fence_token",
    "exercise/board/extend_without_status": "status = 'running'",
    "exercise/board/extend_without_id": "WHERE id = :id",
    "exercise/board/extend_fixed_lease": "clock_timestamp() + :'lease'::interval",
    "exercise/board/extend_new_token": "sets leased_until only",
    "exercise/board/hand_back_spending_a_try": "attempts = greatest(attempts - 1, 0)",
    "exercise/board/hand_back_at_once": "now() + :'wait'::interval",
    "exercise/board/hand_back_without_fence": "AND fence_token = :fence_token",
    "exercise/wrong/fail_uncapped": "cap",
    "exercise/wrong/complete_without_fence": "fence",
}
WRONG = [
    (m.key, name)
    for m in board.BOARD
    for name in (m.exercise.wrong_answers if m.key in ("extend", "hand_back") else ())
] + [("fail", "exercise/wrong/fail_uncapped"), ("complete", "exercise/wrong/complete_without_fence")]


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


def test_every_board_wrong_answer_file_is_listed_and_named_here():
    files = {name for name in statements.names() if name.startswith("exercise/board/")}
    assert files == {name for key, name in WRONG if key in ("extend", "hand_back")}
    assert {name for _, name in WRONG} == set(NAMES_THE_MISTAKE)


@pytest.mark.parametrize(("key", "name"), WRONG, ids=[n.rsplit("/", 1)[1] for _, n in WRONG])
def test_a_wrong_line_fails_with_a_hint_that_names_its_mistake(key, name):
    verdict = board.check_board({key: statement(name).text})[key]
    assert not verdict.passed and not verdict.refused, verdict.summary()
    assert NAMES_THE_MISTAKE[name] in verdict.hint, verdict.hint


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
    wrong_extension = statement("exercise/board/extend_without_fence").text.strip()
    typed = iter(
        [
            "my deep dive",
            "",  # the step's answer ends
            *model["claim"].strip().splitlines(),
            "",
            "",  # the fenced completion: skipped
            "",  # the reaper: skipped
            "",  # the backoff: skipped
            *wrong_extension.splitlines(),
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
    widget.board_boxes["hand_back"].value = statement("exercise/board/hand_back_spending_a_try").text
    widget.board_button.click()
    shown = widget.board_verdicts.value
    assert "✓ <b>the fenced completion</b>" in shown
    assert "✗ <b>the hand-back</b>" in shown and "attempts = greatest(attempts - 1, 0)" in shown
    assert "✗ <b>the claim</b>: not written yet" in shown
    reloaded = RehearsalWidget(Rehearsal())
    reloaded.steps.value = "deep_dive"
    assert reloaded.board_boxes["complete"].value == model_lines()["complete"]
