-- lab/set_synchronize_seqscans.sql: LAB HELPER. Turn synchronized sequential
-- scans on or off in this session. On (the default), a Seq Scan of a table
-- bigger than a quarter of shared_buffers starts where the last scan of that
-- table reached, not at its first page; lesson 10 shows what that does to
-- cleanup_done.sql's LIMIT subquery.
-- Safe: yes, this session only.
-- Parameters: enabled (boolean).

SELECT set_config('synchronize_seqscans', CASE WHEN :enabled THEN 'on' ELSE 'off' END, false);
