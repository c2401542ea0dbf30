-- lab/create_pageinspect.sql: LAB HELPER. Install pageinspect in this
-- database, to read a btree index's leaf pages item by item.
-- Safe: yes. Needs a superuser: pageinspect is not a trusted extension.
-- Parameters: none.

CREATE EXTENSION IF NOT EXISTS pageinspect;
