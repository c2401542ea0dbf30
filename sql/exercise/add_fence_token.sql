-- exercise/add_fence_token.sql: LAB HELPER. Give a scratch jobs table the
-- fencing token column (fence_token, bumped by every claim and never reset), on
-- a schema that does not have it yet; a no-op where it does.
-- Safe: yes, adds a column with a default only if it is missing.
-- Parameters: none.

ALTER TABLE jobs ADD COLUMN IF NOT EXISTS fence_token bigint NOT NULL DEFAULT 0;
