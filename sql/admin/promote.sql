-- admin/promote.sql: promote a replica to a primary (pg_promote, PostgreSQL 12+), waiting until
-- it accepts writes; true once promoted. The same as `pg_ctl promote`.
-- Safe: on a replica you mean to promote; on a primary it raises "recovery is not in progress".
-- Parameters: wait_seconds (int).

SELECT pg_promote(true, :wait_seconds);
