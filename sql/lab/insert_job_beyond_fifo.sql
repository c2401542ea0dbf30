-- lab/insert_job_beyond_fifo.sql: LAB HELPER. Add one ready job with a
-- priority, a tenant and a unique key, to ask the table what it accepts (its
-- CHECKs) and what its unique index refuses, before enqueue takes them.
-- Safe: yes, inserts one job; tests only.
-- Parameters: kind (text), priority (int), tenant (text, NULL for none),
--   unique_key (text, NULL for none).

INSERT INTO jobs (kind, payload, priority, tenant, unique_key)
VALUES (:'kind', '{}'::jsonb, :priority, :'tenant', :'unique_key')
RETURNING id;
