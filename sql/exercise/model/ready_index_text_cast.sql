-- exercise/model/ready_index_text_cast.sql: a right answer to lesson 08's
-- index exercise, spelt another way: status is text, so status::text is the
-- column itself, and the claim reads this index as it reads the model's. Used
-- by the lesson 08 checker's tests.
-- Safe: yes.
-- Parameters: none.

CREATE INDEX jobs_ready_idx ON jobs (run_at) WHERE status::text = 'ready';
