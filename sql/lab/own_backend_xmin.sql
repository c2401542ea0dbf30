-- lab/own_backend_xmin.sql: LAB HELPER. The xmin of the snapshot this very
-- statement runs with, as pg_stat_activity shows it: the oldest transaction
-- still running anywhere on the server when the snapshot was taken, in any
-- database (PostgreSQL's GetSnapshotData, src/backend/storage/ipc/procarray.c).
-- Safe: yes, read-only.
-- Parameters: none.

SELECT backend_xmin FROM pg_stat_activity WHERE pid = pg_backend_pid();
