-- listen.sql: subscribe this session to the wake-up channel. Run it on its own
-- autocommit connection, outside any transaction: a listener inside a
-- transaction hears nothing until that transaction ends.
-- Safe: yes.
-- Parameters: none.

LISTEN jobs_ready;
