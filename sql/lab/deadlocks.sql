-- lab/deadlocks.sql: LAB HELPER. How many deadlocks the server has detected
-- in this database since its statistics were last reset. A backend reports
-- its count when its transaction ends (at most a second late), and at exit.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT deadlocks FROM pg_stat_database WHERE datname = current_database();
