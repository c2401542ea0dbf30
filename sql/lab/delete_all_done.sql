-- lab/delete_all_done.sql: LAB HELPER (TEACHING ONLY as a habit). Delete every
-- done job in one statement: one long transaction, which is what
-- cleanup_done.sql's small batches avoid.
-- Safe: NO outside a lesson's own database: it deletes every done job at once.
-- Parameters: none.

DELETE FROM jobs WHERE status = 'done';
