-- exercise/session_kinds.sql: what kind of process each of these pids is
-- (client backend, autovacuum worker, ...), for lesson 09's checker. An
-- autovacuum worker visiting the scratch database shows a backend_xmin to
-- every role, and no learner's query can tell it apart (a role sees no other
-- role's backend_type), yet it holds no other VACUUM back: the checker does
-- not count it against the learner.
-- Safe: yes, read-only. Run as the database's owner, never as the learner;
--   without pg_read_all_stats the kinds of other roles' sessions read as NULL.
-- Parameters: pids (int[]).

SELECT pid, backend_type
FROM pg_stat_activity
WHERE pid = ANY(:'pids'::int[]);
