-- lab/history_create.sql: LAB HELPER. A history table for finished jobs,
-- partitioned by day on finished_at, so a whole day can be dropped at once
-- (PostgreSQL's partitioning docs: dropping a partition avoids the VACUUM
-- cost of a bulk DELETE). Partitions are added with lab/history_partition.sql.
-- Safe: yes; creates a new table if missing.
-- Parameters: none.

CREATE TABLE IF NOT EXISTS jobs_history (
  id          bigint      NOT NULL,
  kind        text        NOT NULL,
  payload     jsonb       NOT NULL,
  finished_at timestamptz NOT NULL
) PARTITION BY RANGE (finished_at);
