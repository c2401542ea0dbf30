-- lab/flush_stats.sql: LAB HELPER. Ask this session to send its pending table
-- statistics (such as dead row counts) when this statement ends, instead of
-- up to a second later, so the next read of pg_stat_user_tables is current.
-- Safe: yes. PostgreSQL 15 or later.
-- Parameters: none.

SELECT pg_stat_force_next_flush();
