-- lab/attempts_spent.sql: LAB HELPER. How many jobs of a kind used how many
-- tries, for the relay's no-burn check (an outage must spend none).
-- Safe: yes, read-only.
-- Parameters: kind (text).

SELECT attempts, count(*) FROM jobs WHERE kind = :'kind' GROUP BY attempts ORDER BY attempts;
