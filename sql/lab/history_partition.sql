-- lab/history_partition.sql: LAB HELPER. One day's partition of jobs_history.
-- Safe: yes; creates a new table.
-- Parameters: name (identifier), day (date), next_day (date).

CREATE TABLE :"name" PARTITION OF jobs_history FOR VALUES FROM (:'day') TO (:'next_day');
