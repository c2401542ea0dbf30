"""The index (lesson 08): among 100,000 done jobs and 100 ready ones (guide
#14), the learner's CREATE INDEX runs, and the claim must read it in order:
`run_at` as the key column (first, or after status, which the claim fixes
with =), so the claim's ORDER BY run_at needs no Sort; a predicate on
status = 'ready', so the index holds only the rows the claim looks for and
stays tiny (judged with its size); and the claim's plan must use it.

Who runs what: the superuser seeds the table, then hands it to the checker
role (`sandbox.CHECKER_ROLE`, no superuser) with CREATE on the schema, which
CREATE INDEX needs. The learner's statement, already shown by its parse tree
to be a plain B-tree index on jobs that calls no function, runs as the
checker; then CREATE is taken back, and ANALYZE, the claim's EXPLAIN and the
size reads run as the checker too. The superuser never touches the table
again (revoking a right on the schema reads nothing the learner made)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pglast import ast
from pglast.enums import A_Expr_Kind, BoolExprType

from ..guide import figure
from ..statements import explain, run
from .learner_sql import LearnerSQL, Refused
from .sandbox import CHECKER_ROLE, CHECKER_TIMEOUT_S, Scratch, execute, parse
from .verdict import Evidence, Verdict

READY, DONE = 100, 100_000
GUIDE_SIZES = figure(14).values  # the guide's partial and full index sizes
SMALL_BYTES = 64 * 1024  # the guide's partial index is 16 kB here, a full one about 200 times that
KEY = "run_at"


def _column(node: Any) -> str | None:
    if isinstance(node, ast.TypeCast):  # status::text is the column itself
        node = node.arg
    if isinstance(node, ast.ColumnRef):
        last = (node.fields or (None,))[-1]
        return last.sval if isinstance(last, ast.String) else None
    return None


def _text(node: Any) -> str | None:
    if isinstance(node, ast.TypeCast):
        node = node.arg
    if isinstance(node, ast.A_Const) and isinstance(node.val, ast.String):
        return node.val.sval
    return None


def keeps_only_ready(where: Any) -> bool:
    """Whether the index's predicate (its parse tree) has status = 'ready' as
    one of its AND-ed conditions, however it is spelt: `status IN ('ready')`,
    `status::text = 'ready'`, `'ready' = status` (PostgreSQL reads each as
    status = 'ready')."""
    if isinstance(where, ast.BoolExpr) and where.boolop == BoolExprType.AND_EXPR:
        return any(keeps_only_ready(arg) for arg in where.args or ())
    if isinstance(where, ast.A_Expr) and where.kind == A_Expr_Kind.AEXPR_IN:
        items = where.rexpr if isinstance(where.rexpr, (list, tuple)) else ()
        return (
            [n.sval for n in where.name or ()] == ["="]
            and _column(where.lexpr) == "status"
            and [_text(item) for item in items] == ["ready"]
        )
    if not isinstance(where, ast.A_Expr) or where.kind != A_Expr_Kind.AEXPR_OP:
        return False
    if [n.sval for n in where.name or ()] != ["="]:
        return False
    sides = {_column(where.lexpr), _text(where.lexpr), _column(where.rexpr), _text(where.rexpr)}
    return {"status", "ready"} <= sides


def orders_by_run_at(keys: list[str]) -> bool:
    """Whether an index with these key columns hands the claim its rows in
    run_at order: run_at first, or after status, which the claim fixes with =."""
    return keys[:1] == [KEY] or keys[:2] == ["status", KEY]


def sorts(plan: list[str]) -> bool:
    """Whether the plan (EXPLAIN text) has a Sort node anywhere."""
    return any(line.strip().removeprefix("->").strip() in ("Sort", "Incremental Sort") for line in plan)


def check_index(scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None) -> Verdict:
    if not isinstance(learner.tree, ast.IndexStmt):
        raise Refused("this exercise runs one CREATE INDEX statement on jobs")
    if learner.tree.unique:
        raise Refused(
            "a UNIQUE index would refuse a second job due at the same instant: "
            "the claim's index is a plain one",
            hint="Drop UNIQUE: a batch enqueued in one statement gives many jobs the same run_at, and the "
            "index only has to hand them over in order.",
        )
    if learner.tree.indexIncludingParams:
        raise Refused(
            "INCLUDE copies those columns into every entry of the index, yet the claim reads the job's row "
            "anyway to lock and update it: index run_at alone",
            hint="Drop the INCLUDE clause: the claim locks and updates the job's row, so it reads the table "
            "anyway, and every copied payload makes the index bigger.",
        )
    with scratch.db.connection() as owner:  # the superuser's part ends before the learner's statement runs
        # The done rows are inserted done, as the lesson's own experiment does
        # (experiments/indexes.py), not marked done after: their ready versions would be dead
        # rows, and CREATE INDEX indexes a dead row that any snapshot in the database may still
        # see (an autovacuum's ANALYZE of another table, say). A loaded test run saw a right
        # answer's partial index hold an entry for every row that way, and fail the size check.
        # Autovacuum stays off on jobs: 100,000 inserts make it due for one (the insert threshold),
        # whose lock would hold up the learner's CREATE INDEX; the check's ANALYZE is the only one.
        run(owner, "lab/autovacuum_off")
        run(owner, "lab/seed_jobs", {"kind": "send_receipt", "count": READY})
        run(owner, "lab/seed_done_jobs", {"count": DONE, "distinct": True})
        run(owner, "exercise/drop_ready_index")
        # The course's other indexes (the primary key, the running and the beyond-FIFO ones) stay:
        # the learner's is the one that was not there before the statement.
        course = {row[0] for row in run(owner, "exercise/index_shape")}
        run(owner, "exercise/give_jobs_to_checker", idents={"role": CHECKER_ROLE})
    if progress:
        progress(1, 3)
    with scratch.connect_checker() as checker:
        try:
            parse(checker, learner)
            execute(checker, learner, {}, seconds=CHECKER_TIMEOUT_S)
        finally:  # the index is built (or not): the checker may create nothing more
            with scratch.db.connection() as owner:
                run(owner, "exercise/close_schema_to_checker", idents={"role": CHECKER_ROLE})
        run(checker, "lab/analyze_jobs")
        shape = {row[0]: row[1:] for row in run(checker, "exercise/index_shape")}
        plan = explain(checker, "claim", {"batch": 1, "lease": timedelta(minutes=5)})
    if progress:
        progress(3, 3)
    mine = {name: v for name, v in shape.items() if name not in course}
    scan = next((line.strip().lstrip("-> ").strip() for line in plan if " on jobs jobs_1" in line), "")
    used = [name for name in mine if f" using {name} " in f" {scan} "]
    size = sum(v[0] for v in mine.values())
    keys = [", ".join(v[1]) for v in mine.values()] or ["no index of yours"]
    ordered = bool(mine) and all(orders_by_run_at(v[1]) for v in mine.values())
    ready = keeps_only_ready(learner.tree.whereClause)
    predicate = next((v[2] for v in mine.values() if v[2]), None)
    sorted_in_plan = sorts(plan)
    evidence = [
        Evidence(
            f"{KEY} is the key the claim's ORDER BY reads (first, or after status)", "; ".join(keys), ordered
        ),
        Evidence("the claim's plan uses your index", scan or "no scan found", bool(used)),
        Evidence(
            "no Sort in the claim's plan (the index hands rows over in run_at order)",
            "a Sort reads and orders every ready row first" if sorted_in_plan else "none",
            not sorted_in_plan,
        ),
        Evidence(
            f"your index's size with {DONE:,} done and {READY} ready jobs",
            f"{size / 1024:,.0f} kB (the guide: {GUIDE_SIZES['partial_kb']} kB partial, "
            f"{GUIDE_SIZES['full_kb']:,} kB full); its WHERE: "
            + (predicate or "none, so every done job is in it")
            + ("" if ready or not predicate else ", not status = 'ready'"),
            size <= SMALL_BYTES and ready,
        ),
    ]
    return Verdict.from_evidence(
        exercise,
        evidence,
        _hint(ordered, ready, bool(used)),
        numbers={
            "bytes": size,
            "used": used,
            "keys": keys,
            "sorts": sorted_in_plan,
            "ready_predicate": ready,
        },
        passed_headline="the claim reads your index in run_at order, and it stays small",
        passed_hint="the claim reads your index in order, and it holds only the rows the claim looks for.",
        server_version=scratch.db.server.version,
        guide=figure(14),
    )


def _hint(ordered: bool, ready: bool, used: bool) -> str:
    if not ordered:
        return (
            "the claim orders by run_at: with run_at as the index's key the rows come out in that order, "
            "and the claim reads the first one instead of sorting every ready row."
        )
    if not ready:
        return (
            "it works, but it holds rows the claim never reads: a WHERE on the index, status = 'ready', "
            "keeps only the ready rows in it."
        )
    if not used:
        return (
            "the planner uses a partial index only when the claim's WHERE implies the index's predicate: "
            "status = 'ready', written as a literal."
        )
    return "the index is right, but the claim's plan still sorts or is large: check the key column and WHERE."
