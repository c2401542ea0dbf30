"""The failover drill on a real primary and a real streaming replica (infra/replica.py):
the pair leaves nothing behind, however its block ends.

Pass or fail is on what happened (processes, folders, slots, counts), never on how long
it took; the drill's own report prints its timings."""

import contextlib
import os
import re
import shutil
import signal
import tempfile
import time
from pathlib import Path

import psutil
import pytest

import pgq_teach as pgq
from helpers import default_sigint, job_row
from pgq_teach.infra import server
from pgq_teach.statements import run


def gone(pair, pids: list[int]) -> list[str]:
    """What the pair left: its folder, a live postmaster, a slot on the primary."""
    left = [str(pair.folder)] if pair.folder.exists() else []
    left += [
        f"process {pid}"
        for pid in pids
        if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
    ]
    if pair.slots_left != []:  # read from the primary by tear-down, after it dropped ours
        left.append(f"slots {pair.slots_left}")
    return left


def alive(pid: int) -> bool:
    """A process that still runs (a zombie waits only for its parent to read its exit)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def postmasters(pair) -> list[int]:
    return [pid for pid in map(server.replica.postmaster_pid, (pair.primary, pair.replica)) if pid]


def test_the_pair_streams_and_leaves_nothing_after_a_failure():
    """An error inside the block: both servers stopped, the slot dropped, the folder gone."""
    with pytest.raises(RuntimeError, match="inside the drill"):
        with server.replica_pair(synchronous=True) as pair:
            pids = postmasters(pair)
            walreceiver = pair.walreceiver_pid()
            assert len(pids) == 2 and psutil.Process(walreceiver).ppid() == pids[1]
            with pair.connect(pair.primary) as conn:
                rows = run(conn, "admin/replication_state").fetchall()
            assert [(row[0], row[1], row[2]) for row in rows] == [
                (server.replica.REPLICA_NAME, "streaming", "sync")
            ]
            raise RuntimeError("a failure inside the drill")
    assert gone(pair, pids + [walreceiver]) == []


def test_the_pair_leaves_nothing_after_ctrl_c_even_once_promoted():
    """KeyboardInterrupt inside the block, after the primary was killed and the replica
    promoted: no process, no folder, no shared memory segment of the killed postmaster."""
    # default_sigint: a run started in the background of a non-interactive shell ignores
    # SIGINT, and this Ctrl-C would then never arrive (tests/helpers.py says more).
    with default_sigint(), pytest.raises(KeyboardInterrupt):
        with server.replica_pair(synchronous=False) as pair:
            pids = postmasters(pair)
            pair.kill_primary()
            pair.promote()
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, delivered as the terminal does
    left = [str(pair.folder)] if pair.folder.exists() else []
    left += [f"process {pid}" for pid in pids if alive(pid)]
    assert left == []
    assert pair.orphan_memory and not set(pair.orphan_memory) & shared_memory_ids()


@pytest.mark.slow
@pytest.mark.parametrize(
    "when",
    ["starting a primary", "primary killed", "draining"],
    ids=["building-the-pair", "at-the-kill", "while-draining"],
)
def test_ctrl_c_mid_drill_leaves_no_process_folder_or_slot(when):
    """The drill command, interrupted as a terminal's Ctrl-C does (SIGINT to its whole process
    group: the command, its worker processes and whatever it started) at three moments: while
    the pair is built, at the kill, and while the workers drain on the new primary. It says
    so and exits 130, and nothing of it is left: no process of its group, no pair folder
    or server, no worker folder. (A slot lives in the primary's folder, so it goes with it.)"""
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    base = Path(tempfile.gettempdir())
    folders = {str(p) for p in base.glob("pgq-drill-*")} | set(server.replica.leftovers())
    argv = ["failover-drill", "--jobs", "2000", "--workers", "2", "--config", "async-relaxed"]
    with default_sigint():  # SIGINT's default in the command, even if this run ignores it
        drill = subprocess.Popen(
            [sys.executable, "-m", "pgq_teach.cli", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # a group of its own, as a terminal's foreground job has
        )
    seen = []
    try:
        for line in drill.stdout:
            seen.append(line.rstrip())
            if when in line:
                break
        # into the step: initdb running, a kill under way; a quiet machine drains 2,000 jobs
        # in about a second, so the drain is caught at once
        time.sleep(0.1 if when == "draining" else 1)
        group = _group(drill.pid)
        os.killpg(drill.pid, signal.SIGINT)
        rest, _ = drill.communicate(timeout=120)
    finally:
        if drill.poll() is None:
            os.killpg(drill.pid, signal.SIGKILL)
    assert when in seen[-1], seen  # interrupted where meant, not after the run ended
    assert drill.returncode == 130 and "interrupted" in rest, rest
    assert len(group) >= 2  # the command and what it was running: initdb, servers, workers
    assert [pid for pid in group if alive(pid)] == _group(drill.pid) == []
    left = {str(p) for p in base.glob("pgq-drill-*")} | set(server.replica.leftovers())
    assert left - folders == set()


def _group(session: int) -> list[int]:
    """The live processes of a session (a terminal's job and all it started that stayed in it)."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if os.getsid(proc.pid) == session and alive(proc.pid):
                found.append(proc.pid)
    return found


def shared_memory_ids() -> set[int]:
    """The System V shared memory segments on this machine (Linux's /proc/sysvipc/shm)."""
    with open("/proc/sysvipc/shm") as table:
        return {int(line.split()[1]) for line in table.readlines()[1:]}


# --- the drill's counts, each on a real primary and replica --------------------------------
# Small runs: 400 jobs, two worker processes, the kill when 40% are done, the replica's WAL
# receiver paused 1 s before it (the drill's defaults otherwise). What each must show follows
# from the configuration, not from timing: in a 1 s window the workers complete and claim jobs
# whose WAL an asynchronous replica never receives, and a synchronous one holds every commit
# that waits for it.


def drill(config: str, *, epoch: bool):
    from pgq_teach.faults.failover import DrillSettings, run_drill

    report = run_drill(DrillSettings(jobs=400, workers=2, epoch=epoch), (config,), progress=lambda line: None)
    (result,) = report.results
    print(f"\n{config}, epoch {epoch}: {result.counts} in {result.seconds:.0f} s; {result.examples}")
    assert result.drained and report.ok == (result.breaches == [])
    return result


@pytest.mark.slow
def test_async_relaxed_without_the_epoch_loses_completions_and_repeats_tokens():
    """The old primary's last second of completions and claims never reached the replica: jobs
    done there are not done after the failover and run again, and a job claimed there is
    claimed again with the same token: the same (job, token) handed to two handlers."""
    result = drill("async-relaxed", epoch=False)
    assert result.counts["completions_lost"] > 0 and result.counts["run_again"] > 0
    assert result.counts["jobs_lost"] > 0  # the drill's own enqueues in the window
    assert result.counts["token_repeats"] > 0
    assert re.fullmatch(
        r"job \d+, token \d+: handed to pgq-drill-w\d+, pgq-drill-w\d+.*", result.examples["token_repeats"]
    )
    # the relay sent checkout's events of the window from the old primary: the consumer heard
    # of orders the new primary no longer has
    assert result.outbox is not None and result.outbox["settled"], result.outbox
    assert result.counts["outbox_gone"] > 0
    assert result.breaches == []  # async without the epoch may repeat tokens, and lose events


@pytest.mark.slow
def test_async_relaxed_with_the_epoch_repeats_no_token():
    """The same failover with fence_epoch.sql at promotion: completions still lost (the epoch
    fixes tokens, not replication), and no token handed out twice."""
    result = drill("async-relaxed", epoch=True)
    assert result.counts["completions_lost"] > 0
    assert result.counts["token_repeats"] == 0 and result.counts["stale_accepted"] == 0
    assert result.epoch_base is not None and result.epoch_base % 2**32 == 0 and result.epoch_base >= 2**32


@pytest.mark.slow
def test_sync_durable_loses_no_acknowledged_job_or_completion():
    """A synchronous replica and durable completions: every acknowledged enqueue, claim and
    completion was on the replica before the client heard of it."""
    result = drill("sync-durable", epoch=False)
    assert result.done_before_kill > 0
    lost = {name: result.counts[name] for name in ("jobs_lost", "completions_lost", "token_repeats")}
    assert lost == {"jobs_lost": 0, "completions_lost": 0, "token_repeats": 0}
    # every event checkout was told was written reached the consumer, and none it was not told of
    assert result.counts["outbox_lost"] == result.counts["outbox_gone"] == 0
    assert result.outbox is not None and result.outbox["applied"] == result.outbox["written"] > 0
    assert result.breaches == []


def test_without_the_broker_extra_the_drill_says_outbox_events_are_not_counted(monkeypatch):
    """No broker: no outbox rows in the table, no outbox run, and the line that says why."""
    from pgq_teach.faults import failover, failover_outbox
    from pgq_teach.infra import broker

    monkeypatch.setattr(broker, "available", lambda: False)
    settings = failover.DrillSettings(jobs=10, workers=1)
    result = failover.ConfigResult(
        "sync-durable", True, counts=dict.fromkeys(failover.COUNTS, 0), drained=True
    )
    report = failover.DrillReport(settings, [result])
    text = failover.summary(report)
    assert "counted when the broker extra is installed" in text.splitlines()[-2]
    assert not any(label in text for label in failover_outbox.LABELS.values())
    assert report.as_json()["outbox"] == text.splitlines()[-2].strip()
    assert isinstance(failover._outbox(None, None, settings), contextlib.nullcontext)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--jobs", "0"], "jobs must be from 1"),
        (["--config", "async"], "invalid choice: 'async'"),
        (["--lag", "0"], "lag must be"),
        (["--json", "no-such-folder/drill.json"], "--json"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_any_server_starts(argv, says, capsys):
    from pgq_teach.cli import main

    before = set(server.replica.leftovers())
    try:
        code = main(["failover-drill", *argv])
    except SystemExit as exc:  # argparse's refusal
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and says in err
    assert set(server.replica.leftovers()) == before


def test_the_epoch_moves_live_tokens_and_new_ids_past_the_old_primarys(conn):
    """On one server, as at promotion: a held claim is fenced, a done job keeps its token, and
    a job enqueued after the epoch takes an id past any the old primary could have issued, so
    a stale holder's (id, token) matches neither an old job nor a new one."""
    done_id, held_id = pgq.enqueue(conn, "k", {}), pgq.enqueue(conn, "k", {})
    [done] = pgq.claim(conn)
    assert pgq.complete(conn, done)
    [held] = pgq.claim(conn)
    base, moved, id_base = run(conn, "fence_epoch").fetchone()
    assert base % 2**32 == 0 and base > held.fence_token + 2**31 and moved == 1
    assert job_row(conn, done_id)["fence_token"] == done.fence_token  # a done job is left as it was
    assert job_row(conn, held_id)["fence_token"] == base
    assert not pgq.complete(conn, held)  # the holder from before the failover is fenced
    new_id = pgq.enqueue(conn, "k", {})
    assert new_id == id_base + 1 and id_base % 2**32 == 0 and id_base > held_id + 2**31


@pytest.mark.parametrize("epoch", [False, True], ids=["without-epoch", "with-epoch"])
def test_a_holder_from_the_old_primary_completes_on_the_new_one_only_without_the_epoch(epoch):
    """The stale completion, built step by step on a real pair. A worker claims a job on the
    primary; the claim never reaches the asynchronous replica (its WAL receiver is paused
    until the primary dies). After promotion another worker claims the job again, and the
    first, whose handler outlived the failover, completes on the new primary. Without the
    epoch the second claim gets the first's token, so the stale completion is accepted while
    the second worker still holds the job; with it, the tokens differ and it is fenced. The
    drill's judge counts the same notes: one stale completion accepted, or none."""
    from pgq_teach.faults import failover

    with server.replica_pair(synchronous=False) as pair:
        with pair.connect(pair.primary) as conn:
            run(conn, "schema")
            job_id = pgq.enqueue(conn, "k", {})
        failover._caught_up(pair)
        with failover.lost_window(pair), pair.connect(pair.primary) as old:
            [held] = pgq.claim(old)
            held_at = time.time()
        kill_time = time.time()
        pair.promote()
        if epoch:
            with pair.writable() as conn:
                run(conn, "fence_epoch")
        pair.open_for_writes()
        with pair.connect(pair.replica) as new:
            [again] = pgq.claim(new)
            again_at = time.time()
            accepted = pgq.complete(new, held)  # the old holder's handler finished
            done_at = time.time()
            state = job_row(new, job_id)["status"]
    assert again.id == held.id == job_id
    assert (again.fence_token == held.fence_token) is (not epoch)
    assert accepted is (not epoch) and state == ("running" if epoch else "done")

    result = failover.ConfigResult("async-relaxed", epoch, drained=True)  # no drain here: one job
    claims = [("old", job_id, held.fence_token, held_at), ("new", job_id, again.fence_token, again_at)]
    dones = [("old", job_id, held.fence_token, done_at)] if accepted else []
    rows = {job_id: (job_id, state, again.fence_token)}
    failover._judge(result, [job_id], rows, rows, claims, dones, kill_time)
    assert result.counts["stale_accepted"] == (0 if epoch else 1)
    assert result.counts["token_repeats"] == (0 if epoch else 1)
    assert result.breaches == []  # async without the epoch may; with it, it must not


def test_an_outbox_event_is_lost_with_its_completion_and_written_again_under_a_new_id():
    """The transactional outbox across an asynchronous failover, on a real pair: a job is
    completed and its event written in one transaction on the old primary, acknowledged, and
    lost with the window of WAL the replica never received. On the new primary the two are
    gone together (never an event without its completion, nor a completion without its
    event); the job runs again and writes its event again under a new event id. So if a relay
    had published the first before the kill, the broker's deduplication by event id could not
    absorb the second: the consumer hears of the one completion twice."""
    from pgq_teach import outbox
    from pgq_teach.faults import failover

    def complete_with_event(conn, order_id: int) -> tuple[int, int, object]:
        [job] = pgq.claim(conn)
        with conn.transaction():
            assert pgq.complete(conn, job)
            event = outbox.write_event(conn, order_id, {"event": "shipped", "job": job.id})
        [(_, event_id)] = run(conn, "lab/event_ids", {"ids": [event]}).fetchall()
        return job.id, event, event_id

    def order_jobs(conn, order_id: int) -> list[tuple[int, str, str]]:
        return [tuple(row) for row in run(conn, "lab/jobs_for_order", {"order_id": order_id})]

    with server.replica_pair(synchronous=False) as pair:
        with pair.connect(pair.primary) as conn:
            run(conn, "schema")
            [order_id] = run(conn, "lab/place_order", {"email": "a@example.com", "total": "9.99"}).fetchone()
            ship = pgq.enqueue(conn, "ship", {"order_id": order_id})
        failover._caught_up(pair)
        with failover.lost_window(pair), pair.connect(pair.primary) as old:
            first = complete_with_event(old, order_id)
            on_old = order_jobs(old, order_id)
        pair.promote()
        with pair.writable() as conn:
            run(conn, "fence_epoch")
        pair.open_for_writes()
        with pair.connect(pair.replica) as new:
            on_new = order_jobs(new, order_id)
            second = complete_with_event(new, order_id)
            at_end = order_jobs(new, order_id)
    assert first[0] == second[0] == ship
    assert on_old == [(ship, "ship", "done"), (first[1], outbox.OUTBOX_KIND, "ready")]
    assert on_new == [(ship, "ship", "ready")]  # the completion and its event, gone together
    assert at_end == [(ship, "ship", "done"), (second[1], outbox.OUTBOX_KIND, "ready")]
    assert second[2] != first[2]  # a new event id: a copy published before the kill is not absorbed


@pytest.mark.parametrize("fence", [False, True], ids=["without-fence", "with-fence"])
def test_a_new_order_after_failover_takes_a_lost_orders_id_only_without_the_fence(fence):
    """An application's own ids across an asynchronous failover, on a real pair, in the drill's
    outbox database: 40 orders placed in the lost window (past the 32 values a sequence logs
    ahead) are lost, and without fence_sequences.sql the first order on the new primary takes
    the id of one of them; with it, as the drill runs it at promotion (failover._fence), the
    new order's id is past any the old primary could have issued."""
    from pgq_teach.faults import failover, failover_outbox

    db = failover_outbox.OUTBOX_DB

    def place(conn) -> int:
        return run(conn, "lab/place_order", {"email": "a@example.com", "total": "9.99"}).fetchone()[0]

    with server.replica_pair(synchronous=False) as pair:
        with pair.connect(pair.primary) as conn:
            run(conn, "schema")
            run(conn, "admin/create_database", idents={"name": db})
        with pair.connect(pair.primary, db) as conn:
            run(conn, "schema")
            before = place(conn)
        failover._caught_up(pair)
        with failover.lost_window(pair), pair.connect(pair.primary, db) as old:
            lost = [place(old) for _ in range(40)]
        pair.promote()
        if fence:
            failover._fence(pair, with_outbox=True)
        pair.open_for_writes()
        with pair.connect(pair.replica, db) as new:
            kept = [i for i in (before, *lost) if run(new, "lab/order_row", {"id": i}).fetchone() is not None]
            after = place(new)
    assert kept == [before] and lost == list(range(before + 1, before + 41))  # the window was lost
    assert (after in lost) is (not fence)
    if fence:
        assert after > max(lost) + 2**31 and (after - 1) % 2**32 == 0  # moved_to + 1, an epoch's start


def test_the_pair_folder_goes_even_while_something_still_writes_into_it(tmp_path):
    """After a Ctrl-C, initdb and its bootstrap backend may still be writing into the pair's
    folder while tear-down removes it (subprocess.run waits only a quarter second for them):
    the folder is gone once the writer stops, not left with whatever it wrote last."""
    import threading

    from pgq_teach.infra import replica

    folder = tmp_path / "pair"
    (folder / "primary").mkdir(parents=True)
    stop = time.monotonic() + 0.5

    def write() -> None:  # as initdb does: files into a data folder it made, until it exits
        count = 0
        while time.monotonic() < stop:
            with contextlib.suppress(OSError):
                (folder / "primary" / f"f{count}").write_bytes(b"x" * 512)
                count += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        replica._remove(folder)
    finally:
        writer.join()
    assert not folder.exists()


def test_a_new_event_that_takes_a_lost_events_job_id_reaches_the_consumer():
    """Without the fencing epoch, the promoted replica's identity sequence is behind the ids the
    old primary handed out in the lost window, so a genuinely new event can take the job id of
    an event the relay had already published. On a real pair and a real broker: the relay
    publishes order A's event from the old primary, both are lost, the new primary gives order
    B's event the same job id, and the broker stores it and the consumer applies it, since both
    key on the event id (a UUID written at enqueue). A consumer keyed on the job id would have
    dropped it as a repeat."""
    from pgq_teach import outbox
    from pgq_teach.faults import failover
    from pgq_teach.infra import broker

    assert broker.available(), broker.missing_line()

    def relay_all(conn, client) -> int:
        return outbox.Relay(db, client).run_once(conn)[0]

    nats = broker.Broker(Path(tempfile.mkdtemp(prefix="pgq-test-nats-")))
    try:
        with server.replica_pair(synchronous=False) as pair, broker.Client(nats.start().url) as client:
            db = failover._database(pair)  # the course's schema on the pair
            with pair.connect(pair.primary) as conn:
                outbox.prepare_outbox(conn, client, duplicate_window_s=120)  # ids restart at 1
                a, b = (
                    run(conn, "lab/place_order", {"email": f"{who}@example.com", "total": "9.99"}).fetchone()[
                        0
                    ]
                    for who in "ab"
                )
            failover._caught_up(pair)
            with failover.lost_window(pair), pair.connect(pair.primary) as old:
                for _ in range(40):  # past the sequence's 32 ids logged ahead (sequence.c, SEQ_LOG_VALS)
                    pgq.enqueue(old, "filler", {}, notify=False)
                lost = outbox.write_event(old, a, {"seq": 1, "event": "created"})
                assert relay_all(old, client) == 1
            pair.promote()
            pair.open_for_writes()  # no fencing epoch
            with pair.connect(pair.replica) as new:
                assert job_row(new, lost) is None
                while pgq.enqueue(new, "filler", {}, notify=False) < lost - 1:
                    pass  # the new primary hands out the lost window's ids again, from 1
                reused = outbox.write_event(new, b, {"seq": 1, "event": "created"})
                assert relay_all(new, client) == 1
            stored = client.stream_messages(outbox.STREAM)
            consumer = outbox.consumed(client)
    finally:
        nats.stop()
        shutil.rmtree(nats.store, ignore_errors=True)
    assert reused == lost  # the same job id, a different event
    assert stored == 2 and consumer.applied == 2
    assert consumer.duplicates_absorbed == 0 and consumer.out_of_order == 0
