-- exercise/cluster_fingerprint.sql: LAB HELPER. What a learner's statement must
-- never change, cluster-wide: every role with its attributes and its defaults
-- (pg_db_role_setting, per database or for all), every database, the files at
-- the top level of the data directory, and the sessions of the checker's roles
-- still open. A test reads it before and after each hostile statement.
-- Safe: yes, read-only; pg_ls_dir needs a superuser (the course's own role).
-- Parameters: roles (text[], the learner's and the checker's role).

SELECT
  (SELECT string_agg(format('%s:%s%s%s%s%s:%s', r.rolname, r.rolsuper, r.rolcreaterole, r.rolcreatedb,
                            r.rolcanlogin, r.rolbypassrls, r.rolconnlimit), ',' ORDER BY r.rolname)
   FROM pg_roles AS r) AS roles,
  (SELECT string_agg(setting, ',' ORDER BY setting)
   FROM (SELECT format('%s@%s=%s', coalesce(r.rolname, '*'), coalesce(d.datname, '*'),
                       s.setconfig::text) AS setting
         FROM pg_db_role_setting AS s
         LEFT JOIN pg_roles AS r ON r.oid = s.setrole
         LEFT JOIN pg_database AS d ON d.oid = s.setdatabase) AS settings) AS role_settings,
  (SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_database) AS databases,
  (SELECT string_agg(name, ',' ORDER BY name) FROM pg_ls_dir('.') AS name) AS top_level_files,
  (SELECT count(*) FROM pg_stat_activity WHERE usename = ANY (:'roles'::text[])) AS role_sessions;
