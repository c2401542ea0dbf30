-- exercise/old_string_syntax.sql: LAB HELPER. Give a scratch database the old
-- string syntax by default (standard_conforming_strings off: a backslash
-- escapes a quote in a plain string), as a server configured that way would,
-- so a test can show that the learner's sessions read strings as pglast does
-- whatever the database's default.
-- Safe: only in a scratch database (a test's own, dropped after it).
-- Parameters: database (identifier).

ALTER DATABASE :"database" SET standard_conforming_strings = off;
