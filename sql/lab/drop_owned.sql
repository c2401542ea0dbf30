-- lab/drop_owned.sql: LAB HELPER. Revoke everything a role was granted in this
-- database (and drop what it owns here), so lab/drop_role.sql can then drop it.
-- Safe: only for roles the course made.
-- Parameters: name (identifier).

DROP OWNED BY :"name";
