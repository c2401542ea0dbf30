"""Write it on the board: the deep dive's six mechanisms, each written by the
learner in SQL (1-3 lines) and checked live by the same checker as a lesson's
Your turn. The claim, the fenced completion, the reaper and the backoff use the
lessons' exercises (03, 05, 04, 06); the lease extension and the hand-back,
which no lesson's Your turn checks, have graders of their own
(`exercises.board`). A mechanism left blank is not checked: the verdict says so."""

from __future__ import annotations

from dataclasses import dataclass

from .. import exercises
from ..errors import BadInput
from ..exercises import board as graders
from ..exercises.verdict import Verdict


@dataclass(frozen=True)
class Mechanism:
    key: str  # as the rehearsal saves the learner's lines
    name: str  # as the deep dive's board titles it
    exercise: exercises.Exercise


def _own(
    key: str, title: str, task: str, params: tuple[str, ...], check, wrong: tuple[str, ...]
) -> exercises.Exercise:
    # The board starts empty, so `attempt` is only the commonest wrong line (sql/exercise/board/);
    # there is no answer file: the model answer is the deep dive's line on the board (steps.yaml),
    # which tests/test_interview_board.py checks.
    names = tuple(f"exercise/board/{w}" for w in wrong)
    return exercises.Exercise(f"12/board_{key}", title, task, params, check, names[0], "", wrong=names[1:])


BOARD = (
    Mechanism("claim", "the claim", exercises.exercise("03/claim")),
    Mechanism("complete", "the fenced completion", exercises.exercise("05/complete")),
    Mechanism("reap", "the reaper", exercises.exercise("04/reap")),
    Mechanism("fail", "the backoff on failure", exercises.exercise("06/fail")),
    Mechanism(
        "extend",
        "the lease extension",
        _own(
            "extend",
            "the lease extension",
            "Renew the lease of the job this worker still holds to :lease from now; "
            "a worker that lost it renews nothing.",
            ("id", "fence_token", "lease"),
            graders.check_extend_lease,
            (
                "extend_without_fence",
                "extend_without_status",
                "extend_without_id",
                "extend_fixed_lease",
                "extend_new_token",
            ),
        ),
    ),
    Mechanism(
        "hand_back",
        "the hand-back",
        _own(
            "hand_back",
            "the hand-back",
            "Give this worker's claimed job back without spending its try, not claimable again for :wait.",
            ("id", "fence_token", "wait"),
            graders.check_hand_back,
            ("hand_back_spending_a_try", "hand_back_at_once", "hand_back_without_fence"),
        ),
    ),
)
BOARD_KEYS = tuple(m.key for m in BOARD)


def mechanism(key: str) -> Mechanism:
    for m in BOARD:
        if m.key == key:
            return m
    raise BadInput(f"no mechanism {key!r} on the board; they are {', '.join(BOARD_KEYS)}")


def check_board(written: dict[str, str]) -> dict[str, Verdict]:
    """Each mechanism the learner wrote (key -> SQL), checked live; a blank one is not run.
    Nothing is saved to the Your turn progress: the board is the rehearsal's."""
    verdicts = {}
    for m in BOARD:
        sql = (written.get(m.key) or "").strip()
        if not sql:
            verdicts[m.key] = Verdict(
                m.exercise.key, False, "not written yet", hint=f"Write {m.name} in SQL."
            )
            continue
        verdicts[m.key] = exercises.judge(m.exercise, sql)
    return verdicts


def params_of(key: str) -> str:
    """The placeholders a mechanism may use, as the board prompt names them."""
    return ", ".join(f":{p}" for p in mechanism(key).exercise.params) or "none"
