-- lab/history_delete_day.sql: LAB HELPER. Delete one day of history row by
-- row: the bulk DELETE that dropping a partition replaces.
-- Safe: NO outside a lesson's own database.
-- Parameters: day (date), next_day (date).

DELETE FROM jobs_history WHERE finished_at >= :'day'::date AND finished_at < :'next_day'::date;
