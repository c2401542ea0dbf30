-- lab/fault_strike_end.sql: LAB HELPER. The orchestrator notes that a
-- worker's pause is over, just before it lets the worker go on (SIGCONT): the
-- worker's latest pause ends now. A pause is noted before it strikes with the
-- longest it may last (lab/fault_strike.sql); one that ends sooner, on an
-- event or at once, would otherwise excuse the worker's claims made after it.
-- Safe: yes, in a fault run's own database (lab/fault_setup.sql first). Sent
--   twice, it moves the end to the second moment, while the worker is still
--   frozen.
-- Parameters: worker (text).

UPDATE fault_strikes SET until = clock_timestamp()
WHERE worker = :'worker' AND kind = 'pause'
  AND at = (SELECT max(at) FROM fault_strikes WHERE worker = :'worker' AND kind = 'pause');
