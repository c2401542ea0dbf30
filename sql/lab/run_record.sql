-- lab/run_record.sql: LAB HELPER. A handler's first act: record that this
-- worker started a run of the job under the claim with this fencing token.
-- Safe: yes, in a lab's or test's own database (lab/runs_create.sql first).
-- Parameters: job_id (bigint), fence_token (bigint), worker (text).

INSERT INTO job_runs (job_id, fence_token, worker) VALUES (:job_id, :fence_token, :'worker');
