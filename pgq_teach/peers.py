"""A peer to measure against: PgQueuer (asyncpg), run the way its README
runs it, with its defaults, only when the optional `bench` extra is installed
(pip install -e '.[bench]'). Imported by pgq_teach.bench only then."""

from __future__ import annotations

import asyncio
import time

from psycopg.conninfo import conninfo_to_dict

from .databases import Database
from .statements import run_one

KIND = "noop"
CHUNK = 10_000  # jobs per PgQueuer enqueue call


async def _drain(db: Database, jobs: int, batch: int) -> tuple[float, list[int]]:
    import asyncpg
    from pgqueuer import AsyncpgDriver, QueueManager
    from pgqueuer.queries import Queries
    from pgqueuer.types import QueueExecutionMode

    parts = conninfo_to_dict(db.dsn)
    conn = await asyncpg.connect(
        host=parts.get("host"),
        port=int(parts.get("port") or 5432),
        user=parts.get("user"),
        password=parts.get("password"),
        database=parts.get("dbname"),
    )
    try:
        queries = Queries(AsyncpgDriver(conn))
        await queries.install()
        for low in range(0, jobs, CHUNK):
            n = min(CHUNK, jobs - low)
            await queries.enqueue([KIND] * n, [None] * n, [0] * n)
        manager = QueueManager(queries)
        seen: list[int] = []

        @manager.entrypoint(KIND)
        async def noop(job) -> None:
            seen.append(int(job.id))

        began = time.perf_counter()
        await manager.run(batch_size=batch, mode=QueueExecutionMode.drain)
        return time.perf_counter() - began, seen
    finally:
        await conn.close()


def pgqueuer_run(db: Database, jobs: int, batch: int) -> tuple[float, list[int], int]:
    """Seconds to drain `jobs` no-op jobs at `batch`, the job ids its handler
    saw, and how many jobs its queue table still holds."""
    took, seen = asyncio.run(_drain(db, jobs, batch))
    with db.connection() as conn:
        left = run_one(conn, "lab/bench_pgqueuer_left")[0]
    return took, seen, left
