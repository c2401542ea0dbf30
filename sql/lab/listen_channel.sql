-- lab/listen_channel.sql: LAB HELPER. Subscribe this session to a channel of
-- the lab's own, so an experiment's notifications never wake real workers.
-- Run it on an autocommit connection, outside any transaction.
-- Safe: yes.
-- Parameters: channel (identifier).

LISTEN :"channel";
