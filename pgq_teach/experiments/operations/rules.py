"""The guide's operations rules that lesson 10's labs stand beside. They come from
the guide's prose, not its numbered figures (`results.advice`)."""

from __future__ import annotations

from ..results import advice

SECTION = "operations"
GUIDE_CLEANUP = advice(
    SECTION, "delete done jobs in batches, e.g. 5,000 at a time; small batches keep each transaction short"
)
GUIDE_PARTITION = advice(
    SECTION, "dropping a whole partition avoids the VACUUM cost of a bulk DELETE (the partitioning docs)"
)
GUIDE_TIMEOUT = advice(
    SECTION, "ALTER ROLE queue_worker SET idle_in_transaction_session_timeout = '1min' (default 0, off)"
)
GUIDE_AUTOVACUUM = advice(
    SECTION,
    "ALTER TABLE jobs SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000)",
)
