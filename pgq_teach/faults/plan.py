"""The load run's failure plan: which handler calls raise, decided by a stable
hash so every worker process and the judge agree without talking."""

from __future__ import annotations

import hashlib


def planned_failure(seed: int, n: int, attempt: int, rate: float) -> bool:
    """Whether the load run's handler raises for job number n on this attempt.
    A stable hash, not random(), so the plan is the same in every process."""
    digest = hashlib.blake2b(f"{seed}:{n}:{attempt}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") < rate * 2**64


def planned_error(n: int, attempt: int) -> str:
    return f"planned failure of job {n} on attempt {attempt}"


def planned_result(seed: int, n: int, rate: float, max_attempts: int) -> tuple[str, int]:
    """(status, attempts) job n must end with, if the queue keeps its promises."""
    for attempt in range(1, max_attempts + 1):
        if not planned_failure(seed, n, attempt, rate):
            return "done", attempt
    return "dead", max_attempts
