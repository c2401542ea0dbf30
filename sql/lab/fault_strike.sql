-- lab/fault_strike.sql: LAB HELPER. The orchestrator notes a fault that takes
-- a worker's jobs from it by right, just before it strikes: a SIGKILL (no
-- end) or a SIGSTOP past the lease (ends `seconds` later at the latest;
-- lab/fault_strike_end.sql notes its true end as the worker goes on).
-- Safe: yes, in a fault run's own database (lab/fault_setup.sql first).
-- Parameters: worker (text), kind (text: kill or pause), seconds (float8: the
--   longest the pause may last; NULL for a kill).

INSERT INTO fault_strikes (worker, kind, until)
VALUES (:'worker', :'kind', clock_timestamp() + make_interval(secs => :seconds));
