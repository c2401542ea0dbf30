-- lab/active_pids_of_role.sql: LAB HELPER. The sessions of one role that are running a
-- statement now, with that statement: a test of the checker finds the learner's busy session.
-- Safe: yes, read-only.
-- Parameters: role (text).

SELECT pid, query FROM pg_stat_activity WHERE usename = :'role' AND state = 'active' AND pid <> pg_backend_pid();
