-- lab/set_statement_timeout.sql: LAB HELPER. Set statement_timeout for this session
-- only (lesson 10 sets it on a lab role's session, beside the idle timeout).
-- Safe: yes, this session only.
-- Parameters: timeout (text, for example '1s').

SET statement_timeout = :'timeout';
