-- lab/session_settings.sql: LAB HELPER. Who this session is, whether it came
-- over TCP (client_addr) or the Unix socket (NULL), its server process id,
-- and the timeout the worker role's hardening sets.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT current_user AS role,
       current_setting('idle_in_transaction_session_timeout') AS idle_in_transaction_session_timeout,
       (SELECT client_addr FROM pg_stat_activity WHERE pid = pg_backend_pid()) AS client_addr,
       pg_backend_pid() AS pid;
