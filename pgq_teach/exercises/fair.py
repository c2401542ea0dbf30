"""The fair claim check (lesson 10b's Your turn): the learner's claim meets a tenant's flood.

Each check stages scenes drawn afresh: a flood tenant whose many jobs are the oldest, a few
small tenants with one to three due jobs each (a tenant's oldest never its lowest id), and a
tenant whose only job is not due yet, under names, attempts, fence tokens, a lease and a batch
drawn each time. One claim with a batch larger than the tenants with due work must give every
one of them a job, no tenant a second before each has its first, each tenant its oldest due
jobs, and nothing not yet due; with a batch smaller than the tenants it must take `batch` jobs
of as many tenants. Each claimed job must be marked as the taught claim marks it (running, the
lease it was given, attempts + 1, a new fence token). Last, a claim with a batch smaller than
the tenants runs in a transaction left open: it must hold locked only the jobs it returned (a
row locked and left out stays hidden from every other claim until the transaction ends), and a
second claim meanwhile must take other jobs, and not wait for the first's locks.

A claim PostgreSQL refuses to read (FOR UPDATE with DISTINCT) is refused with a hint that
says how the lesson's statement gets round it.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from psycopg.rows import dict_row

from .. import seeding
from ..experiments.fairness import GUIDE_NO_FAIRNESS
from ..statements import run, run_one
from .claim import LearnerClaimer, wait_for_lock_or_end
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, parse, stage
from .scenes import draw, falls_due, fence_tokens
from .verdict import Evidence, Verdict

KIND = "webhook"
DISTINCT_HINT = (
    "PostgreSQL refuses FOR UPDATE with DISTINCT: find the tenants with due work first, unlocked, "
    "then lock each one's oldest due job in a LATERAL subquery with FOR UPDATE SKIP LOCKED."
)


@dataclass
class FairScene:
    """One staged scene and what one claim took from it."""

    batch: int
    lease_s: int
    due_by_tenant: dict[str, list[int]]  # each tenant's due jobs, oldest first
    not_due: int  # the job of the tenant with nothing due yet
    got: list[dict]  # the claimed jobs' rows, read back after the claim
    staged: dict[int, tuple[int, int]]  # id -> (attempts, fence_token) before the claim

    @property
    def tenants_due(self) -> set[str]:
        return set(self.due_by_tenant)

    def counts(self) -> Counter:
        return Counter(row["tenant"] for row in self.got)


def stage_scene(scratch: Scratch, learner: LearnerSQL, rng, *, wide: bool) -> FairScene:
    """Stage the flood and the small tenants, claim once as the learner, read the rows back.
    `wide`: a batch larger than the tenants with due work (else smaller)."""
    flood = f"shop-{rng.randrange(100, 999)}"
    smalls = [f"store-{n}" for n in rng.sample(range(10, 99), rng.randrange(3, 6))]
    plan = [flood] * rng.randrange(8, 14) + [t for t in smalls for _ in range(rng.randrange(1, 4))]
    ids = list(range(1, len(plan) + 2))  # the last: the not-due tenant's
    not_due = ids[-1]
    rng.shuffle(plan)  # ids in no tenant's order
    ages: dict[int, float] = {}
    flood_ids = [i for i, t in zip(ids[:-1], plan, strict=True) if t == flood]
    small_ids = [i for i, t in zip(ids[:-1], plan, strict=True) if t != flood]
    for rank, job_id in enumerate(flood_ids + rng.sample(small_ids, len(small_ids))):
        ages[job_id] = -(86_400 - 60 * rank)  # the flood's all older than any small tenant's
    ages[not_due] = rng.randrange(600, 86_400)
    tries = [rng.randrange(0, 4) for _ in ids]
    staged = dict(zip(ids, zip(tries, fence_tokens(rng, len(ids)), strict=True), strict=True))
    tenants_due = len(smalls) + 1
    batch = tenants_due + rng.randrange(1, 4) if wide else rng.randrange(2, tenants_due)
    lease_s = rng.choice([s for s in range(61, 3600) if s != 300])
    with scratch.db.connection() as owner, scratch.connect() as conn:
        seeding.reset_and_seed(owner, KIND, len(ids))
        for job_id, tenant in zip(ids, [*plan, f"later-{rng.randrange(10, 99)}"], strict=True):
            run(owner, "exercise/stage_tenant", {"id": job_id, "tenant": tenant})
            stage(owner, [job_id], "ready", *staged[job_id], None)
        falls_due(owner, {i: ages[i] for i in ids})
        got = [
            LearnerClaimer.job_id(r)
            for r in execute(conn, learner, {"batch": batch, "lease": f"{lease_s} seconds"}).fetchall()
        ]
        rows = [run(owner, "lab/job_row", {"id": i}, row_factory=dict_row).fetchone() for i in got]
        for row in rows:
            if row:
                row["lease_left_s"] = run_one(owner, "lab/lease_left", {"id": row["id"]})[2]
    due_by_tenant: dict[str, list[int]] = {}
    for job_id in sorted(ages, key=lambda i: ages[i]):
        if job_id != not_due:
            due_by_tenant.setdefault(plan[job_id - 1], []).append(job_id)
    return FairScene(batch, lease_s, due_by_tenant, not_due, [r for r in rows if r], staged)


def scene_evidence(scene: FairScene) -> list[Evidence]:
    counts = scene.counts()
    want = min(scene.batch, len(scene.tenants_due))
    took = f"{len(scene.got)} jobs of batch {scene.batch}: " + ", ".join(
        f"{t} {n}" for t, n in sorted(counts.items())
    )
    every = set(counts) >= scene.tenants_due if scene.batch >= len(scene.tenants_due) else len(counts) == want
    rounds = max(counts.values(), default=0) <= 1 + min((counts[t] for t in scene.tenants_due), default=0)
    oldest = all(
        sorted(r["id"] for r in scene.got if r["tenant"] == t) == sorted(scene.due_by_tenant.get(t, [])[:n])
        for t, n in counts.items()
    )
    marked = all(
        r["status"] == "running"
        and r["attempts"] == scene.staged[r["id"]][0] + 1
        and r["fence_token"] > scene.staged[r["id"]][1]
        and r["lease_left_s"] is not None
        and scene.lease_s - 30 <= r["lease_left_s"] <= scene.lease_s
        for r in scene.got
    )
    return [
        Evidence(
            f"every tenant with due work got a job (batch {scene.batch})",
            took,
            every and len(scene.got) >= want,
        ),
        Evidence("no tenant got a second job before every tenant had its first", took, rounds),
        Evidence(
            "each tenant's jobs taken oldest first", "yes" if oldest else "no: a newer job went first", oldest
        ),
        Evidence(
            "a job not due yet left alone",
            "taken" if scene.not_due in {r["id"] for r in scene.got} else "left",
            scene.not_due not in {r["id"] for r in scene.got},
        ),
        Evidence(
            "marked running, attempts + 1, a new fence token, the lease it is given",
            "yes" if marked else "no",
            marked,
        ),
    ]


@dataclass
class OpenClaim:
    """A claim left open, and a second claim meanwhile."""

    took: set[int]  # the ids the first claim returned
    held: int  # ready rows the first held locked without returning them
    during: set[int]  # the ids the second claim took
    waited: bool  # whether the second waited for the first's locks


def second_claim(scratch: Scratch, learner: LearnerSQL, rng) -> OpenClaim:
    """A claim of 3 jobs among 4 tenants, its transaction left open: what it holds locked
    beyond what it returned, then a second claim meanwhile."""
    values = {"batch": 3, "lease": "5 minutes"}
    with scratch.db.connection() as owner:
        seeding.reset_and_seed(owner, KIND, 12)
        for job_id in range(1, 13):
            run(owner, "exercise/stage_tenant", {"id": job_id, "tenant": f"t{job_id % 4}"})
        with scratch.connect(autocommit=False) as first, scratch.connect() as second:
            took = {LearnerClaimer.job_id(r) for r in execute(first, learner, values).fetchall()}
            with scratch.connect() as looker:  # autocommit: its own locks go with its statement
                held = run_one(looker, "exercise/locked_ready")[0] - len(took)
            with ThreadPoolExecutor(1) as pool:
                later = pool.submit(execute, second, learner, values)
                try:
                    waited = wait_for_lock_or_end(owner, second.info.backend_pid, later)
                finally:
                    first.commit()
                during = {LearnerClaimer.job_id(r) for r in later.result().fetchall()}
    return OpenClaim(took, held, during, waited)


def check_fair_claim(scratch, learner, *, exercise: str, progress=None, stop=None) -> Verdict:
    try:
        with scratch.connect() as conn:
            parse(conn, learner)
    except Refused as exc:
        if "DISTINCT" in str(exc) and "FOR UPDATE" in str(exc):
            raise Refused(str(exc), hint=DISTINCT_HINT) from exc
        raise
    rng = draw()
    scenes = [stage_scene(scratch, learner, rng, wide=True), stage_scene(scratch, learner, rng, wide=False)]
    evidence = scene_evidence(scenes[0]) + scene_evidence(scenes[1])[:1]
    open_claim = second_claim(scratch, learner, rng)
    took, during, waited = open_claim.took, open_claim.during, open_claim.waited
    evidence.append(
        Evidence(
            "locks only the jobs it returns (batch 3 of 4 tenants, its transaction open)",
            f"{open_claim.held} more rows held locked than the {len(took)} returned",
            open_claim.held == 0 and bool(took),
        )
    )
    evidence.append(
        Evidence(
            "a second claim, while the first is open, takes other jobs without waiting (SKIP LOCKED)",
            "it waited" if waited else f"{len(during & took)} taken twice",
            not waited and not (during & took) and bool(during),
        )
    )
    failed = {e.what.split(" (")[0] for e in evidence if e.ok is False}
    return Verdict.from_evidence(
        exercise,
        evidence,
        _hint(failed),
        passed_headline="every tenant got its oldest due job, none a second before the rest",
        passed_hint=(
            "correct: a flood now costs the other tenants a few rounds, not its whole drain. The "
            "library's fair claim adds a cap on each tenant's running jobs, held across every worker."
        ),
        server_version=scratch.db.server.version,
        guide=GUIDE_NO_FAIRNESS,
    )


def _hint(failed: set[str]) -> str:
    if (
        "every tenant with due work got a job" in failed
        or "no tenant got a second job before every tenant had its first" in failed
    ):
        return (
            "the flood's oldest jobs filled the batch: ordering by run_at alone serves the oldest "
            "tenant first. Take each tenant's oldest due job (one per tenant), then the oldest of those."
        )
    if "each tenant's jobs taken oldest first" in failed:
        return "within a tenant, take its oldest due job first: ORDER BY run_at in the per-tenant subquery."
    if "a job not due yet left alone" in failed:
        return "a job whose run_at is still ahead is not due: keep run_at BETWEEN '-infinity' AND now()."
    if "marked running, attempts + 1, a new fence token, the lease it is given" in failed:
        return "mark each job as the taught claim does: status, attempts + 1, fence_token + 1 and the lease."
    if "locks only the jobs it returns" in failed:
        return (
            "the LIMIT came after a sort of every tenant's locked row, so each tenant's row was locked "
            "and those left out stay locked until commit: bring the tenants in already ordered by their "
            "oldest due run_at (ORDER BY in the tenants' query) and put the LIMIT right above the LATERAL "
            "join, so it locks one tenant's row at a time and stops at :batch."
        )
    return "lock each tenant's job with FOR UPDATE SKIP LOCKED, so a second claim passes over it."
