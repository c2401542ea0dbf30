-- admin/empty_course_tables.sql: empty every table in the public schema and
-- restart their identity columns, so a database the tests reuse reads as a
-- fresh copy of their template would (admin/reset_statistics.sql follows).
-- Safe: NO: it deletes every row in the database's own tables. Used by tests
--   only, on databases they made (pgq_...).
-- Parameters: none.

DO $$
DECLARE
  tables text := (SELECT string_agg(oid::regclass::text, ', ')
                  FROM pg_class
                  WHERE relkind IN ('r', 'p') AND relnamespace = 'public'::regnamespace);
BEGIN
  IF tables IS NOT NULL THEN
    EXECUTE 'TRUNCATE ' || tables || ' RESTART IDENTITY CASCADE';
  END IF;
END
$$;
