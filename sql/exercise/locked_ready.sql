-- exercise/locked_ready.sql: CHECKER HELPER. How many ready rows another
-- session holds locked: every ready row, less those this statement can lock
-- with SKIP LOCKED. Rows a claim marked running in a transaction still open
-- are ready to every other session, and locked, so they count too: the
-- fair claim's check subtracts the jobs the claim returned.
-- Safe: yes in autocommit: the locks it takes go when the statement ends.
-- Parameters: none.

SELECT (SELECT count(*) FROM jobs WHERE status = 'ready')
     - (SELECT count(*) FROM (SELECT id FROM jobs WHERE status = 'ready' FOR UPDATE SKIP LOCKED) AS free)
       AS held;
