-- lab/attempts_spent.sql: LAB HELPER. How many jobs of a kind used how many
-- tries: the relay's no-burn check (an outage must spend none), and the batch
-- drain's one claim per job.
-- Safe: yes, read-only.
-- Parameters: kind (text).

SELECT attempts, count(*) FROM jobs WHERE kind = :'kind' GROUP BY attempts ORDER BY attempts;
