-- lab/seed_done_jobs.sql: LAB HELPER. Add many finished (done) jobs in one
-- statement, the rows cleanup exists to remove.
-- Safe: yes, inserts only.
-- Parameters: count (int).

INSERT INTO jobs (kind, payload, status, attempts)
SELECT 'send_receipt', jsonb_build_object('n', g), 'done', 1
FROM generate_series(1, :count) AS g;
