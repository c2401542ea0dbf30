-- lab/set_idle_timeout.sql: LAB HELPER. End this session if it sits idle
-- inside a transaction for longer than the timeout. The guide sets it per
-- worker role (ALTER ROLE ... SET); a session can set it for itself too.
-- Safe: yes.
-- Parameters: timeout (text, such as '1s' or '1min').

SET idle_in_transaction_session_timeout = :'timeout';
