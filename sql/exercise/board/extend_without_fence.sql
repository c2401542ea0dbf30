-- exercise/board/extend_without_fence.sql: TEACHING ONLY, WRONG. A lease extension with no fence: a
-- worker whose job was claimed again renews the new holder's lease, so a
-- crash of the new holder goes unnoticed for a whole extra lease. The
-- interview's board (interview.board), a common wrong line.
-- Safe: NO; match the worker's fence_token too.
-- Parameters: id (bigint), lease (interval).

UPDATE jobs SET leased_until = clock_timestamp() + :'lease'::interval
WHERE id = :id AND status = 'running';
