-- lab/isolation_level.sql: LAB HELPER. The isolation level the server uses
-- for this statement's transaction, so a lesson asks the server which level
-- it ran at instead of trusting the client's setting.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT current_setting('transaction_isolation');
