"""Your turn: the learner writes one statement of the queue, and the labs
check it live in a scratch database, as a role that can reach nothing else.

    verdict = exercises.check("03/claim", sql_text)
    verdict.passed, verdict.headline, verdict.hint

`check` never raises for anything the learner typed: a statement that is not
exactly one query, or that fails or times out, comes back as a verdict that
says so. Verdicts are saved in the learner's `progress` file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import psycopg

from ..errors import BadInput, PgqError
from ..infra import learner
from ..statements import statement
from . import backoff, claim, cleanup, envelope, fair, fence, index, reaper, relay, unique, vacuum, wakeup
from . import progress as progress_file
from .learner_sql import MAX_CHARS, STATEMENT_WORDS, Refused, read
from .sandbox import (
    LOCK_TIMEOUT_S,
    STATEMENT_TIMEOUT_S,
    STOPPED,
    CheckerRestarted,
    Scratch,
    one_check,
    open_scratch,
    was_stopped,
)
from .verdict import Verdict, refused


@dataclass(frozen=True)
class Exercise:
    key: str  # "lesson/name", the key in the progress file
    title: str
    task: str
    params: tuple[str, ...]  # the placeholders the learner may use
    check: Callable[..., Verdict]  # the checker: the learner's attempt in, a Verdict out
    attempt: str  # the seeded wrong attempt, a statement name under sql/
    answer: str  # the model answer, a statement name under sql/
    words: frozenset[str] = STATEMENT_WORDS  # the statements accepted, by first word
    form: bool = False  # not SQL: a small form of numbers (lesson 12); attempt/answer name envelope.FORMS
    wrong: tuple[str, ...] = ()  # more common wrong answers, beside the attempt (tests/test_verdict_hints.py)

    @property
    def wrong_answers(self) -> tuple[str, ...]:
        """Every wrong answer this exercise lists: the seeded attempt first."""
        return (self.attempt, *(w for w in self.wrong if w != self.attempt))

    @property
    def lesson(self) -> str:
        return self.key.split("/")[0]

    def attempt_text(self) -> str:
        return self.text_of(self.attempt)

    def text_of(self, name: str) -> str:
        """The text of an attempt, answer or wrong answer this exercise names."""
        return envelope.FORMS[name] if self.form else statement(name).text

    def answer_text(self) -> str:
        return envelope.FORMS[self.answer] if self.form else statement(self.answer).text


def _claim(**options):
    return lambda scratch, sql, **kw: claim.check_claim(scratch, sql, **options, **kw)


EXERCISES = {
    e.key: e
    for e in [
        Exercise(
            "01/claim",
            "claim one job",
            "Claim the oldest due ready job so no two workers ever get it.",
            ("batch", "lease"),
            _claim(),
            "exercise/wrong/unguarded_update",
            "claim",
            wrong=("exercise/wrong/claim_without_counts",),
        ),
        Exercise(
            "01/guarded_update",
            "the guarded update",
            "Without any lock, make this UPDATE safe: a worker that loses the race must update nothing.",
            ("lease",),
            claim.check_guarded_update,
            "exercise/wrong/unguarded_update",
            "exercise/model/guarded_update",
        ),
        Exercise(
            "03/claim",
            "the one-statement claim",
            "Pick, lock and mark the next due job in one statement, skipping rows other workers hold.",
            ("batch", "lease"),
            _claim(need_lock_in_with=True),
            "exercise/wrong/claim_without_lock",
            "claim",
            wrong=(
                "exercise/wrong/claim_without_lease",
                "exercise/wrong/claim_without_counts",
                "exercise/wrong/claim_waits_for_locks",
                "exercise/wrong/claim_locks_only",
            ),
        ),
        Exercise(
            "03/batch_claim",
            "the batch claim",
            "Claim up to :batch jobs at once, never one job twice.",
            ("batch", "lease"),
            claim.check_batch_claim,
            "exercise/wrong/batch_in_subquery",
            "claim",
        ),
        Exercise(
            "04/reap",
            "the reaper",
            "Return expired leases to ready (or dead), using the partial index.",
            (),
            reaper.check_reap,
            "exercise/wrong/reap_without_status",
            "reap",
            wrong=(
                "exercise/wrong/reap_fixed_attempts",
                "exercise/wrong/reap_early",
            ),
        ),
        Exercise(
            "05/complete",
            "complete with a fence",
            "Mark the job done only while this worker still holds the claim.",
            ("id", "fence_token", "attempts"),
            fence.check_complete,
            "exercise/wrong/complete_on_attempts",
            "complete",
            wrong=(
                "exercise/wrong/complete_fixed_token",
                "exercise/wrong/complete_without_fence",
            ),
        ),
        Exercise(
            "06/fail",
            "fail with backoff",
            "Retry after 10 s x 2^attempts, capped at an hour; dead at max_attempts.",
            ("id", "fence_token", "attempts", "error"),
            backoff.check_fail,
            "exercise/wrong/fail_uncapped",
            "fail",
        ),
        Exercise(
            "07/notify",
            "enqueue and wake the workers",
            "Enqueue one job and notify jobs_ready in the same statement, with only the new job's id or its "
            "kind (sql/notify_ready.sql sends the kind).",
            ("kind", "payload"),
            wakeup.check_notify,
            "exercise/wrong/notify_whole_job",
            "exercise/model/enqueue_and_notify",
        ),
        Exercise(
            "08/index",
            "the ready index",
            "Write the index the claim needs, and only that.",
            (),
            index.check_index,
            "exercise/wrong/full_status_index",
            "exercise/model/ready_index",
            frozenset({"CREATE"}),
            wrong=(
                "exercise/wrong/ready_index_unique",
                "exercise/wrong/ready_index_including_payload",
            ),
        ),
        Exercise(
            "09/holder",
            "the session holding VACUUM back",
            "Query pg_stat_activity for the pid of the session whose snapshot keeps VACUUM from removing "
            "dead versions, and no other.",
            (),
            vacuum.check_holder,
            "exercise/wrong/idle_in_transaction",
            "exercise/model/find_snapshot_holder",
            frozenset({"SELECT", "WITH"}),
            wrong=("exercise/wrong/oldest_idle_in_transaction",),
        ),
        Exercise(
            "10/cleanup",
            "cleanup in short batches",
            "Delete the next short batch of done jobs after id :after, in id order, :batch rows at most.",
            ("batch", "after"),
            cleanup.check_cleanup,
            "exercise/wrong/cleanup_all_at_once",
            "cleanup_done",
            wrong=(
                "exercise/wrong/cleanup_fixed_limit",
                "exercise/wrong/cleanup_delete_limit",
            ),
        ),
        Exercise(
            "10b/fair_claim",
            "the fair claim",
            "Claim up to :batch due jobs with a tenant, each tenant's oldest first and one per tenant, "
            "so one tenant's flood cannot fill the batch; skip rows other workers hold.",
            ("batch", "lease"),
            fair.check_fair_claim,
            "exercise/wrong/fair_claim_fifo",
            "exercise/model/claim_one_per_tenant",
            wrong=(
                "exercise/wrong/fair_claim_distinct_for_update",
                "exercise/wrong/fair_claim_locks_unreturned",
            ),
        ),
        Exercise(
            "10c/unique_enqueue",
            "the unique enqueue",
            "Add a job of :kind with :payload and :unique_key unless a live (ready or running) job of the "
            "same kind holds the key, and return one id either way: the new job's, or the live one's.",
            ("kind", "payload", "unique_key"),
            unique.check_unique_enqueue,
            "exercise/wrong/unique_enqueue_do_nothing",
            "exercise/model/unique_enqueue",
            wrong=(
                "exercise/wrong/unique_enqueue_key_alone",
                "exercise/wrong/unique_enqueue_check_then_insert",
                "exercise/wrong/unique_enqueue_same_snapshot",
            ),
        ),
        Exercise(
            "11/relay_complete",
            "the relay's fenced batch completion",
            "After the broker accepted a batch, mark it done in one UPDATE, each job fenced on its own "
            "token (:ids and :fence_tokens, paired in order), so a stale relay finishes nothing.",
            ("ids", "fence_tokens", "attempts"),
            relay.check_relay_completion,
            "exercise/wrong/complete_batch_on_attempts",
            "complete_many",
            wrong=(
                "exercise/wrong/complete_batch_any_token",
                "exercise/wrong/complete_batch_on_first_token",
                "exercise/wrong/complete_all_running",
            ),
        ),
        Exercise(
            "11/relay_hand_back",
            "the relay's hand-back while the broker is down",
            "The broker did not answer: put the claimed batch back unsent in one UPDATE, each row "
            "fenced on its own token (:ids and :fence_tokens, paired in order; :error says why), "
            "without spending a try, so it keeps its place ahead of its order's later events.",
            ("ids", "fence_tokens", "error"),
            relay.check_relay_hand_back,
            "exercise/wrong/hand_back_spending_a_try",
            "release_many",
            wrong=("exercise/wrong/hand_back_any_token",),
        ),
        Exercise(
            "12/envelope",
            "the back of the envelope",
            "Fill in each number for the case in the form; the checker works them out with the rehearsal's "
            "calculator.",
            (),
            envelope.check_envelope,
            "envelope/attempt",
            "envelope/answer",
            form=True,
        ),
    ]
}


def exercise(key: str) -> Exercise:
    if key not in EXERCISES:
        raise BadInput(f"no exercise {key!r}; the exercises are: {', '.join(EXERCISES)}")
    return EXERCISES[key]


def judge(ex: Exercise, sql: str, *, scratch: Scratch | None = None, progress=None, stop=None) -> Verdict:
    """The verdict on `sql`, in `scratch` (a fresh scratch database if None)."""
    try:
        if ex.form:  # numbers, not SQL: nothing reaches a server
            return ex.check(sql, exercise=ex.key, progress=progress, stop=stop)
        learner_sql = read(sql, ex.params, ex.words, exercise=ex.key)
        scratch = scratch or open_scratch(ex.key.replace("/", "_"))
        return ex.check(scratch, learner_sql, exercise=ex.key, progress=progress, stop=stop)
    except CheckerRestarted as exc:
        return Verdict(
            ex.key,
            False,
            str(exc),
            refused=True,
            hint="A queue statement takes milliseconds: look for what multiplies the work, then Check again.",
            server_version=_checker_version(scratch),
        )
    except Refused as exc:
        return refused(ex.key, str(exc), hint=exc.hint)
    except psycopg.errors.QueryCanceled:
        return refused(
            ex.key,
            f"it ran longer than the {STATEMENT_TIMEOUT_S} s statement timeout and was "
            "cancelled; a queue statement takes milliseconds",
        )
    except psycopg.errors.LockNotAvailable as exc:
        # The same SQLSTATE for a wait past lock_timeout and for NOWAIT; the text tells
        # them apart (a translated text falls back to the wait's wording).
        if "could not obtain lock" in (exc.diag.message_primary or ""):
            return refused(
                ex.key,
                "it met a row another session holds and raised an error (NOWAIT); SKIP LOCKED passes over it",
            )
        return refused(ex.key, f"it waited over {LOCK_TIMEOUT_S} s for a lock and was cancelled")
    except psycopg.errors.InsufficientPrivilege as exc:
        return refused(
            ex.key, f"the checker's role may only read and change the jobs table: {exc.diag.message_primary}"
        )
    except psycopg.Error as exc:
        first = (exc.diag.message_primary or str(exc)).splitlines()[0]
        return Verdict(
            ex.key,
            False,
            f"PostgreSQL raised an error: {first}",
            hint="Read the error, fix the statement, and Check again.",
            server_version=_checker_version(scratch),
        )


def _checker_version(scratch: Scratch | None) -> str:
    """The version of the server that ran the check ("" if none did)."""
    return scratch.db.server.version if scratch is not None else ""


def check(key: str, sql: str, *, save: bool = True, progress=None, stop=None) -> Verdict:
    """Run the learner's `sql` for exercise `key` and return the verdict
    (saved, with the SQL, in the learner's progress unless `save` is False).
    One check of an exercise runs at a time in this process; a check that
    another check or Stop ended judged nothing, so it is not saved as a try."""
    ex = exercise(key)
    try:
        with one_check(key):
            verdict = judge(ex, sql, progress=progress, stop=stop)
            if was_stopped(key):  # whatever the cancel made of the check, it is a Stop
                verdict = Verdict(key, False, STOPPED, hint="Check again when you are ready.", stopped=True)
    except Refused as busy:
        return refused(key, str(busy))
    if save and not verdict.stopped:
        try:
            record(verdict, sql)
        except (OSError, PgqError):
            pass  # the verdict still shows; a read-only home must not hide it
    return verdict


# The most of a try's SQL progress.json keeps: what the reader reads at most (a longer
# text is refused unread). Fourteen exercises' latest and passing tries stay far below
# learner.MAX_FILE_BYTES, past which the whole file would be set aside on the next read.
MAX_STORED_SQL = MAX_CHARS


def stored_sql(sql: object) -> str:
    """The learner's SQL as progress.json keeps it: text (anything else, such as
    None, as no text), cut to MAX_STORED_SQL characters with "…" where it was cut."""
    if not isinstance(sql, str):
        return ""
    return sql if len(sql) <= MAX_STORED_SQL else sql[: MAX_STORED_SQL - 1] + "…"


def record(verdict: Verdict, sql: str) -> None:
    """Keep the verdict and the SQL it judged (`stored_sql`) under progress.json's
    key for its exercise. A pass is never replaced by a later failed try: the
    latest try is kept beside it, and the passing SQL under "passed_sql" with the
    passing verdict under "passed_verdict". Only a passing verdict sets "passed"."""
    kept = stored_sql(sql)

    def edit(data: dict) -> None:
        entry = data.get(verdict.exercise, {})
        this_try = {**verdict.record(), "sql": kept}
        entry["latest"] = this_try
        if verdict.passed:
            entry.update(passed=True, passed_sql=kept, passed_verdict=this_try)
        entry.setdefault("passed", False)
        data[verdict.exercise] = entry

    learner.change(progress_file.NAME, edit, progress_file.check)


def entries() -> dict[str, progress_file.ProgressEntry]:
    """The learner's progress, checked: a file that fails the check is moved aside (learner.load)."""
    return progress_file.entries(learner.load(progress_file.NAME, progress_file.check))


def last_sql(key: str) -> str | None:
    """The SQL the learner last checked for this exercise, or None."""
    entry = entries().get(key)
    return entry.latest.sql or None if entry and entry.latest else None


def done() -> dict[str, bool]:
    """Each exercise's key and whether the learner has passed it."""
    found = entries()
    return {key: key in found and found[key].done for key in EXERCISES}
