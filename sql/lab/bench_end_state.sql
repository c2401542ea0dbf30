-- lab/bench_end_state.sql: LAB HELPER. How a bench run left the jobs table:
-- how many jobs, how many done, how many claimed more than once (a fencing
-- token above 1: every claim adds one) and how many never claimed.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT count(*) AS jobs,
       count(*) FILTER (WHERE status = 'done') AS done,
       count(*) FILTER (WHERE fence_token > 1) AS claimed_twice,
       count(*) FILTER (WHERE fence_token = 0) AS never_claimed
FROM jobs;
