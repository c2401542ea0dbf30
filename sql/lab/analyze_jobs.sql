-- lab/analyze_jobs.sql: LAB HELPER. Refresh the planner's statistics for jobs,
-- as autovacuum would in time, so EXPLAIN shows the plan real traffic gets.
-- Safe: yes.
-- Parameters: none.

ANALYZE jobs;
