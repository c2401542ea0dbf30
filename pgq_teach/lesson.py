"""What a lesson notebook calls first: its own database, freshly reset, and
the one line that says which PostgreSQL it is talking to."""

from __future__ import annotations

from .databases import Database, open_database


def start(slug: str, *, reset: bool = True) -> Database:
    """Open the lesson's own database (reset by default, so reruns start
    clean) with the course's tables, and print where it lives."""
    db = open_database(slug, reset=reset)
    print(db.server.line())
    print(f"lesson database: {db.name}")
    return db
