-- migration_lock_timeout.sql: give up on any lock wait after :timeout, for
-- the rest of this transaction only (SQLSTATE 55P03, lock_not_available), so a
-- migration that waits for its lock fails fast instead of queueing every
-- claim, completion and heartbeat behind its request.
-- Safe: yes, this transaction only (SET LOCAL ends with it, or with its savepoint).
-- Parameters: timeout (text, for example '200ms').

SET LOCAL lock_timeout = :'timeout';
