-- lab/seqscan_sync_cutoff.sql: LAB HELPER. The jobs table's size in pages
-- beside the size above which a Seq Scan of it is synchronized (a quarter of
-- shared_buffers, in pages), and whether this session synchronizes at all.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT pg_relation_size('jobs') / current_setting('block_size')::int AS pages,
       (SELECT setting::bigint FROM pg_settings WHERE name = 'shared_buffers') / 4 AS synchronized_above,
       current_setting('synchronize_seqscans')::boolean AS synchronize_seqscans;
