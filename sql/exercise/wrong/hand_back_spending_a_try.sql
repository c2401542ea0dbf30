-- exercise/wrong/hand_back_spending_a_try.sql: TEACHING ONLY, WRONG. The relay
-- hands an unsent batch back after the broker did not answer, fenced row by
-- row, but leaves the claim's try counted: every round of an outage spends a
-- try of every event in the batch, so a long enough outage kills the backlog.
-- Lesson 11's seeded attempt.
-- Safe: NO; give the try back (attempts - 1): an outage is not the event's fault.
-- Parameters: ids (bigint[]), fence_tokens (bigint[]), error (text).

UPDATE jobs
SET status = 'ready', leased_until = NULL, last_error = :'error'
FROM unnest(:'ids'::bigint[], :'fence_tokens'::bigint[]) AS claimed (id, fence_token)
WHERE jobs.id = claimed.id AND jobs.fence_token = claimed.fence_token AND jobs.status = 'running';
