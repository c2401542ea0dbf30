-- lab/touch_other_jobs.sql: LAB HELPER. Update every job but one, once each,
-- leaving one dead row version per job updated for VACUUM to clean up.
-- Safe: yes, in a lesson's database (it only rewrites last_error).
-- Parameters: keep (bigint, the job left alone).

UPDATE jobs SET last_error = 'touched by the cleanup lab' WHERE id <> :keep;
