"""What lesson 10d's labs stand beside. The guide has no section on schema changes,
lock timeouts or migrations: its one relevant rule is about leases (a slow worker is
not a dead one); the rest comes from PostgreSQL's own documentation, cited where used."""

from __future__ import annotations

from ..results import advice

GUIDE_LEASES = advice(
    "why completion must check attempts",
    "a slow worker is not a dead one: if A is still busy when its lease expires, B can claim the same "
    "job, and two workers run it",
)
GUIDE_SILENT = (
    "the guide is silent on schema changes and lock_timeout; the sources here are PostgreSQL's "
    "ALTER TABLE page (Notes) and CREATE INDEX page (Building Indexes Concurrently)"
)
GUIDE_DOCS = advice("none on schema changes", "silent; see PostgreSQL's ALTER TABLE page, Notes")
