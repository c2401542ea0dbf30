-- lab/history_drop_day.sql: LAB HELPER. Drop one day's partition of
-- jobs_history: its rows go with its file, leaving no dead row versions.
-- Safe: NO outside a lesson's own database.
-- Parameters: name (identifier).

DROP TABLE :"name";
