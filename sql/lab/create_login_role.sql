-- lab/create_login_role.sql: LAB HELPER. A login role with no extra rights,
-- to show what a restricted account meets.
-- Safe: yes; drop it afterwards with lab/drop_role.sql.
-- Parameters: name (identifier), password (text).

CREATE ROLE :"name" LOGIN PASSWORD :'password';
