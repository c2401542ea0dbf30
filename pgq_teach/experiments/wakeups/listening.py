"""What lesson 07's labs share: a listening session of their own, what it
heard, and a sender session that notifies in one transaction, on the labs'
own channel, so they never wake real workers."""

from __future__ import annotations

import psycopg

from ...databases import Database
from ...statements import run
from ..sessions import LAB_PREFIX, Session, Step

CHANNEL = "pgq_lab_rules"  # the rules lab's own channel
QUIET_S = 0.3  # how long to listen for a notification that should not come
DELIVERY_S = 5.0  # how long to wait for one that should; it normally takes milliseconds
KIND = "send_receipt"
SENDER_PREFIX = f"{LAB_PREFIX} notify"  # the sending sessions' application_name: 'pgq-lab notify sender'


def listen(db: Database, channel: str = CHANNEL) -> psycopg.Connection:
    """A listening session of its own, autocommit, outside any transaction.

    Not a sessions.Session, on purpose: a Session's connection belongs to its
    own thread and runs every statement in a transaction it then commits,
    while a listener must sit idle outside any transaction (rule "busy
    listener") and be read with notifies(), which holds the connection while
    it waits, so it would block the Session's thread. A plain autocommit
    connection, read on the caller's thread, is what a worker would use."""
    conn = db.connect(autocommit=True)
    run(conn, "lab/listen_channel", idents={"channel": channel})
    return conn


def heard(listener: psycopg.Connection, seconds: float) -> list[str]:
    """Every payload that arrives within `seconds`."""
    return [n.payload for n in listener.notifies(timeout=seconds)]


def notify_in_one_transaction(db: Database, payloads: list[str], channel: str = CHANNEL) -> list[Step]:
    """A sender session, as in psql: BEGIN, one NOTIFY per payload, COMMIT.
    Its timeline: a failed Step carries the server's error (the transaction
    then commits nothing)."""
    with Session(db, "sender", prefix=SENDER_PREFIX) as sender:
        sender.begin()
        for payload in payloads:
            sender.run("lab/notify_channel", {"channel": channel, "payload": payload})
        sender.commit()
        sender.wait_done(timeout=DELIVERY_S * 2)
        return list(sender.timeline)
