-- lab/seed_done_jobs.sql: LAB HELPER. Add many finished jobs in one statement,
-- the history a real queue piles up. With distinct true each gets its own
-- run_at a microsecond apart (as the guide built its data); with false they
-- all share one run_at, so every (status, run_at) key is the same.
-- Safe: yes, inserts only.
-- Parameters: count (int), distinct (boolean).

INSERT INTO jobs (kind, payload, status, run_at, attempts)
SELECT 'send_receipt', jsonb_build_object('n', g), 'done',
       CASE WHEN :distinct THEN now() - interval '1 day' + g * interval '1 microsecond'
            ELSE now() - interval '1 day' END,
       1
FROM generate_series(1, :count) AS g;
