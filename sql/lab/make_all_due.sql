-- lab/make_all_due.sql: LAB HELPER. Bring every waiting ready job's run_at
-- forward to now, as if its backoff had passed: lets a lab skip the wait.
-- Safe: NO outside a lesson's own database.
-- Parameters: none.

UPDATE jobs SET run_at = now() WHERE status = 'ready' AND run_at > now();
