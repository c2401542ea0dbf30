-- lab/history_partition.sql: LAB HELPER. One day's partition of jobs_history,
-- with autovacuum off on it, so the dead rows lesson 10 counts stay put until
-- it has counted them (a real history table keeps autovacuum on).
-- Safe: yes; creates a new table.
-- Parameters: name (identifier), day (date), next_day (date).

CREATE TABLE :"name" PARTITION OF jobs_history FOR VALUES FROM (:'day') TO (:'next_day')
WITH (autovacuum_enabled = false);
