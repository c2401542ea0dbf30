-- lab/jobs_autovacuum.sql: LAB HELPER. Per-table autovacuum settings on jobs:
-- on or off, and when it starts (threshold + scale_factor x rows dead). The
-- server defaults are 50 and 0.2; the guide suggests 1000 and 0.01 for a
-- busy jobs table.
-- Safe: yes for a lesson's own database; the settings stay until changed.
-- Parameters: enabled (boolean), scale_factor (number), threshold (int).

ALTER TABLE jobs SET (
  autovacuum_enabled = :enabled,
  autovacuum_vacuum_scale_factor = :scale_factor,
  autovacuum_vacuum_threshold = :threshold
);
