-- lab/fault_reset.sql: LAB HELPER. Empty the fault run's ledgers (see
-- lab/fault_setup.sql) so a run starts from nothing.
-- Safe: NO outside a lab's own database: it deletes every ledger row.
-- Parameters: none.

TRUNCATE fault_calls, fault_effects, fault_outcomes, fault_transitions, fault_strikes, fault_lost
  RESTART IDENTITY;
