-- admin/catalog_mark.sql: a mark of this database's schema and settings: the
-- newest row (highest xmin) and the number of rows across the catalogs DDL
-- writes (tables and their columns, indexes, constraints, triggers, functions,
-- types, schemas, extensions, dependencies) and the planner's statistics
-- (ANALYZE's, which a reused database would otherwise hand to the next test),
-- and the database's oid, own row and settings (ALTER DATABASE). A CREATE or
-- ALTER adds or rewrites a row, so the newest changes; a DROP removes rows, so
-- the count does. Taken after the tests empty a database they reuse and
-- compared before the next test: a different mark means a test changed the
-- schema, and the database is made anew.
-- pg_class is compared by what it says of each relation instead: a TRUNCATE
-- (a test's own, or the emptying), REINDEX or VACUUM FULL rewrites a table's
-- row with a new file and a new xmin but leaves the schema as it was, and made
-- most reused databases look changed (13 of 15 fresh copies in test_queue and
-- test_retries). Its file, size and freezing columns are left out of it.
-- Not looked at, as the course makes none: enums, comments, large objects,
-- publications, default privileges, per-role settings in this database.
-- Safe: yes, read-only.
-- Parameters: none.

WITH catalog_rows AS (
  SELECT xmin FROM pg_attribute
  UNION ALL SELECT xmin FROM pg_attrdef
  UNION ALL SELECT xmin FROM pg_index
  UNION ALL SELECT xmin FROM pg_constraint
  UNION ALL SELECT xmin FROM pg_trigger
  UNION ALL SELECT xmin FROM pg_proc
  UNION ALL SELECT xmin FROM pg_type
  UNION ALL SELECT xmin FROM pg_namespace
  UNION ALL SELECT xmin FROM pg_extension
  UNION ALL SELECT xmin FROM pg_depend
  UNION ALL SELECT xmin FROM pg_rewrite
  UNION ALL SELECT xmin FROM pg_sequence
  UNION ALL SELECT xmin FROM pg_policy
  UNION ALL SELECT xmin FROM pg_inherits
  UNION ALL SELECT xmin FROM pg_statistic
  UNION ALL SELECT xmin FROM pg_statistic_ext_data
)
SELECT (SELECT max(xmin::text::bigint) FROM catalog_rows) AS newest,
       (SELECT count(*) FROM catalog_rows) AS rows,
       (SELECT md5(string_agg(row(oid, relname, relnamespace, reltype, reloftype, relowner, relam,
                                  reltablespace, reltoastrelid, relhasindex, relisshared,
                                  relpersistence, relkind, relnatts, relchecks, relhasrules,
                                  relhastriggers, relhassubclass, relrowsecurity,
                                  relforcerowsecurity, relreplident, relispartition, relacl,
                                  reloptions, relpartbound)::text, ',' ORDER BY oid))
          FROM pg_class) AS relations,
       (SELECT oid FROM pg_database WHERE datname = current_database()) AS database_oid,
       (SELECT xmin::text FROM pg_database WHERE datname = current_database()) AS database_row,
       (SELECT setconfig::text FROM pg_db_role_setting
         WHERE setrole = 0
           AND setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
       ) AS settings;
