"""The system-design interview rehearsal: its content and its logic.

The answer follows the guide's six steps (state the need, describe the table,
explain the claim, handle failure, cover operations, name the exit), with a
back-of-envelope step before the exit, because public interview rubrics score
numbers, failure modes and trade-offs. Each step has a prompt, a suggested
time, a model answer, a rubric the learner ticks, hints revealed one at a
time and red flags to avoid. Follow-up questions come after.

Model answers quote the learner's own measurements (`pgq_teach.learner`)
where a lesson recorded them, and otherwise the guide's figures, saying so.
The envelope (`envelope`) is the lesson's one experiment with a guess, so it
is a `results.Result`; the steps, rubrics, follow-ups and the learner's
answers are the rehearsal's content and record, not measurements, so they stay
plain frozen records and the learner file.
The learner's answers, ticks and times live in the learner file `rehearsal`,
saved as they type; a finished rehearsal is kept, so the next one shows its
scores beside the new ones. The widget (`widgets/rehearsal.py`) and the
`pgq-teach interview` command are two views of this one module.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from typing import Any

from . import learner
from .databases import Database
from .errors import BadInput
from .experiments.results import Comparison, Result, guess_text, server_fields
from .guide import GuideFigure, figure
from .statements import statement

FILE = "rehearsal"
STATEMENT_MS = 1  # an assumed round trip per short statement, for the envelope

# --- the learner's numbers ----------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Where a lesson records a measurement: `learner.measurement(lesson, key)`."""

    lesson: str
    key: str


@dataclass(frozen=True)
class Measure:
    """One number a model answer can quote: the learner's sources, tried in
    order, and the guide's figure to fall back on."""

    name: str
    what: str
    sources: tuple[Source, ...]
    guide_value: float
    unit: str
    guide_number: int
    lesson_hint: str  # which lesson to run to replace the guide's figure


MEASURES = {
    m.name: m
    for m in [
        Measure(
            "drain_rate",
            "jobs claimed and completed per second, batched, empty jobs",
            (
                Source("11-when-to-switch", "drain_jobs_per_s"),
                Source("09-bloat-and-vacuum", "drain_jobs_per_s"),
                Source("03-claim-with-a-lease", "drain_jobs_per_s"),
            ),
            100_000 / 4.0,
            "jobs/s",
            19,
            "lesson 11 (or 03)",
        ),
        Measure(
            "double_claims",
            "jobs claimed more than once by the naive claim, 8 workers, 400 jobs",
            (Source("01-double-send", "run_twice"),),
            260,
            "jobs of 400",
            1,
            "lesson 01",
        ),
        Measure(
            "idle_snapshot_buffers",
            "buffers an empty claim read with an idle REPEATABLE READ open",
            (Source("09-bloat-and-vacuum", "idle_snapshot_buffers"),),
            1_609,
            "buffers",
            18,
            "lesson 09",
        ),
        Measure(
            "drained_buffers",
            "buffers an empty claim read right after a drain, before VACUUM",
            (Source("09-bloat-and-vacuum", "drained_buffers"),),
            196,
            "buffers",
            17,
            "lesson 09",
        ),
        Measure(
            "partial_index_kb",
            "size of the partial ready index over 100,000 done + 100 ready jobs",
            (Source("08-indexes", "partial_index_kb"),),
            16,
            "kB",
            14,
            "lesson 08",
        ),
        Measure(
            "notify_ms",
            "pickup latency with NOTIFY",
            (Source("07-wake-ups", "notify_ms"),),
            10,
            "ms",
            13,
            "lesson 07",
        ),
        Measure(
            "bulk_delete_dead",
            "dead rows one big DELETE of done jobs left behind",
            (Source("10-operations", "bulk_delete_dead_rows"),),
            math.nan,
            "dead rows",
            0,
            "lesson 10",
        ),
    ]
}


@dataclass(frozen=True)
class Quote:
    """A number ready to speak: the value, whether it is the learner's own,
    and the sentence that says where it came from."""

    name: str
    value: float
    unit: str
    mine: bool
    source: str

    def __str__(self) -> str:
        return f"{fmt(self.value)} {self.unit}"


def fmt(value: float) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "?"
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.2f}" if abs(value) < 10 else f"{value:,.1f}"


def quote(name: str) -> Quote:
    """The learner's own value for `name` if a lesson recorded it, else the guide's."""
    if name not in MEASURES:
        raise BadInput(f"no measure called {name!r}; known: {', '.join(MEASURES)}")
    m = MEASURES[name]
    for src in m.sources:
        found = learner.measurement(src.lesson, src.key)
        if found is not None and isinstance(found.get("value"), (int, float)):
            return Quote(
                name,
                float(found["value"]),
                found.get("unit") or m.unit,
                True,
                f"measured on my machine in {src.lesson} ({found.get('at', 'date unknown')})",
            )
    if m.guide_number:
        return Quote(
            name,
            float(m.guide_value),
            m.unit,
            False,
            f"the guide's figure (guide #{m.guide_number}); run {m.lesson_hint} to use your own",
        )
    return Quote(name, m.guide_value, m.unit, False, f"not measured yet; run {m.lesson_hint}")


def quotes() -> dict[str, Quote]:
    return {name: quote(name) for name in MEASURES}


def said(q: Quote, mine: str, guide: str) -> str:
    """A sentence from the learner's number, or the guide's with a note saying so."""
    if q.mine:
        return mine.format(v=str(q))
    return guide.format(v=str(q)) + f" [{q.source}]"


# --- the back-of-envelope calculator -----------------------------------------


@dataclass(kw_only=True)
class Envelope(Result):
    """What a target rate needs, worked from a measured drain rate.

    Little's law gives the workers: jobs in flight = arrival rate x time per
    job. The measured drain (empty jobs, batched) bounds what one server's
    claims and completions can do; each job leaves three dead row versions
    (claim, complete, and the cleanup's DELETE), which autovacuum must clear.
    The guess is the learner's worker slots. Worked out, not measured: the
    server fields name the server of the lesson that asked, if any.
    """

    target_per_s: float
    drain_per_s: float
    drain_is_mine: bool
    work_ms: float
    batch: int
    keep_done_minutes: float
    workers: int
    connections_direct: int
    connections_busy: float
    server_share: float
    dead_per_s: float
    dead_per_min: float
    table_rows: float
    autovacuum_trigger_rows: float
    verdict: str
    server_version: str = ""
    server_major: int = 0
    guide: GuideFigure = field(default_factory=lambda: figure(19))

    def comparison(self) -> list[Comparison]:
        return [
            ("worker slots (jobs in flight)", self.guess_cell, self.workers, None),
            (
                "drain rate, jobs/s",
                None,
                self.drain_per_s if self.drain_is_mine else None,
                self.guide.values["jobs"] / self.guide.values["seconds"],
            ),
            ("connections busy at once", None, self.connections_busy, None),
            ("share of the measured drain rate", None, f"{self.server_share:.0%}", None),
            ("dead row versions a second", None, self.dead_per_s, None),
        ]

    def summary(self) -> str:
        return "\n".join(
            [*self.lines(), f"your guess: {guess_text(self.guess, ' worker slots')}", *self.footer()]
        )

    def footer(self) -> list[str]:
        where = (
            f"asked on PostgreSQL {self.server_version}"
            if self.server_version
            else "worked out, not measured"
        )
        return [f"  {self.guide}", f"  {where}"]

    def lines(self) -> list[str]:
        whose = "my measured" if self.drain_is_mine else "the guide's (not yet my own)"
        return [
            (
                f"target {fmt(self.target_per_s)} jobs/s; {whose} drain rate {fmt(self.drain_per_s)} jobs/s "
                f"(empty jobs, batches: an upper bound, not a benchmark)"
            ),
            (
                f"workers: {fmt(self.target_per_s)}/s x {fmt(self.work_ms / 1000)} s each = "
                f"{self.workers:,} jobs in flight, "
                "so that many worker slots (Little's law)"
            ),
            (
                f"connections: {self.connections_direct:,} if each worker keeps its own, but only about "
                f"{fmt(self.connections_busy)} busy at once ({fmt(self.target_per_s)} completions + "
                f"{fmt(self.target_per_s / self.batch)} claims of {self.batch} a second, "
                f"about {STATEMENT_MS} ms each): "
                "a pooler in transaction mode shares them; LISTEN stays direct"
            ),
            (
                f"server: {fmt(self.target_per_s)} / {fmt(self.drain_per_s)} = "
                f"about {self.server_share:.0%} of what "
                "the measured server drained, for claims and completions alone"
            ),
            (
                f"autovacuum: 3 dead row versions a job (claim, complete, cleanup's DELETE) = "
                f"{fmt(self.dead_per_s)} a second, {fmt(self.dead_per_min)} a minute; "
                f"keeping {fmt(self.keep_done_minutes)} min of done jobs, "
                f"the table holds about {fmt(self.table_rows)} rows, "
                f"so scale factor 0.01 + 1000 triggers every {fmt(self.autovacuum_trigger_rows)} dead rows "
                f"(1,000 + 0.01 x {fmt(self.table_rows)}), about every "
                f"{fmt(self.autovacuum_trigger_rows / self.dead_per_s)} s at that rate "
                "(but autovacuum visits a "
                "database only once per autovacuum_naptime, 1 min by default, "
                f"so up to {fmt(self.dead_per_min)} can pile up between visits)"
            ),
            f"verdict: {self.verdict}",
        ]

    def __str__(self) -> str:
        return "\n".join(self.lines())


def envelope(
    target_per_s: float = 10_000,
    *,
    drain_per_s: float | None = None,
    work_ms: float = 50,
    batch: int = 10,
    keep_done_minutes: float = 10,
    guess: float | None = None,
    db: Database | None = None,
) -> Envelope:
    """Work out workers, connections and autovacuum load for `target_per_s`
    from the learner's drain rate (or the guide's, if none is recorded).
    `guess` is the learner's worker slots; `db`, if given, names the server."""
    for name, value in (
        ("target_per_s", target_per_s),
        ("work_ms", work_ms),
        ("batch", batch),
        ("keep_done_minutes", keep_done_minutes),
    ):
        if (
            not isinstance(value, (int, float))
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value <= 0
        ):
            raise BadInput(f"{name} must be a positive number, got {value!r}")
    mine = drain_per_s is not None
    if drain_per_s is None:
        q = quote("drain_rate")
        drain_per_s, mine = q.value, q.mine
    if not math.isfinite(drain_per_s) or drain_per_s <= 0:
        raise BadInput(f"drain_per_s must be a positive number, got {drain_per_s!r}")
    workers = math.ceil(target_per_s * work_ms / 1000)
    share = target_per_s / drain_per_s
    # statements a second (one claim per batch, one completion per job), each
    # assumed to hold its connection about STATEMENT_MS: that many are busy at once
    busy = min(workers, target_per_s * (1 + 1 / batch) * STATEMENT_MS / 1000)
    dead_per_s = 3 * target_per_s
    rows = target_per_s * 60 * keep_done_minutes
    trigger = 1000 + 0.01 * rows
    if share <= 0.25:
        verdict = "PostgreSQL fits comfortably: under a quarter of the measured capacity"
    elif share <= 1:
        verdict = (
            "possible on this server with care: bigger batches, partitioned history, tuned autovacuum, "
            "and no long transactions; measure before promising"
        )
    else:
        verdict = (
            f"past this server: it needs {share:.1f}x what it drained. Batch harder, shard the queue, "
            "or this is where a broker (Kafka, RabbitMQ, SQS) becomes the right answer"
        )
    return Envelope(
        target_per_s=float(target_per_s),
        drain_per_s=float(drain_per_s),
        drain_is_mine=mine,
        work_ms=float(work_ms),
        batch=int(batch),
        keep_done_minutes=float(keep_done_minutes),
        workers=workers,
        connections_direct=workers,
        connections_busy=busy,
        server_share=share,
        dead_per_s=dead_per_s,
        dead_per_min=dead_per_s * 60,
        table_rows=rows,
        autovacuum_trigger_rows=trigger,
        verdict=verdict,
        guess=guess,
        **(server_fields(db) if db is not None else {}),
    )


# --- the steps ------------------------------------------------------------------


@dataclass(frozen=True)
class RubricItem:
    key: str
    text: str


@dataclass(frozen=True)
class RedFlag:
    text: str
    pattern: str = ""  # a regex that finds it in an answer ("" = only listed, never detected)
    unless: str = ""  # ... unless this regex also matches (for example "not exactly once")
    # judge each sentence on its own: "at least once" in one sentence must not excuse
    # "exactly once" promised in the next
    per_sentence: bool = False


@dataclass(frozen=True)
class Step:
    key: str
    title: str
    prompt: str
    minutes: float
    rubric: tuple[RubricItem, ...]
    hints: tuple[str, ...]
    red_flags: tuple[RedFlag, ...]
    model: Callable[[], str]

    @property
    def seconds(self) -> float:
        return self.minutes * 60


EXACTLY_ONCE = RedFlag(
    "promising exactly-once delivery",
    r"exactly[- ]once",
    r"(not|never|cannot|can't|no)\b[^.]{0,40}exactly[- ]once|at[- ]least[- ]once",
    per_sentence=True,
)
LONG_TX = RedFlag(
    "a transaction held open for the whole job",
    r"(hold|keep|open)[^.]{0,40}transaction[^.]{0,40}(whole|entire|while|during)[^.]{0,20}job",
    r"(never|not|don't|do not|avoid)[^.]{0,30}(hold|keep|open)",
)
NO_NUMBERS = RedFlag("no numbers at all", r"^[^0-9]*$")


def _need() -> str:
    return (
        "Every order needs background work that must not slow checkout: send the receipt, build the invoice "
        "PDF. It must run for every committed order and never for a rolled-back one, survive a worker crash, "
        "and scale by adding workers. We already run PostgreSQL, and the store's volume is modest, so I keep "
        "the queue there: the job is inserted in the same transaction as the order. Delivery is at least "
        "once, so every job must be idempotent."
    )


def _table() -> str:
    return (
        "A `jobs` table: id, kind, payload (jsonb: an id, not data), status ('ready', 'running', 'done', "
        "'dead'), run_at (when it may run, which is how retries wait), attempts and max_attempts, "
        "leased_until (the lease), fence_token (bumped by every claim, never reset), last_error. Checkout "
        "inserts the order and its job in one transaction and calls pg_notify, which is delivered only on "
        "commit: no order without its job, no job without its order. Two partial indexes: ready jobs by "
        "run_at, running jobs by leased_until. "
        + said(
            quote("partial_index_kb"),
            "On my server the ready index stayed {v} with 100,000 done rows.",
            "The guide measured the partial ready index at {v} beside 3,104 kB for a full one.",
        )
    )


def _claim() -> str:
    q = quote("double_claims")
    return (
        "One statement: a WITH query selects the oldest due ready job, ORDER BY run_at LIMIT n, FOR UPDATE "
        "SKIP LOCKED, and the UPDATE marks it running, adds one to attempts and to fence_token and sets a "
        "lease five minutes ahead, RETURNING the job. The lock only lasts for that statement; SKIP LOCKED "
        "means workers never queue behind each other. The WHERE says status = 'ready' as a literal so the "
        "planner can use the partial index. Read-then-update in two statements is wrong: "
        + said(
            q,
            "on my machine the naive claim handed out {v} more than once.",
            "the guide saw up to {v} claimed more than once with eight workers (PostgreSQL 16; 212 to 238 "
            "on 18).",
        )
        + " A bigger LIMIT claims a batch."
    )


def _failure() -> str:
    return (
        "Three failure modes. Double claims: solved by the claim. Crashed workers: the lease; a reaper every "
        "minute resets running jobs whose lease has passed, to ready, or dead on the last attempt. A slow "
        "worker is not a dead one, so completion is fenced: its UPDATE matches the id, status 'running' and "
        "the fence_token its claim returned, which every claim bumps and nothing resets (attempts will not "
        "do: requeuing a dead job resets it), so a stale worker updates 0 rows. That cannot undo an email "
        "already sent, so delivery is at least once and every job is idempotent: record 'receipt 101 sent' "
        "and check it first. Failures retry with exponential backoff (20, 40, 80, 160 s, capped at an hour) "
        "and go dead after max_attempts, keeping last_error for a human. Table bloat is the third mode; that "
        "is operations."
    )


def _operations() -> str:
    return (
        "Idle workers LISTEN on their own direct connection, with a fallback poll every few seconds, because "
        "a notification is a hint that can be lost. "
        + said(
            quote("notify_ms"),
            "NOTIFY picked jobs up in about {v} on my machine.",
            "The guide saw pickup within {v} with NOTIFY, 5 s at the poll without.",
        )
        + " Every status change leaves a dead row version, so I watch three things: counts by status with "
        "the oldest due wait, sessions holding a transaction ID or snapshot with their age, and n_dead_tup "
        "with last_autovacuum on jobs. No long transactions anywhere in the database: "
        + said(
            quote("idle_snapshot_buffers"),
            "one idle REPEATABLE READ transaction made my empty claim read {v}",
            "the guide's idle REPEATABLE READ transaction made an empty claim read {v}",
        )
        + ", so idle_in_transaction_session_timeout is set on the worker role. Done jobs are deleted in "
        "batches of 5,000 (or history partitioned by day and dropped), and autovacuum on jobs is tuned to "
        "scale factor 0.01, threshold 1000."
        + (
            f" On my server one big DELETE of done jobs left {bulk} behind, and dropping a day's partition "
            "left none."
            if (bulk := quote("bulk_delete_dead")).mine
            else ""
        )
    )


def _numbers() -> str:
    env = envelope()
    return "Back of the envelope, for 10,000 jobs a second at 50 ms each: " + "; ".join(env.lines()) + "."


def _exit() -> str:
    return (
        "I would move to a broker when the needs stop matching a table: many consumers need the same message "
        "(fan-out), consumers replay from an offset, producers and consumers belong to different teams, "
        "churn outruns autovacuum even after fixing long transactions and indexes, or workers crowd the "
        "app's connections. Until then staying is right: jobs commit with the business data, and one team "
        "owns both ends. To move without losing jobs, keep the transactional enqueue and add an outbox relay "
        "that claims jobs and publishes them; consumers de-duplicate by job id, because the relay can "
        "publish twice."
    )


STEPS: tuple[Step, ...] = (
    Step(
        "need",
        "1. State the need",
        "The interviewer says: design background jobs for an online store (receipts, invoice PDFs). Start: "
        "what must the system do, and why put the queue in PostgreSQL?",
        2,
        (
            RubricItem("why", "leads with why: the job commits in the same transaction as the order"),
            RubricItem("every", "runs for every committed order, never for a rolled-back one"),
            RubricItem("crash", "survives worker crashes and does not slow checkout"),
            RubricItem("once", "says delivery is at least once, so jobs are idempotent"),
        ),
        (
            "What happens to the order if sending a message to a broker fails after COMMIT?",
            "Which database does the store already run, and what does one transaction give you?",
            "Say what the guarantee is: how many times can a job run?",
        ),
        (RedFlag("jumping to Kafka before stating the need", r"\bkafka\b"), EXACTLY_ONCE),
        _need,
    ),
    Step(
        "table",
        "2. Describe the table",
        "Sketch the jobs table and how checkout adds a job.",
        4,
        (
            RubricItem(
                "columns", "status, run_at, attempts / max_attempts, leased_until, fence_token, last_error"
            ),
            RubricItem("same_tx", "enqueue in the same transaction as the order; NOTIFY delivered on commit"),
            RubricItem("partial", "partial indexes on ready (run_at) and running (leased_until) rows"),
            RubricItem("payload", "a small payload: an id, not the data"),
        ),
        (
            "How does a job that must retry later wait without a sleeping worker?",
            "How does a reaper find jobs whose worker died?",
            "Most rows end up done. What should the indexes cover?",
        ),
        (
            RedFlag("an index over every row, status included", r"index[^.]{0,30}\(status", r"where status"),
            RedFlag("putting big data in the payload (or the NOTIFY)"),
        ),
        _table,
    ),
    Step(
        "claim",
        "3. Explain the claim",
        "Two workers ask for work at the same moment. Show the claim and why it never hands out a job twice.",
        4,
        (
            RubricItem("double", "names double claims and why read-then-update causes them"),
            RubricItem("skip", "one statement: FOR UPDATE SKIP LOCKED inside the WITH, UPDATE ... RETURNING"),
            RubricItem("lease", "a lease: the claim commits at once, no transaction during the work"),
            RubricItem("literal", "the literal 'ready' so the planner uses the partial index"),
            RubricItem("batch", "batches with a bigger LIMIT"),
        ),
        (
            "What stops a second worker reading the same ready row before the first marks it?",
            "Without SKIP LOCKED, what does the second worker do?",
            "Why write status = 'ready' rather than a parameter?",
        ),
        (
            RedFlag("a SELECT, then a separate UPDATE", r"select[^.]{0,60}then[^.]{0,30}update", r"with|cte"),
            LONG_TX,
            RedFlag("an advisory lock or a Redis lock to guard the claim", r"advisory|redis lock"),
        ),
        _claim,
    ),
    Step(
        "failure",
        "4. Handle failure",
        "A worker crashes halfway through an email. Another is only slow. A partner API is down. What "
        "happens?",
        5,
        (
            RubricItem("crash", "crashed workers: the reaper returns expired leases"),
            RubricItem("fence", "a slow worker is fenced: completion checks the claim's token"),
            RubricItem("atleast", "at-least-once delivery with idempotent jobs"),
            RubricItem("backoff", "retries with exponential backoff, capped, then dead with last_error"),
            RubricItem("three", "names the three failure modes: double claims, crashed workers, table bloat"),
        ),
        (
            "If a worker dies, its lock goes with its session. What about its lease?",
            "Worker A is slow, its lease expires, B claims the job. What stops A marking it done?",
            "The fence stops A's write. Does it stop A's email?",
        ),
        (EXACTLY_ONCE, RedFlag("retrying at once, forever", r"retr(y|ies)[^.]{0,20}(immediately|forever)")),
        _failure,
    ),
    Step(
        "operations",
        "5. Cover operations",
        "It is in production. What do you watch, what do you set, and what do you run every day?",
        4,
        (
            RubricItem("poll", "LISTEN/NOTIFY to wake workers, with a fallback poll"),
            RubricItem(
                "longtx", "no long transactions; idle_in_transaction_session_timeout on the worker role"
            ),
            RubricItem("watch", "watches status counts, old transactions, n_dead_tup and last_autovacuum"),
            RubricItem("cleanup", "deletes done jobs in batches (or drops day partitions)"),
            RubricItem("bloat", "table bloat: autovacuum tuned per table"),
        ),
        (
            "A notification sent while no worker listens: what happens to it?",
            "Which session in the whole database can stop VACUUM cleaning jobs?",
            "Three queries an on-call engineer runs first?",
        ),
        (
            LONG_TX,
            RedFlag("NOTIFY alone, with no poll", r"notify", r"poll"),
            RedFlag("one big DELETE of old jobs", r"(one|single|big)[^.]{0,15}delete", r"batch"),
        ),
        _operations,
    ),
    Step(
        "numbers",
        "6. Do the numbers",
        "The interviewer asks: what if it grows to 10,000 jobs a second? Work it out aloud.",
        4,
        (
            RubricItem("measured", "starts from a measured rate, and says it is not a benchmark"),
            RubricItem("workers", "workers from rate x time per job"),
            RubricItem("connections", "connections, and a pooler for the claims but not for LISTEN"),
            RubricItem("vacuum", "dead row versions per second for autovacuum"),
            RubricItem("limit", "says where PostgreSQL stops being the right answer"),
        ),
        (
            "How many jobs are in flight if 10,000 arrive a second and each takes 50 ms?",
            "How many dead row versions does one job leave?",
            "What fraction of your measured drain rate is 10,000 a second?",
        ),
        (
            NO_NUMBERS,
            RedFlag("a jobs-per-second line quoted as a benchmark", r"benchmark", r"not a benchmark"),
        ),
        _numbers,
    ),
    Step(
        "exit",
        "7. Name the exit",
        "When would you move off PostgreSQL, and how would you move without losing jobs?",
        3,
        (
            RubricItem("signals", "fan-out, replay, team boundaries, vacuum cannot keep up, connections"),
            RubricItem("stay", "says why staying is right until then"),
            RubricItem("outbox", "an outbox relay keeps the transactional enqueue"),
            RubricItem("dedupe", "consumers de-duplicate by job id: the relay publishes at least once"),
        ),
        (
            "Which of the five signals apply to a store sending receipts?",
            "What does a log-based broker give that a table cannot?",
            "How does a job get from the table to the broker if checkout must not talk to the broker?",
        ),
        (
            EXACTLY_ONCE,
            RedFlag(
                "dual writes: the app writes the order and publishes to the broker separately",
                r"(publish|send)[^.]{0,40}(after|then)[^.]{0,20}commit",
            ),
        ),
        _exit,
    ),
)

STEP_KEYS = tuple(s.key for s in STEPS)


def step(key: str) -> Step:
    for s in STEPS:
        if s.key == key:
            return s
    raise BadInput(f"no step {key!r}; the steps are {', '.join(STEP_KEYS)}")


def red_flags_in(step_key: str, answer: str) -> list[str]:
    """The step's red flags an answer seems to raise (a reminder, not a verdict)."""
    found: list[str] = []
    text = answer.lower().strip()
    if not text:
        return found
    for flag in step(step_key).red_flags:
        parts = re.split(r"(?<=[.!?])\s+", text) if flag.per_sentence else [text]
        if flag.pattern and any(
            re.search(flag.pattern, part, re.DOTALL) and not (flag.unless and re.search(flag.unless, part))
            for part in parts
        ):
            found.append(flag.text)
    return found


# --- follow-up questions ----------------------------------------------------------


@dataclass(frozen=True)
class FollowUp:
    key: str
    question: str
    model: Callable[[], str]


FOLLOW_UPS: tuple[FollowUp, ...] = (
    FollowUp(
        "priorities",
        "How would you add priorities?",
        lambda: (
            "Add a priority column and claim ORDER BY priority DESC, run_at, with the partial index on "
            "(priority DESC, run_at) WHERE status = 'ready'. Watch for starvation: low priorities can wait "
            "forever under load, so either age them (the effective priority grows with the wait) or run a "
            "few workers that only take low priorities. Few fixed levels can also be separate kinds with "
            "their own workers."
        ),
    ),
    FollowUp(
        "exactly_once",
        "Can you make it exactly once?",
        lambda: (
            "Not delivery, no: a worker can do the work and die before it records done, and the lease hands "
            "the job out again, so delivery stays at least once. What I can do is make a second run "
            "harmless: an idempotent handler. That is still not exactly-once delivery; at best it gives "
            "exactly-once effects, and only with an idempotency key: the job id passed to the email "
            "provider, which drops a repeat only if it honours the key (and only for as long as it keeps "
            "it), or a 'receipt sent' row keyed by job id and written in the same transaction as the effect "
            "when the effect is in our database. The fence stops a stale worker's status write, not its "
            "email."
        ),
    ),
    FollowUp(
        "two_hours",
        "One job takes two hours. What changes?",
        lambda: (
            "Not the transaction: the claim still commits at once and no transaction stays open for two "
            "hours, or VACUUM stalls for the whole database. The lease must outlive the work, so the worker "
            "extends it with a heartbeat every minute or so (fenced, so a stale worker cannot extend), and "
            "the lease stays short enough that a crash is noticed in minutes. Better still, split the job "
            "into resumable steps that record progress, so a retry does not start from zero."
        ),
    ),
    FollowUp(
        "scheduled",
        "How do you run scheduled and recurring jobs?",
        lambda: (
            "Scheduled: insert with run_at in the future; the claim already ignores jobs not yet due. "
            "Recurring: a scheduler enqueues the next run, made idempotent with a unique key on (kind, "
            "scheduled_for), so two schedulers or a retry cannot enqueue the same run twice; or the job "
            "enqueues its own next run in the same transaction as its completion."
        ),
    ),
    FollowUp(
        "unique",
        "How do you keep a job unique (only one 'rebuild invoice 101' waiting)?",
        lambda: (
            "A unique partial index, for example on (kind, payload->>'order_id') WHERE status IN ('ready', "
            "'running'), and enqueue with INSERT ... ON CONFLICT DO NOTHING. The database enforces it under "
            "concurrency, which an application-side check cannot."
        ),
    ),
    FollowUp(
        "fairness",
        "One tenant floods the queue. How do you stay fair to the others?",
        lambda: (
            "Claim per tenant: round-robin over tenants with ready work (a small tenants table or DISTINCT "
            "ON tenant), or cap each tenant's running jobs and skip tenants at their cap, or give big "
            "tenants their own kind and workers. Measure it with the oldest due wait per tenant, not overall."
        ),
    ),
    FollowUp(
        "ten_thousand",
        "What about 10,000 jobs a second?",
        lambda: (
            "I would work it out: "
            + "; ".join(envelope().lines()[:5])
            + ". So bigger batches, partitioned history, aggressive autovacuum, a pooler; and if the share "
            "of the server is past one, PostgreSQL is no longer the right answer for that queue."
        ),
    ),
    FollowUp(
        "breaks_first",
        "What breaks first, and how would you see it?",
        lambda: (
            "Usually bloat, through one long transaction somewhere in the database: dead versions cannot be "
            "removed, claims read more and more pages, and the oldest due wait climbs. "
            + said(
                quote("idle_snapshot_buffers"),
                "On my server one idle REPEATABLE READ made an empty claim read {v}.",
                "The guide's idle REPEATABLE READ made an empty claim read {v}, against 1 after VACUUM.",
            )
            + " I would see it in n_dead_tup not falling, an old xact_age in pg_stat_activity, and the "
            "oldest due wait; then connections, as workers crowd the app."
        ),
    ),
    FollowUp(
        "poolers",
        "Does it work behind PgBouncer?",
        lambda: (
            "The claim, complete and fail statements do: each is one short transaction, so transaction "
            "pooling is fine. LISTEN is not: a registration belongs to one session, and a pooler hands "
            "sessions to others, so the listener keeps its own direct connection, one per worker process. "
            "The fallback poll covers a missed notification either way."
        ),
    ),
    FollowUp(
        "to_broker",
        "How would you move to a broker without losing jobs?",
        lambda: (
            "Keep enqueueing in the business transaction (the table becomes an outbox). A relay claims jobs "
            "with the same claim, publishes each to the broker, waits for the broker's acknowledgement, then "
            "marks the job done. If the broker is down, the publish fails, the job goes back with backoff, "
            "and nothing is lost. If the relay dies after publishing but before marking done, the job is "
            "published again, so consumers de-duplicate by job id. Run both paths side by side, then switch "
            "consumers over."
        ),
    ),
    FollowUp(
        "why_not_redis",
        "Why not just use Redis (or SQS) from the start?",
        lambda: (
            "Because the job must commit with the order. With a separate system, the order can commit and "
            "the publish fail, or the other way round, and closing that gap needs an outbox anyway. At the "
            "store's volume one system to run, back up and monitor is worth more than a broker's throughput "
            "we do not need."
        ),
    ),
    FollowUp(
        "deploys",
        "How do you deploy new worker code without losing jobs?",
        lambda: (
            "Workers stop on SIGTERM after finishing the current job (no new claim). A worker killed mid-job "
            "is the crash case: its lease expires and the job runs again, which is safe because handlers are "
            "idempotent. Change payload formats so old and new workers can both read them during the rollout."
        ),
    ),
)


def follow_up(key: str) -> FollowUp:
    for f in FOLLOW_UPS:
        if f.key == key:
            return f
    raise BadInput(f"no follow-up {key!r}; known: {', '.join(f.key for f in FOLLOW_UPS)}")


# --- the learner's rehearsal, saved as they go ----------------------------------


def fresh_attempt(now: float) -> dict[str, Any]:
    return {
        "started": now,
        "answers": {},
        "ticks": {},
        "spent_s": {},
        "hints": {},
        "revealed": [],
        "follow_ups": {},
    }


# What each part of an attempt holds, as Rehearsal reads and writes it.
ATTEMPT_PARTS: dict[str, type] = {
    "answers": dict,
    "ticks": dict,
    "spent_s": dict,
    "hints": dict,
    "revealed": list,
    "follow_ups": dict,
}


def rehearsal_check(data: dict[str, Any]) -> None:
    """The schema of the rehearsal file, for `learner.load`: ValueError naming
    the first part that is not what Rehearsal writes ({"current": attempt,
    "past": [attempt, ...]}), so a hand-edited file is set aside, not crashed on."""
    attempts = [("current", data.get("current") or {})]
    past = data.get("past") or []
    if not isinstance(past, list):
        raise ValueError(f"past is {type(past).__name__}, not a list")
    attempts += [(f"past[{i}]", a) for i, a in enumerate(past)]
    for where, attempt in attempts:
        if not isinstance(attempt, dict):
            raise ValueError(f"{where} is {type(attempt).__name__}, not an object")
        for part, kind in ATTEMPT_PARTS.items():
            if part in attempt and not isinstance(attempt[part], kind):
                raise ValueError(f"{where}.{part} is {type(attempt[part]).__name__}, not {kind.__name__}")
        if not isinstance(attempt.get("scores", {}), dict):
            raise ValueError(f"{where}.scores is not an object")


class Rehearsal:
    """One rehearsal in progress, and the ones finished before it.

    Every change is written to the learner file at once (`learner.save`,
    atomic), so nothing typed is lost to a crash or a kernel restart. The
    clock is a parameter so tests can drive the timer.
    """

    def __init__(self, name: str = FILE, *, clock: Callable[[], float] = time.time):
        learner.path_of(name)  # refuses a bad name before anything else
        self.name, self.clock = name, clock
        data = learner.load(name, rehearsal_check)
        self.current: dict[str, Any] = data.get("current") or fresh_attempt(clock())
        for part, empty in fresh_attempt(clock()).items():  # a file from before a part existed
            self.current.setdefault(part, empty)
        self.past: list[dict[str, Any]] = list(data.get("past") or [])
        self.active: str | None = None
        self.active_since: float | None = None

    # saving

    def save(self) -> None:
        learner.save(self.name, {"current": self.current, "past": self.past})

    def discard(self) -> None:
        """Delete this rehearsal's file (used by the notebook's own checks)."""
        learner.path_of(self.name).unlink(missing_ok=True)

    # answers, ticks, hints

    def answer(self, step_key: str, text: str) -> None:
        step(step_key)
        if not isinstance(text, str):
            raise BadInput(f"an answer is text, got {type(text).__name__}")
        self.current["answers"][step_key] = text
        self.save()

    def answer_of(self, step_key: str) -> str:
        return self.current["answers"].get(step_key, "")

    def tick(self, step_key: str, item_key: str, on: bool = True) -> None:
        keys = [i.key for i in step(step_key).rubric]
        if item_key not in keys:
            raise BadInput(f"step {step_key!r} has no rubric item {item_key!r}; it has {', '.join(keys)}")
        ticked = [k for k in self.current["ticks"].get(step_key, []) if k != item_key]
        if on:
            ticked.append(item_key)
        self.current["ticks"][step_key] = [k for k in keys if k in ticked]
        self.save()

    def ticked(self, step_key: str) -> list[str]:
        return list(self.current["ticks"].get(step_key, []))

    def next_hint(self, step_key: str) -> str | None:
        """Reveal one more hint; None when all are shown."""
        hints = step(step_key).hints
        shown = self.current["hints"].get(step_key, 0)
        if shown >= len(hints):
            return None
        self.current["hints"][step_key] = shown + 1
        self.save()
        return hints[shown]

    def hints_shown(self, step_key: str) -> list[str]:
        return list(step(step_key).hints[: self.current["hints"].get(step_key, 0)])

    def reveal(self, step_key: str) -> str:
        """The model answer; revealing it is recorded (an honest score says so)."""
        s = step(step_key)
        if step_key not in self.current["revealed"]:
            self.current["revealed"].append(step_key)
            self.save()
        return s.model()

    def answer_follow_up(self, key: str, text: str) -> None:
        follow_up(key)
        self.current["follow_ups"][key] = text
        self.save()

    # the timer

    def start(self, step_key: str) -> None:
        """Start the step's timer (stopping any other)."""
        step(step_key)
        self.stop()
        self.active, self.active_since = step_key, self.clock()

    def stop(self) -> None:
        if self.active is not None and self.active_since is not None:
            spent = self.current["spent_s"].get(self.active, 0.0) + max(0.0, self.clock() - self.active_since)
            self.current["spent_s"][self.active] = round(spent, 1)
            self.save()
        self.active, self.active_since = None, None

    def spent(self, step_key: str) -> float:
        total = float(self.current["spent_s"].get(step_key, 0.0))
        if self.active == step_key and self.active_since is not None:
            total += max(0.0, self.clock() - self.active_since)
        return total

    # scores

    def score(self, step_key: str) -> tuple[int, int]:
        return len(self.ticked(step_key)), len(step(step_key).rubric)

    def total(self) -> tuple[int, int]:
        got = sum(self.score(k)[0] for k in STEP_KEYS)
        return got, sum(len(s.rubric) for s in STEPS)

    def over_time(self) -> list[tuple[str, float, float]]:
        """(step, spent s, suggested s) for each step that ran over."""
        return [(s.key, self.spent(s.key), s.seconds) for s in STEPS if self.spent(s.key) > s.seconds]

    def previous(self) -> dict[str, Any] | None:
        """The last finished rehearsal's scores, or None."""
        return self.past[-1] if self.past else None

    def finish(self) -> dict[str, Any]:
        """Close this rehearsal: keep its scores and answers, start a new one."""
        self.stop()
        got, out_of = self.total()
        record = {
            "started": self.current.get("started"),
            "finished": self.clock(),
            "scores": {k: list(self.score(k)) for k in STEP_KEYS},
            "total": [got, out_of],
            "spent_s": {k: round(self.spent(k), 1) for k in STEP_KEYS},
            "over_time": [k for k, _, _ in self.over_time()],
            "revealed": list(self.current["revealed"]),
            "answers": dict(self.current["answers"]),
        }
        self.past.append(record)
        self.current = fresh_attempt(self.clock())
        self.save()
        return record

    def scoreboard(self) -> list[tuple[str, str, str, str, str]]:
        """Rows of (step, score now, score last time, time spent, suggested)."""
        last = self.previous()
        rows = []
        for s in STEPS:
            got, out_of = self.score(s.key)
            before = "–"
            if last and s.key in last.get("scores", {}):
                before = "{}/{}".format(*last["scores"][s.key])
            rows.append(
                (s.title, f"{got}/{out_of}", before, clock_text(self.spent(s.key)), clock_text(s.seconds))
            )
        got, out_of = self.total()
        before = "{}/{}".format(*last["total"]) if last else "–"
        rows.append(
            (
                "total",
                f"{got}/{out_of}",
                before,
                clock_text(sum(self.spent(k) for k in STEP_KEYS)),
                clock_text(sum(s.seconds for s in STEPS)),
            )
        )
        return rows


def clock_text(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


# --- the one-page summary ---------------------------------------------------------


SUMMARY_SQL = ("claim", "complete", "fail", "reap", "cleanup_done")


def summary_markdown(server_version: str = "") -> str:
    """One page: the design, its SQL, the key numbers (mine beside the guide's)."""
    q = quotes()
    env = envelope()
    out = ["# The PostgreSQL job queue on one page", ""]
    if server_version:
        out += [f"Measured on PostgreSQL {server_version}, where marked *mine*.", ""]
    out += [
        "## The design",
        "- **Need**: background work for every committed order, surviving crashes, never slowing checkout.",
        (
            "- **Table**: `jobs` with status, run_at, attempts, leased_until, fence_token, last_error; "
            "enqueued in the order's transaction; partial indexes on ready and running rows."
        ),
        "- **Claim**: one statement, `FOR UPDATE SKIP LOCKED` inside the `WITH`, a lease, `'ready'` as a "
        "literal.",
        (
            "- **Failure**: reaper for expired leases; fenced completion; backoff then dead; **at least "
            "once**, so handlers are idempotent."
        ),
        (
            "- **Operations**: LISTEN/NOTIFY plus a fallback poll; no long transactions "
            "(idle_in_transaction_session_timeout); batch deletes or day partitions; per-table autovacuum."
        ),
        "- **Exit**: fan-out, replay, team boundaries, vacuum falling behind, connections; an outbox relay "
        "to move.",
        "",
        "## Key numbers",
        "",
        "| measure | value | source |",
        "|---|---|---|",
    ]
    for name, m in MEASURES.items():
        qq = q[name]
        if not qq.mine and not m.guide_number:
            continue
        out.append(f"| {m.what} | {qq} | {'*mine*: ' if qq.mine else ''}{qq.source} |")
    out += ["", "## 10,000 jobs a second, on the back of an envelope", ""]
    out += [f"- {line}" for line in env.lines()]
    out += ["", "## The SQL", ""]
    for name in SUMMARY_SQL:
        out += [f"`sql/{name}.sql`", "", "```sql", statement(name).text, "```", ""]
    return "\n".join(out)


def summary_html(server_version: str = "") -> str:
    """The same page as HTML, laid out to print on one sheet."""
    body = []
    in_code = False
    table_open = False
    for line in summary_markdown(server_version).splitlines():
        if line.startswith("```"):
            body.append("<pre class='pgq-sql'>" if not in_code else "</pre>")
            in_code = not in_code
            continue
        if in_code:
            body.append(escape(line))
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if set("".join(cells)) <= set("-"):
                continue
            if not table_open:
                body.append("<table class='pgq-numbers'>")
                table_open = True
            body.append("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in cells) + "</tr>")
            continue
        if table_open:
            body.append("</table>")
            table_open = False
        if line.startswith("# "):
            body.append(f"<h1>{inline(line[2:])}</h1>")
        elif line.startswith("## "):
            body.append(f"<h2>{inline(line[3:])}</h2>")
        elif line.startswith("- "):
            body.append(f"<div>• {inline(line[2:])}</div>")
        elif line.strip():
            body.append(f"<p>{inline(line)}</p>")
    style = (
        "<style>.pgq-summary{font:12px/1.35 sans-serif;max-width:60em}.pgq-summary h1{font-size:18px}"
        ".pgq-summary h2{font-size:14px;margin:8px 0 2px}.pgq-summary pre{font-size:10px;margin:2px 0;"
        "background:#f6f6f6;padding:4px}.pgq-summary td{padding:1px 6px;border-bottom:1px solid #ddd}"
        "@media print{.pgq-summary{max-width:none}.pgq-summary pre{white-space:pre-wrap}}</style>"
    )
    return style + "<div class='pgq-summary'>" + "\n".join(body) + "</div>"


def inline(text: str) -> str:
    """Markdown's `code`, **bold** and *italic*, for the summary's own lines."""
    html = escape(text)
    html = re.sub(r"`([^`]+)`", r"<code>\1</code>", html)
    html = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", html)
    return re.sub(r"\*([^*]+)\*", r"<i>\1</i>", html)


# --- the same rehearsal in a terminal (`pgq-teach interview`) ----------------------


def rehearse_in_terminal(
    read: Callable[[], str | None],
    say: Callable[[str], None],
    *,
    steps: tuple[str, ...] = STEP_KEYS,
    follow_ups: int = 3,
    rehearsal: Rehearsal | None = None,
) -> dict[str, Any] | None:
    """Run the rehearsal on lines of text. `read()` returns the next line, or
    None at the end of input (then everything typed so far stays saved and the
    rehearsal stays open). Returns the finished record, or None if input ended."""
    for key in steps:
        step(key)
    if not isinstance(follow_ups, int) or not 0 <= follow_ups <= len(FOLLOW_UPS):
        raise BadInput(f"follow_ups must be 0 to {len(FOLLOW_UPS)}, got {follow_ups!r}")
    r = rehearsal or Rehearsal()
    say("The interview rehearsal. Answer aloud, then type it. An empty line ends an answer.")
    say("On a line alone: ? shows a hint, ! shows the model answer. Saved as you type.")
    previous = r.previous()
    if previous:
        say("Last time: {}/{}".format(*previous["total"]))
    for key in steps:
        s = step(key)
        say("")
        say(f"== {s.title}  (suggested {clock_text(s.seconds)}) ==")
        say(s.prompt)
        say("Red flags to avoid: " + "; ".join(f.text for f in s.red_flags))
        if r.answer_of(key):
            say(f"(your saved answer: {r.answer_of(key)!r}; an empty line keeps it)")
        r.start(key)
        lines: list[str] = []
        while True:
            line = read()
            if line is None:
                r.stop()
                say("(input ended: your answers are saved; run `pgq-teach interview` again to go on)")
                return None
            line = line.rstrip("\n")
            if line.strip() == "?":
                hint = r.next_hint(key)
                say(f"hint: {hint}" if hint else "no more hints for this step")
            elif line.strip() == "!":
                say("model answer: " + r.reveal(key))
            elif not line.strip():
                break
            else:
                lines.append(line)
                r.answer(key, "\n".join(lines))
            say(
                f"[{clock_text(r.spent(key))} of {clock_text(s.seconds)}"
                + (", over time]" if r.spent(key) > s.seconds else "]")
            )
        r.stop()
        for flag in red_flags_in(key, r.answer_of(key)):
            say(f"red flag? {flag}")
        say("What the interviewer listens for:")
        for n, item in enumerate(s.rubric, 1):
            say(f"  {n}. {item.text}")
        say("Which did you cover? Their numbers, separated by spaces (empty line: none).")
        picked = read()
        if picked is None:
            say("(input ended: your answers are saved)")
            return None
        chosen = set()
        for word in picked.replace(",", " ").split():
            if word.isdigit() and 1 <= int(word) <= len(s.rubric):
                chosen.add(s.rubric[int(word) - 1].key)
            else:
                say(f"(ignored {word!r}: not an item number 1 to {len(s.rubric)})")
        for item in s.rubric:
            r.tick(key, item.key, item.key in chosen)
        got, out_of = r.score(key)
        say(
            f"score {got}/{out_of}; time {clock_text(r.spent(key))} of {clock_text(s.seconds)}"
            + (" (over time)" if r.spent(key) > s.seconds else "")
        )
    for f in FOLLOW_UPS[:follow_ups]:
        say("")
        say(f"Follow-up: {f.question}")
        lines = []
        while (line := read()) is not None and line.strip():
            lines.append(line.rstrip("\n"))
        if lines:
            r.answer_follow_up(f.key, "\n".join(lines))
        say("model answer: " + f.model())
        if line is None:
            say("(input ended: your answers are saved)")
            return None
    record = r.finish()
    say("")
    say("{:<22} {:>10} {:>10} {:>8} {:>10}".format("step", "this time", "last time", "spent", "suggested"))
    last = r.past[-2] if len(r.past) >= 2 else None
    for s in STEPS:
        before = "{}/{}".format(*last["scores"][s.key]) if last and s.key in last.get("scores", {}) else "–"
        say(
            "{:<22} {:>10} {:>10} {:>8} {:>10}".format(
                s.title,
                "{}/{}".format(*record["scores"][s.key]),
                before,
                clock_text(record["spent_s"][s.key]),
                clock_text(s.seconds),
            )
        )
    before = "{}/{}".format(*last["total"]) if last else "–"
    say("{:<22} {:>10} {:>10}".format("total", "{}/{}".format(*record["total"]), before))
    over = ", ".join(step(k).title for k in record["over_time"]) or "none"
    say(f"over time: {over}")
    return record
