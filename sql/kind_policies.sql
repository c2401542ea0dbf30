-- kind_policies.sql: the retry policy and job timeout of the kinds that have
-- a row in job_kinds, among those asked for. A kind with no row keeps
-- fail.sql's values (10 s doubling up to one hour, 5 tries, no job timeout).
-- Safe: yes, read-only.
-- Parameters: kinds (text[]).

SELECT kind, backoff_base_s, backoff_cap_s, max_attempts, timeout_s
FROM job_kinds
WHERE kind = ANY(:'kinds'::text[])
ORDER BY kind;
