-- exercise/lessons_fingerprint.sql: LAB HELPER. What nothing typed into "Your turn" may
-- change on the lessons' server, which never runs the learner's SQL: its roles with their
-- attributes and defaults, every setting not at its default, its databases, the sessions
-- and locks of everyone but the reader, and when its postmaster started (a crash and
-- restart changes it). A test reads it before and after each hostile check.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT
  (SELECT string_agg(format('%s:%s%s%s%s%s:%s', r.rolname, r.rolsuper, r.rolcreaterole, r.rolcreatedb,
                            r.rolcanlogin, r.rolbypassrls, r.rolconnlimit), ',' ORDER BY r.rolname)
   FROM pg_roles AS r) AS roles,
  (SELECT string_agg(format('%s/%s=%s', s.setrole, s.setdatabase, s.setconfig::text), ','
                     ORDER BY s.setrole, s.setdatabase)
   FROM pg_db_role_setting AS s) AS role_settings,
  (SELECT string_agg(format('%s=%s', name, setting), ',' ORDER BY name)
   FROM pg_settings WHERE source NOT IN ('default', 'client', 'session')) AS settings,
  (SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_database) AS databases,
  (SELECT string_agg(format('%s:%s:%s', usename, datname, backend_type), ',' ORDER BY usename, datname, backend_type)
   FROM pg_stat_activity
   WHERE pid <> pg_backend_pid() AND backend_type = 'client backend') AS sessions,
  (SELECT count(*) FROM pg_locks WHERE pid IS DISTINCT FROM pg_backend_pid()) AS others_locks,
  pg_postmaster_start_time() AS started;
