"""How busy the machine was while a benchmark ran, from Linux's /proc (issue 49).

A busy machine hides the Worker's own cost: the server's and the client's CPU
time stretch alike, so ratios drift toward 1. `pgq-teach bench` therefore
records the load average and the CPU that *other* processes used during the
run (the machine's busy time, less this process and the PostgreSQL server it
measures), and gives no verdict on its targets when that was high. Where
/proc cannot be read (not Linux), the figures are None and no verdict is given.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
# Busy, for a verdict: other processes used more than this share of the machine's CPUs on
# average during the run, or the 1-minute load average at the start was above this share of them.
BUSY_OTHERS_SHARE = 0.10
BUSY_LOAD_SHARE = 0.50


@dataclass
class CpuSnapshot:
    """CPU seconds so far: the whole machine busy, this process, the server's processes."""

    at: float
    machine: float | None
    own: float
    server: float | None


@dataclass
class MachineLoad:
    """What else the machine did during a run."""

    cpus: int
    load_at_start: float | None  # 1-minute load average
    load_at_end: float | None
    seconds: float
    others_cpus: float | None  # CPUs' worth of other processes' work, on average over the run
    server_seen: bool  # the server's processes were found in /proc (a local server)

    @property
    def busy(self) -> bool | None:
        """Too busy for a verdict; None when it could not be told."""
        if self.others_cpus is None or self.load_at_start is None:
            return None
        return (
            self.others_cpus > BUSY_OTHERS_SHARE * self.cpus
            or self.load_at_start > BUSY_LOAD_SHARE * self.cpus
        )

    def line(self) -> str:
        if self.others_cpus is None:
            return "machine load: unknown (no /proc), so no verdict on the targets"
        state = {True: "busy: no verdict on the targets", False: "quiet", None: "unknown"}[self.busy]
        server = "" if self.server_seen else " (server not local: its CPU counts as other processes')"
        return (
            f"machine load: 1-minute load average {self.load_at_start:.2f} at the start, "
            f"{self.load_at_end:.2f} at the end; other processes used {self.others_cpus:.2f} of "
            f"{self.cpus} CPUs on average over {self.seconds:,.0f} s{server} ({state})"
        )


def _ticks() -> float:
    return float(os.sysconf("SC_CLK_TCK"))


def _machine_busy_seconds() -> float | None:
    """Every CPU's non-idle time since boot (the first line of /proc/stat)."""
    try:
        fields = (PROC / "stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    values = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
    return (sum(values) - values[3] - values[4]) / _ticks()


def _process_stat(pid: int) -> tuple[int, float] | None:
    """A process's parent and CPU seconds (user + system), or None if it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    rest = text.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return int(rest[1]), (int(rest[11]) + int(rest[12])) / _ticks()


class ServerWatch:
    """The CPU seconds of the postmaster and its children (the backends, the checkpointer, ...),
    sampled every `every` seconds on a thread of its own, so a backend that ends during the run
    still counts, up to its last sample: the work it did after that counts as another
    process's, which can only make a run look busier than it was, never quieter."""

    def __init__(self, postmaster: int | None, every: float = 0.25):
        self.postmaster, self.every = postmaster, every
        self._last: dict[int, float] = {}  # pid -> CPU seconds at its last sample
        self._first: dict[int, float] = {}  # pid -> CPU seconds when first seen (0 if born since)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ServerWatch:
        if self.postmaster is not None:
            self._sample(born_since=False)
            self._thread = threading.Thread(target=self._loop, daemon=True, name="pgq-bench-server-watch")
            self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._sample(born_since=True)

    def seconds(self) -> float | None:
        """Server CPU seconds used since the watch began; None if the server is not local."""
        if self.postmaster is None:
            return None
        return sum(cpu - self._first.get(pid, 0.0) for pid, cpu in self._last.items())

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self._sample(born_since=True)

    def _sample(self, *, born_since: bool) -> None:
        postmaster = self.postmaster
        if postmaster is None:
            return
        for pid in [postmaster, *_children(postmaster)]:
            stat = _process_stat(pid)
            if stat is None:
                continue
            if pid not in self._first:
                self._first[pid] = 0.0 if born_since else stat[1]
            self._last[pid] = stat[1]


def _children(pid: int) -> list[int]:
    """A process's children, from the kernel's own list: cheap enough to read four times a
    second (walking all of /proc would cost this process, whose CPU time the bench reports)."""
    try:
        return [
            int(child) for child in (PROC / str(pid) / "task" / str(pid) / "children").read_text().split()
        ]
    except OSError:
        return []


def postmaster_of(backend_pid: int) -> int | None:
    """The postmaster of a backend, if it runs on this machine."""
    stat = _process_stat(backend_pid)
    return stat[0] if stat else None


def snapshot(server: ServerWatch) -> CpuSnapshot:
    return CpuSnapshot(time.monotonic(), _machine_busy_seconds(), time.process_time(), server.seconds())


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def between(start: CpuSnapshot, end: CpuSnapshot, load_at_start: float | None) -> MachineLoad:
    seconds = max(end.at - start.at, 1e-9)
    cpus = os.cpu_count() or 1
    others = None
    if start.machine is not None and end.machine is not None:
        used = end.machine - start.machine - (end.own - start.own)
        if start.server is not None and end.server is not None:
            used -= end.server - start.server
        others = max(used, 0.0) / seconds
    return MachineLoad(cpus, load_at_start, load_average(), seconds, others, start.server is not None)
