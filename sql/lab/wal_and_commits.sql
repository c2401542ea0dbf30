-- lab/wal_and_commits.sql: LAB HELPER. Where the server's WAL has got to, in
-- bytes since its start, and how many transactions this database has committed,
-- with the two settings that decide what a commit costs. Read before and after a
-- run: the differences are the run's WAL bytes and commits.
-- Safe: yes, reads only. Run lab/flush_stats in the sessions that did the work
--   first, or xact_commit may lag up to a second.
-- Parameters: none.

SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint AS wal_bytes,
       (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()) AS commits,
       current_setting('synchronous_commit') AS synchronous_commit,
       current_setting('fsync') AS fsync;
