-- lab/terminate_backend.sql: LAB HELPER. End one session, by its process id,
-- as a network cut or a failover would; true if it was ended.
-- Safe: NO outside a lab's own database.
-- Parameters: pid (int).

SELECT pg_terminate_backend(:pid) AS ended;
