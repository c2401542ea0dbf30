-- lab/create_pgstattuple.sql: LAB HELPER. Install pgstattuple in this
-- database, for an exact count of live and dead row versions.
-- Safe: yes. Needs a superuser: pgstattuple is not a trusted extension.
-- Parameters: none.

CREATE EXTENSION IF NOT EXISTS pgstattuple;
