-- lab/insert_job_with_status.sql: LAB HELPER. Try to add a job with a given
-- status, to ask the table which statuses it accepts; anything but ready,
-- running, done and dead is refused by its CHECK constraint (SQLSTATE 23514).
-- Safe: adds a job; lesson 00 runs it inside a transaction it rolls back.
-- Parameters: status (text).

INSERT INTO jobs (kind, payload, status) VALUES ('status_probe', '{}'::jsonb, :'status') RETURNING id;
