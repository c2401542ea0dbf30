"""The model answers: a step's, written for the scenario (a section per part of the
answer, titled with the scenario's hard part it answers), with the estimation step's
worked from the stored measurements and the deep dive's mechanisms written out in SQL;
and the SQL a model answer quotes, run on a lesson's database and rolled back."""

from __future__ import annotations

import psycopg

from ..databases import Database
from ..errors import BadInput
from ..statements import Statement, run
from .catalog import WITH_SQL, quoted_sql, scenario_named, step
from .content import SqlStep
from .estimation import drain_quote, readable, scenario_estimate, work_estimate


def execute_step(conn: psycopg.Connection, sql_step: SqlStep) -> int:
    """Run one quoted statement, its psql-style placeholders (`:id`, `:'lease'`) bound
    to its `params`: the rows it reported (RETURNING rows, or rows changed)."""
    params = dict(sql_step.params)
    query = Statement("interview", "", sql_step.text.strip(), tuple(params), ()).query()
    cur = conn.execute(query, params or None)
    return len(cur.fetchall()) if cur.description else max(cur.rowcount, 0)


def run_model_sql(db: Database, key: str) -> list[int]:
    """Run the SQL a follow-up's model answer quotes on `db`, every step in order on an
    emptied jobs table, inside one transaction that is rolled back: the rows each step
    reported (RETURNING rows, or rows changed). Nothing stays, so a lesson can show that
    the answer works on its own database."""
    steps = quoted_sql(key)
    if not steps:
        raise BadInput(f"{key!r} quotes no SQL; these do: deep_dive, {', '.join(WITH_SQL)}")
    with db.connection() as conn, conn.transaction(force_rollback=True):
        run(conn, "lab/reset_jobs")
        return [execute_step(conn, sql_step) for sql_step in steps]


def board_text(steps: tuple[SqlStep, ...]) -> str:
    """The shown statements, each under its name, as written on the board."""
    return "\n\n".join(f"{s.name}:\n{s.text.strip()}" for s in steps if s.shown)


def model_answer(step_key: str, scenario_key: str, *, board: bool = True) -> str:
    """A step's model answer for a scenario: its sections, each headed by the hard part
    it answers; the estimation step's worked from the stored measurements, the deep
    dive's followed by the mechanisms' SQL (`board=False` leaves it out, for a page that
    prints the SQL on its own)."""
    scenario = scenario_named(scenario_key)
    titles = {h.key: h.title for h in scenario.hard_parts}
    paragraphs = [
        f"{titles[key][0].upper()}{titles[key][1:]}: {body.strip()}" if key in titles else body.strip()
        for key, body in scenario.steps[step_key].sections
    ]
    text = "\n\n".join(paragraphs)
    if board and step(step_key).sql:
        text += "\n\n" + board_text(step(step_key).sql)
    if "{estimate}" in text:
        work = work_estimate(scenario_key)
        lines = work.lines()
        try:
            queue = scenario_estimate(scenario_key)
            lines += ["the queue on the server:", *queue.lines()]
            share: float | None = max(queue.commit_share, queue.wal_share)
        except BadInput as exc:
            lines.append(f"(the queue's share of the server needs your server's numbers: {exc})")
            share = None
        worked = "\n".join([work.binding(share), *lines])
        drain = drain_quote()
        if drain is not None:
            worked += (
                f" As a ceiling check: lesson 11 drained {readable(float(drain.value))} {drain.unit} "
                f"({drain.source}; empty jobs, batches of 100, four sessions)."
            )
        text = text.replace("{estimate}", worked)
    return text
