"""The system-design interview rehearsal.

A rehearsal runs as a real round does: an open prompt, a clarify step answered
from one scenario (drawn at random, never the same twice in a row), the
estimate right after the requirements, then the design, a deep dive and the
trade-offs. Each step is scored on one interviewer dimension at three levels,
shown only when the learner ends the step; the learner scores themselves, and
ticks the step's red-flag checklist about their own answer (a checklist, not a
detector: the course does not guess flags from the text). Follow-ups are drawn
at random per rehearsal, and every answer is saved.

Its parts, in the order they build on each other:

- `content`: the YAML files (the opening, the scenarios, the steps and rubrics,
  the model answers, the follow-ups, the trade-off table) read into frozen records;
- `catalog`: the steps, scenarios and follow-ups by key;
- `estimation`: the estimate, worked from what the learner's own server measured;
- `answers`: the model answers, and the SQL a follow-up's quotes, run and rolled back;
- `board`: the deep dive's six mechanisms as the learner writes them, checked live by the
  Your turn checker (the lease extension and the hand-back by graders of their own);
- `rehearsal`: the attempt, kept in the learner file `rehearsal` (`Rehearsal`);
- `render`: the attempt's summary, the trade-off table and the one-page summary;
- `terminal`: the same rehearsal on lines of text, for `pgq-teach interview`.

The widget (`widgets/rehearsal.py`) and `pgq-teach interview` are two views of
one attempt, and each imports what it shows from these parts. A lesson or a test
reads any part's public name here (`interview.Rehearsal`, `interview.estimate`):
each is imported from its part on first use, not with the package, since
`pgq-teach` reads the scenarios (`content`) to build its parser for every command
and should not parse the steps and follow-ups each time.
"""

from __future__ import annotations

import importlib
from typing import Any

# Each part's public names, which this package gives as its own.
PARTS = {
    "content": "",
    "catalog": "STEPS COMMUNICATION STEP_KEYS DIMENSIONS SCENARIOS FOLLOW_UPS WITH_SQL DEFAULT_MINUTES "
    "step scenario_key scenario_named follow_up rubric_for quoted_sql",
    "estimation": "HEADROOM ROW_WRITES_PER_JOB DEAD_VERSIONS_PER_JOB percent readable Quote quote "
    "drain_quote "
    "measure_capacity Measured measured_at Estimate estimate scenario_estimate KindLoad PartnerLoad "
    "WorkEstimate work_estimate",
    "answers": "execute_step run_model_sql board_text model_answer",
    "board": "BOARD BOARD_KEYS Mechanism mechanism check_board params_of",
    "rehearsal": "FILE FOLLOW_UPS_PER_REHEARSAL file_lock fresh_attempt ATTEMPT_PARTS rehearsal_check "
    "Rehearsal merged",
    "render": "clock_text trend_text summary_lines trade_off_markdown SUMMARY_SQL summary_markdown "
    "summary_html inline",
    "terminal": "Read Say InputEnded read_line NOTHING_TYPED read_until_empty rubric_text ask_score "
    "number_words ask_flags terminal_step rehearse_in_terminal terminal_rehearsal",
}
WHERE = {name: part for part, names in PARTS.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    """`interview.NAME`: a part (`interview.content`), or a part's public name, imported on first use."""
    if name in PARTS:
        return importlib.import_module(f"{__name__}.{name}")
    if name not in WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *PARTS, *WHERE})
