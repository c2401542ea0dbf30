"""Record lesson 10's autovacuum lab with the server's default autovacuum_naptime (1min).

At the default naptime the launcher visits a database once a minute, so the lab
must churn for minutes to see more than one autovacuum: too long for the lesson's
Run All. This runs it once, on the embedded server (set PGQ_DATA_DIR/PGQ_HOME as
for any run), and stores the measurements in pgq_teach/data/, where the lesson
reads them with `operations.stored_autovacuum_run()`.

    .venv/bin/python tools/record_default_naptime_run.py [--churn-s 150]
"""

from __future__ import annotations

import argparse

from pgq_teach.databases import open_database
from pgq_teach.experiments import operations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--churn-s", type=float, default=150.0, help="seconds of churn per setting")
    args = parser.parse_args()
    db = open_database("record-default-naptime", reset=True)
    result = operations.autovacuum_per_table(
        db, base_rows=100_000, churn_s=args.churn_s, jobs_per_tick=200, naptime=operations.DEFAULT_NAPTIME
    )
    print(result.summary())
    print(f"stored in {operations.store_autovacuum_run(result)}")


if __name__ == "__main__":
    main()
