"""The unique enqueue (lesson 10c): the learner's one statement adds a job of :kind with
:payload and :unique_key, unless a live (ready or running) job of the same kind holds the
key, and returns one row either way: the new job's id, or the live job's.

Scenes, with kinds, keys and payloads drawn afresh each check (so a statement that writes a
value into its text fails):
- a new key: one job added, holding what was passed, and its id returned;
- the same kind and key again, while that job is ready, and again while it is running: nothing
  added, the live job's id returned;
- the same key, another kind: a job added (keys are scoped by kind);
- the same key and kind once its job is done: a job added (a finished job frees its key);
- a double click: a second session runs the statement while the first's run of it is not yet
  committed; the server must show the second waiting, and once the first commits, the second
  adds nothing and returns the first's id.
Every scene runs in the learner role's session; the table's partial unique index
(jobs_live_unique_key_idx, sql/schema.sql) is the one the lesson teaches."""

from __future__ import annotations

import random
import threading
import time

import psycopg
from psycopg.types.json import Jsonb

from .. import tables
from ..statements import run
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, parse
from .scenes import draw
from .verdict import Evidence, Verdict

KINDS = ("order_created", "order_paid", "send_receipt", "build_invoice")
BLOCK_WAIT_S = 5.0  # the most to wait to see the second session blocked (it takes milliseconds)


def values(rng: random.Random, kind: str, key: str) -> dict:
    order = rng.randrange(100, 1_000_000)
    return {"kind": kind, "payload": Jsonb({"order_id": order, "n": rng.randrange(10**6)}), "unique_key": key}


def returned_ids(fetched) -> list:
    return [row[0] for row in fetched.fetchall()]


def jobs_with_key(owner: psycopg.Connection, key: str) -> list[tuple[int, str, str]]:
    """(id, kind, status) of every job holding `key`, by id."""
    return [tuple(row) for row in run(owner, "exercise/jobs_with_key", {"unique_key": key}).fetchall()]


def check_unique_enqueue(
    scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None
) -> Verdict:
    if learner.first_word not in ("WITH", "INSERT"):
        raise Refused("this exercise runs one statement that enqueues a job (INSERT ... RETURNING id)")
    rng = draw()
    kind, other = rng.sample(KINDS, 2)
    key = f"order-{rng.randrange(10**6, 10**7)}"
    with scratch.db.connection() as owner, scratch.connect() as conn:
        parse(conn, learner)
        first = values(rng, kind, key)
        new = returned_ids(execute(conn, learner, first))
        after_new = jobs_with_key(owner, key)
        held = after_new[0][0] if len(after_new) == 1 else None
        again_ready = returned_ids(execute(conn, learner, values(rng, kind, key)))
        if held is not None:
            run(owner, "exercise/stage_status", {"id": held, "status": "running"})
        again_running = returned_ids(execute(conn, learner, values(rng, kind, key)))
        after_again = jobs_with_key(owner, key)
        other_ids = returned_ids(execute(conn, learner, values(rng, other, key)))
        if held is not None:
            run(owner, "exercise/stage_status", {"id": held, "status": "done"})
        freed = returned_ids(execute(conn, learner, values(rng, kind, key)))
        after_all = jobs_with_key(owner, key)
        if progress:
            progress(1, 2)
        race = _double_click(scratch, owner, learner, values(rng, kind, f"{key}-dbl"))
        if progress:
            progress(2, 2)
    one_new = len(after_new) == 1 and after_new[0][1] == kind
    evidence = [
        Evidence(
            "a new key: one job added, its id returned",
            f"{len(after_new)} added, returned {new or 'no row'}",
            one_new and new == [held],
        ),
        Evidence(
            "the same kind and key while it is ready, then running: nothing added, its id returned",
            f"{len(after_again) - len(after_new)} added, returned {again_ready or 'no row'} and "
            f"{again_running or 'no row'}",
            one_new and after_again == [(held, kind, "running")] and again_ready == again_running == [held],
        ),
        Evidence(
            "the same key, another kind: a job added",
            f"returned {other_ids or 'no row'}",
            len(other_ids) == 1 and any(r == (other_ids[0], other, "ready") for r in after_all),
        ),
        Evidence(
            "the same kind and key once its job is done: a job added",
            f"returned {freed or 'no row'}",
            len(freed) == 1 and freed != [held] and any(r == (freed[0], kind, "ready") for r in after_all),
        ),
        Evidence("a double click: the second session waits for the first", race.waited_text, race.waited),
        Evidence(
            "a double click: one job, the second session gets the first's id",
            race.found,
            race.error is None and race.jobs == 1 and race.second == [race.first_id],
        ),
    ]
    return Verdict.from_evidence(
        exercise,
        evidence,
        _hint(evidence, race),
        numbers={"race_jobs": race.jobs, "race_error": race.error},
        passed_headline="one live job per kind and key, its id returned to every caller, double clicks too",
        passed_hint=(
            "the partial unique index holds the key, ON CONFLICT waits for an uncommitted first, and the "
            "live job's id comes back: the caller knows which job carries its work."
        ),
        server_version=scratch.db.server.version,
    )


class Race:
    """What a double click did: the first session's id, the second's rows, whether the server
    showed it waiting, the jobs holding the key, and any error the second hit."""

    def __init__(self) -> None:
        self.first_id: int | None = None
        self.second: list = []
        self.waited = False
        self.jobs = 0
        self.error: str | None = None

    @property
    def waited_text(self) -> str:
        return "waited" if self.waited else "did not wait"

    @property
    def found(self) -> str:
        if self.error:
            return f"the second session failed: {self.error}"
        return (
            f"{tables.count(self.jobs, 'job')} with the key; first {self.first_id}, "
            f"second returned {self.second or 'no row'}"
        )


def _double_click(scratch: Scratch, owner: psycopg.Connection, learner: LearnerSQL, passed: dict) -> Race:
    race = Race()
    with scratch.connect(autocommit=False) as first, scratch.connect(autocommit=False) as second:
        ids = returned_ids(execute(first, learner, passed))
        race.first_id = ids[0] if len(ids) == 1 else None

        stopped: list[Refused] = []

        def click_again() -> None:
            try:
                race.second = returned_ids(execute(second, learner, passed))
                second.commit()
            except psycopg.Error as e:
                race.error = (e.diag.message_primary or type(e).__name__).strip()
                second.rollback()
            except Refused as e:  # Stop, pressed while it ran: raised in the grader's thread below,
                stopped.append(e)  # as a refusal of the first click is, not lost in this one

        clicker = threading.Thread(target=click_again, name="pgq-second-click")
        clicker.start()
        deadline = time.monotonic() + BLOCK_WAIT_S
        pid = second.info.backend_pid
        while clicker.is_alive() and time.monotonic() < deadline and not race.waited:
            [(race.waited,)] = run(owner, "exercise/session_waits_on_lock", {"pid": pid}).fetchall()
            time.sleep(0.02)
        first.commit()
        clicker.join()
        if stopped:
            raise stopped[0]
    race.jobs = len(jobs_with_key(owner, passed["unique_key"]))
    return race


def _hint(evidence: list[Evidence], race: Race) -> str:
    new, live, other, freed, waited, _double = (e.ok for e in evidence)
    if not new:
        return (
            "add the job with the values passed in, VALUES (:'kind', :'payload', :'unique_key'), "
            "RETURNING id."
        )
    if not other:
        return (
            "another kind with the same key is other work, and was not added: the key is unique per kind, "
            "as the partial unique index on (kind, unique_key) holds it."
        )
    if not live:
        return (
            "when a live job holds the key, nothing is added and its id must still come back: ON CONFLICT "
            "DO NOTHING returns no row for it. DO UPDATE, assigning a column its own value, returns "
            "the live row's id."
        )
    if not freed:
        return "a done job gives its key up: only ready and running jobs hold it (the index's WHERE)."
    if race.error or not waited:
        return (
            "a check before the insert cannot see another session's uncommitted job, so both insert and "
            "one fails on the index: let the INSERT meet the key itself, with ON CONFLICT on the partial "
            "unique index, which waits for the first session."
        )
    return (
        "the second click got no id: a SELECT in the same statement uses the statement's snapshot, taken "
        "before the first session committed, so it cannot see that job. ON CONFLICT ... DO UPDATE locks "
        "the committed row and returns its id."
    )
