-- lab/attempts_spent.sql: LAB HELPER. How many jobs of a kind used how many
-- tries: the relay's no-burn check (an outage must spend none), and the batch
-- drain's one claim per job, and lesson 11's refused events (a try spent each).
-- Safe: yes, read-only.
-- Parameters: kind (text).

SELECT attempts, count(*) FROM jobs WHERE kind = :'kind' GROUP BY attempts ORDER BY attempts;
