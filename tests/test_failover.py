"""The failover drill on a real primary and a real streaming replica (infra/replica.py):
the pair leaves nothing behind, however its block ends.

Pass or fail is on what happened (processes, folders, slots, counts), never on how long
it took; the drill's own report prints its timings."""

import os
import signal

import psutil
import pytest

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
    with pytest.raises(KeyboardInterrupt):
        with server.replica_pair(synchronous=False) as pair:
            pids = postmasters(pair)
            pair.kill_primary()
            pair.promote()
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, delivered as the terminal does
    left = [str(pair.folder)] if pair.folder.exists() else []
    left += [f"process {pid}" for pid in pids if alive(pid)]
    assert left == []
    assert pair.orphan_memory and not set(pair.orphan_memory) & shared_memory_ids()


def shared_memory_ids() -> set[int]:
    """The System V shared memory segments on this machine (Linux's /proc/sysvipc/shm)."""
    with open("/proc/sysvipc/shm") as table:
        return {int(line.split()[1]) for line in table.readlines()[1:]}
