-- exercise/wrong/ready_index_including_payload.sql: TEACHING ONLY, WRONG. The
-- partial index on ready jobs by run_at, with the payload and kind copied into
-- every entry (INCLUDE), as if the claim could then skip the table. It cannot:
-- it locks and updates the row it claims, so the copies only make the index
-- as large as the payloads. Used by the lesson 08 checker's tests.
-- Safe: correct plans, but an index as large as the payloads; index run_at alone.
-- Parameters: none.

CREATE INDEX jobs_ready_idx ON jobs (run_at) INCLUDE (payload, kind) WHERE status = 'ready';
