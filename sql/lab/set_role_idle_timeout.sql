-- lab/set_role_idle_timeout.sql: LAB HELPER. Give a lab role a short
-- idle_in_transaction_session_timeout, so the lesson can show it ending a
-- forgotten transaction within seconds (sql/roles.sql sets the real one).
-- Safe: only for roles the course made; new sessions pick it up.
-- Parameters: name (identifier), timeout (text, for example '1s').

ALTER ROLE :"name" SET idle_in_transaction_session_timeout = :'timeout';
