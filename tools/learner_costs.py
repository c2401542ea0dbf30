"""What one learner costs a class (docs/classroom.md): CPU, memory and disk.

A fresh data folder and learner home (the two folders given), a real Jupyter
kernel, and in it lesson 03's five-way race (3 rounds of 8 workers, 400 jobs,
10 ms a job) and its "Your turn" check of 03/claim with the model answer: the
heaviest lab of the first lessons, and the checker's first start with it.
While it runs, the memory of the kernel, the lessons' PostgreSQL and the
checker (each process's PSS, so shared buffers are counted once) is sampled
every 0.2 s; at the end it prints the peak, the CPU seconds all of them used
(a postmaster's own and its ended backends'), and the disk the folders take.

    python tools/learner_costs.py DATA_FOLDER HOME_FOLDER
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import psutil
from jupyter_client.manager import start_new_kernel

WORK = """
from pgq_teach import exercises, lesson
from pgq_teach.experiments import claims
db = lesson.start("03-claim-with-a-lease")
five = claims.five_way(db, rounds=3, workers=8, jobs=400, work_ms=10)
verdict = exercises.check("03/claim", exercises.EXERCISES["03/claim"].answer_text())
assert verdict.passed and not five.stopped, verdict.summary()
"""
STOP = "from pgq_teach.infra import server; server.stop_checker(); server.stop_server()"


def postmaster(folder: Path) -> psutil.Process | None:
    try:
        return psutil.Process(int((folder / "postmaster.pid").read_text().split()[0]))
    except (OSError, ValueError, psutil.Error):
        return None


def tree(root: psutil.Process | None) -> list[psutil.Process]:
    if root is None:
        return []
    try:
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return [root]


def pss(procs: list[psutil.Process]) -> int:
    total = 0
    for proc in procs:
        try:
            total += proc.memory_full_info().pss
        except psutil.Error:
            pass
    return total


def cpu(root: psutil.Process | None) -> float:
    """The tree's CPU seconds: the root's own, its ended children's (reaped, so counted in
    the root's children_* times) and its live children's."""
    if root is None:
        return 0.0
    try:
        own = root.cpu_times()
        total = own.user + own.system + own.children_user + own.children_system
        for child in root.children(recursive=True):
            try:
                times = child.cpu_times()
                total += times.user + times.system
            except psutil.Error:
                pass
        return total
    except psutil.Error:
        return 0.0


def du(path: Path) -> int:
    return sum(f.lstat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def main(data: Path, home: Path) -> None:
    env = {**os.environ, "PGQ_DATA_DIR": str(data), "PGQ_HOME": str(home), "PGQ_BACKEND": "embedded"}
    env.pop("PGQ_DSN", None)
    checker = data.with_name(f"{data.name}-checker") / "data"
    began = time.monotonic()
    manager, client = start_new_kernel(kernel_name="python3", env=env)
    kernel = psutil.Process(manager.provisioner.process.pid)  # type: ignore[union-attr]
    peak = {"total": 0, "kernel": 0, "lessons": 0, "checker": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            parts = {
                "kernel": pss(tree(kernel)),
                "lessons": pss(tree(postmaster(data))),
                "checker": pss(tree(postmaster(checker))),
            }
            parts["total"] = sum(parts.values())
            for key, value in parts.items():
                peak[key] = max(peak[key], value)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        reply = client.execute_interactive(WORK, timeout=900)
        assert reply["content"]["status"] == "ok", reply["content"]
        wall = time.monotonic() - began
        used = {"kernel": cpu(kernel), "lessons": cpu(postmaster(data)), "checker": cpu(postmaster(checker))}
        done.set()
        sampler.join()
        client.execute_interactive(STOP, timeout=120)
    finally:
        done.set()
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    disk = {"lessons": du(data), "checker": du(checker.parent), "home": du(home)}
    print(
        json.dumps(
            {
                "wall_s": round(wall, 1),
                "cpu_s": {k: round(v, 1) for k, v in used.items()} | {"total": round(sum(used.values()), 1)},
                "peak_pss_mib": {k: round(v / 2**20) for k, v in peak.items()},
                "disk_mib": {k: round(v / 2**20) for k, v in (disk | {"total": sum(disk.values())}).items()},
                "cpus": os.cpu_count(),
                "load_1min": round(os.getloadavg()[0], 1),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    main(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve())
