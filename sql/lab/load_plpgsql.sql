-- lab/load_plpgsql.sql: LAB HELPER. An anonymous PL/pgSQL block that does nothing, so the
-- session loads the plpgsql library: a server still running after its program's files were
-- deleted (a removed clone's) fails here with "could not access file "plpgsql"".
-- Safe: yes, it reads and writes nothing.
-- Parameters: none.

DO $$ BEGIN NULL; END $$;
