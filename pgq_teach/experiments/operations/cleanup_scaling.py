"""Lesson 10: does a cleanup batch cost the same at the end of a run as at its
start? Two ways to pick a batch, each run over the same done jobs with autovacuum
off: `cleanup_done.sql`'s keyset (`id > :after ORDER BY id LIMIT`, what
`queue.cleanup` runs) and `teaching/cleanup_from_first_page.sql` (the same
batch with no keyset, its LIMIT fed by a Seq Scan). Each samples the buffers of
its first, middle and last full batch under EXPLAIN (ANALYZE, BUFFERS), rolled
back, and times the whole run. Where the Seq Scan starts depends on
shared_buffers (a scan is synchronized only on a table over a quarter of it), so
the lesson quotes runs stored from more than one server
(`tools/record_cleanup_scaling.py`)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ... import checks, queue, tables
from ...databases import Database
from ...guide import GuideFigure
from ...statements import explain_analyze, run, run_one
from ..bloat import IdleTransaction
from ..results import Comparison, Progress, Result, finish, tell
from .autovacuum import DEFAULTS
from .cleanup import fresh_done_jobs, statement_batches
from .rules import GUIDE_CLEANUP

STORED_SCALING_RUNS = Path(__file__).resolve().parents[2] / "data" / "cleanup_scaling.json"

# the two ways to pick a batch: (how the lesson names it, the statement)
FORMS = {
    "keyset": ("keyset, id > :after ORDER BY id (cleanup_done.sql)", "cleanup_done"),
    "first_page": ("no keyset, LIMIT over a Seq Scan", "teaching/cleanup_from_first_page"),
}


@dataclass
class FormRun:
    """One form's run over every done job (a part of `CleanupScaling`, not a result)."""

    form: str
    rows: int
    batches: int
    elapsed_s: float
    longest_batch_ms: float
    # (batch number, buffers that batch touched): the first, middle and last full batch
    samples: list[tuple[int, int]] = field(default_factory=list)

    @property
    def growth(self) -> float:
        """The last sampled batch's buffers over the first's: 1 is flat."""
        return self.samples[-1][1] / max(1, self.samples[0][1])


@dataclass(kw_only=True)
class CleanupScaling(Result):
    rows: int
    batch: int
    shared_buffers: str
    table_pages: int
    synchronized_above_pages: int  # a quarter of shared_buffers: a bigger table's Seq Scans are synchronized
    held: bool  # a REPEATABLE READ snapshot was open through both runs, so nothing could be pruned
    runs: list[FormRun] = field(default_factory=list)
    recorded_on: str = ""
    guide: GuideFigure = GUIDE_CLEANUP

    def run(self, form: str) -> FormRun:
        return next(r for r in self.runs if r.form == form)

    @property
    def synchronized(self) -> bool:
        return self.table_pages > self.synchronized_above_pages

    def label(self) -> str:
        """The configuration in a few words: version, shared_buffers, held or not."""
        return f"PostgreSQL {self.server_version}, shared_buffers {self.shared_buffers}" + (
            ", a snapshot held" if self.held else ""
        )

    def comparison(self) -> list[Comparison]:
        return [
            (f"{FORMS[r.form][0]}: batch {n:,}, buffers", None, buffers, None)
            for r in self.runs
            for n, buffers in r.samples
        ]

    def summary(self) -> str:
        lines = [
            f"{self.rows:,} done jobs deleted in batches of {self.batch:,}, {self.label()}"
            + self.stopped_note
            + ":",
            f"  jobs: {tables.count(self.table_pages, 'page')}; Seq Scans are synchronized above "
            f"{tables.count(self.synchronized_above_pages, 'page')} (a quarter of shared_buffers): "
            + ("yes" if self.synchronized else "no"),
        ]
        for r in self.runs:
            sampled = ", ".join(f"batch {n:,}: {b:,}" for n, b in r.samples)
            lines.append(
                f"  {FORMS[r.form][0]}: {tables.duration(r.elapsed_s)} for "
                f"{tables.count(r.batches, 'batch', many='batches')}, longest "
                f"{tables.duration(r.longest_batch_ms / 1000)}; buffers {sampled} "
                f"(last/first {r.growth:.1f}x)"
            )
        return "\n".join(lines + self.footer())


def batch_buffers(conn, form: str, batch: int, after: int) -> int:
    """Buffers the form's next batch touches, the deletes included (run once, rolled back)."""
    params = {"batch": batch, "after": after} if form == "keyset" else {"batch": batch}
    top = explain_analyze(conn, FORMS[form][1], params)
    return int(top["Shared Hit Blocks"] + top["Shared Read Blocks"])


def run_form(conn, form: str, rows: int, batch: int) -> FormRun:
    """Delete every done job with one form, timing each batch and sampling the
    buffers of the first, middle and last full batch just before it runs."""
    full = rows // batch
    sample_at = sorted({1, max(1, full // 2), full})
    samples: list[tuple[int, int]] = []
    times: list[float] = []
    after, n = 0, 1
    loop = (
        queue.cleanup_batches(conn, batch)
        if form == "keyset"
        else statement_batches(conn, FORMS["first_page"][1], batch)
    )
    while True:
        if n in sample_at:
            samples.append((n, batch_buffers(conn, form, batch, after)))
        started = time.perf_counter()
        step = next(loop, None)
        if step is None:
            break
        times.append(time.perf_counter() - started)
        after = step[1]
        n += 1
    # the sampling's own EXPLAINs are left out of the time
    return FormRun(form, rows, len(times), sum(times), max(times) * 1000, samples)


def cleanup_scaling(
    db: Database,
    *,
    rows: int = 200_000,
    batch: int = 5_000,
    held: bool = False,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> CleanupScaling:
    """Delete `rows` done jobs with each form in turn, from the same starting table."""
    checks.whole_number("rows", rows, 1_000, 5_000_000)
    checks.whole_number("batch", batch, 1, rows)
    runs: list[FormRun] = []
    pages = synchronized_above = 0
    with db.connection() as conn:
        run(conn, "lab/jobs_autovacuum", {"enabled": False, "scale_factor": 0.2, "threshold": 50})
        try:
            for n, form in enumerate(FORMS):
                if stop is not None and stop.is_set():
                    break
                fresh_done_jobs(conn, rows)
                pages, synchronized_above, _ = run_one(conn, "lab/seqscan_sync_cutoff")
                holder = IdleTransaction(db) if held else None
                if holder is not None:
                    holder.open()
                try:
                    runs.append(run_form(conn, form, rows, batch))
                finally:
                    if holder is not None:
                        holder.close()
                tell(progress, n + 1, len(FORMS))
        finally:
            run(conn, "lab/reset_jobs")
            run(conn, "lab/jobs_autovacuum", {"enabled": True, **DEFAULTS})
        shared_buffers = run_one(conn, "lab/shared_buffers")[0]
    return finish(
        CleanupScaling,
        db,
        rows=rows,
        batch=batch,
        shared_buffers=shared_buffers,
        table_pages=pages,
        synchronized_above_pages=synchronized_above,
        held=held,
        runs=runs,
        stopped=len(runs) < len(FORMS),
    )


def store_scaling_runs(results: list[CleanupScaling], path: Path = STORED_SCALING_RUNS) -> Path:
    """Keep runs' measurements as JSON (what tools/record_cleanup_scaling.py does)."""
    today = datetime.now(timezone.utc).date().isoformat()
    stored = []
    for result in results:
        fields = asdict(result)
        fields.pop("guide")
        fields.pop("guess")
        fields["recorded_on"] = fields["recorded_on"] or today
        for r in fields["runs"]:
            r["elapsed_s"], r["longest_batch_ms"] = round(r["elapsed_s"], 2), round(r["longest_batch_ms"], 1)
        stored.append(fields)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(stored, indent=1) + "\n")
    return path


def stored_scaling_runs(path: Path = STORED_SCALING_RUNS) -> list[CleanupScaling]:
    """The stored runs, as measured when they were recorded."""
    results = []
    for fields in json.loads(path.read_text()):
        fields["runs"] = [
            FormRun(**{**r, "samples": [tuple(s) for s in r["samples"]]}) for r in fields["runs"]
        ]
        results.append(CleanupScaling(**fields))
    return results
