"""Record lesson 10's cleanup scaling runs: each batch form's buffers at its first,
middle and last batch, at ten times the lesson's 200,000 rows.

Where a batch's Seq Scan starts depends on the server (shared_buffers, the
version), so the lesson quotes runs from several: run this once per server
(the embedded one, with PGQ_DATA_DIR/PGQ_HOME as for any run, or another with
PGQ_DSN), restarting it with another shared_buffers between runs. Each run
replaces the stored run of the same version, shared_buffers and --held in
pgq_teach/data/cleanup_scaling.json, where the lesson reads them with
`operations.stored_scaling_runs()`.

    .venv/bin/python tools/record_cleanup_scaling.py [--rows 2000000] [--held]
"""

from __future__ import annotations

import argparse

from pgq_teach.databases import open_database
from pgq_teach.experiments import operations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="done jobs to delete")
    parser.add_argument("--held", action="store_true", help="hold a REPEATABLE READ snapshot open meanwhile")
    args = parser.parse_args()
    db = open_database("record-cleanup-scaling", reset=True)
    result = operations.cleanup_scaling(db, rows=args.rows, batch=5_000, held=args.held)
    print(result.summary())
    try:
        stored = operations.stored_scaling_runs()
    except FileNotFoundError:
        stored = []
    kept = [r for r in stored if r.label() != result.label()]
    print(f"stored in {operations.store_scaling_runs([*kept, result])}")


if __name__ == "__main__":
    main()
