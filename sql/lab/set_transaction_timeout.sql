-- lab/set_transaction_timeout.sql: LAB HELPER. Set transaction_timeout for this session
-- only (lesson 10 sets it on a lab role's session, beside the idle
-- timeout). transaction_timeout exists from PostgreSQL 17 on.
-- Safe: yes, this session only.
-- Parameters: timeout (text, for example '1s').

SET transaction_timeout = :'timeout';
