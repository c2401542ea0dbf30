-- lab/history_fill_day.sql: LAB HELPER. Fill one day of jobs_history with
-- count finished jobs spread over that day.
-- Safe: yes, inserts only.
-- Parameters: day (date), count (int).

INSERT INTO jobs_history (id, kind, payload, finished_at)
SELECT g, 'send_receipt', jsonb_build_object('order_id', g),
       :'day'::date + (g % 86400) * interval '1 second'
FROM generate_series(1, :count) AS g;
