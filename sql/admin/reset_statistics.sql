-- admin/reset_statistics.sql: zero this database's statistics counters
-- (pg_stat_user_tables, pg_stat_database), as on a fresh copy. Run after
-- lab/flush_stats.sql in a transaction of its own, so the counts this session
-- still holds (TRUNCATE rebuilding the indexes scans each table) land before
-- the reset, not after it. Needs a superuser, as the tests' server has.
-- Safe: yes for the data; the counters are gone. Used by tests only.
-- Parameters: none.

SELECT pg_stat_reset();
