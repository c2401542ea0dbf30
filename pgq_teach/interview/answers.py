"""The model answers: a step's, with the estimation step's worked from the stored
measurements, and the SQL a follow-up's quotes, run on a lesson's database and rolled
back."""

from __future__ import annotations

from ..databases import Database
from ..errors import BadInput
from ..statements import run
from .catalog import WITH_SQL, follow_up, step
from .estimation import drain_quote, fmt, scenario_estimate


def run_model_sql(db: Database, key: str) -> list[int]:
    """Run the SQL a follow-up's model answer quotes on `db`, every step in order on an
    emptied jobs table, inside one transaction that is rolled back: the rows each step
    reported (RETURNING rows, or rows changed). Nothing stays, so a lesson can show that
    the answer works on its own database."""
    steps = follow_up(key).sql
    if not steps:
        raise BadInput(f"follow-up {key!r} quotes no SQL; these do: {', '.join(WITH_SQL)}")
    rows = []
    with db.connection() as conn, conn.transaction(force_rollback=True):
        run(conn, "lab/reset_jobs")
        for sql_step in steps:
            cur = conn.execute(sql_step.text)
            rows.append(len(cur.fetchall()) if cur.description else max(cur.rowcount, 0))
    return rows


def model_answer(step_key: str, scenario_key: str) -> str:
    """A step's model answer; the estimation step's is worked from the stored measurements."""
    text = step(step_key).model
    if "{estimate}" in text:
        try:
            worked = "; ".join(scenario_estimate(scenario_key).lines()) + "."
        except BadInput as exc:
            worked = f"(the worked estimate needs your server's numbers: {exc})"
        drain = drain_quote()
        if drain is not None:
            worked += (
                f" As a ceiling check: lesson 11 drained {fmt(float(drain.value))} {drain.unit} "
                f"({drain.source}; empty jobs, batches of 100, four sessions)."
            )
        text = text.replace("{estimate}", worked)
    return text
