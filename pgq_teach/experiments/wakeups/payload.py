"""The payload limit: the server's own error for a payload of 8,000 bytes or more."""

from __future__ import annotations

from dataclasses import dataclass

from ... import checks
from ...databases import Database
from ...statements import run_one
from .listening import notify_in_one_transaction


@dataclass(frozen=True)
class PayloadResult:
    size: int
    accepted: bool
    sqlstate: str | None
    message: str | None


def block_size(db: Database) -> int:
    """The server's page size in bytes (compiled in; the payload limit derives from it)."""
    with db.connection() as conn:
        return run_one(conn, "lab/block_size")[0]


def payload_limit(db: Database, size: int = 8_000) -> PayloadResult:
    """Send a payload of `size` bytes; the server's verdict."""
    checks.whole_number("size (bytes)", size, 0, 1_000_000)
    refused = next((step for step in notify_in_one_transaction(db, ["x" * size]) if step.failed), None)
    if refused is not None:
        return PayloadResult(size, False, refused.sqlstate, refused.message)
    return PayloadResult(size, True, None, None)
