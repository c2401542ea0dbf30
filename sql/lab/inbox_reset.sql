-- lab/inbox_reset.sql: LAB HELPER. Empty the inbox and the receipts record,
-- so a fencing lab run starts from none sent.
-- Safe: NO outside a lesson's own database.
-- Parameters: none.

TRUNCATE inbox, receipts_sent RESTART IDENTITY;
