-- lab/sleep.sql: LAB HELPER. One statement that stays active for :seconds:
-- a long query, as the timeouts of lesson 10 see it.
-- Safe: yes.
-- Parameters: seconds (float).

SELECT pg_sleep(:seconds);
