-- exercise/wrong/complete_all_running.sql: TEACHING ONLY, WRONG. A relay's
-- completion that ignores the batch it was given and marks every running job
-- done, including jobs another relay claimed and never published: the reaper
-- never returns them, so they are lost. Used by the lesson 11 checker's tests.
-- Safe: NO, it completes other workers' jobs.
-- Parameters: none.

UPDATE jobs SET status = 'done', leased_until = NULL WHERE status = 'running';
