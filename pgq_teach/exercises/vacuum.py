"""The session holding VACUUM back (lesson 09): the learner writes one query
on pg_stat_activity, and the checker grades it against real sessions, all of
the learner's own role (a role sees the details only of its own sessions).

Two staged scenes, each with its own culprit:

- a REPEATABLE READ transaction idle after one SELECT: its snapshot
  (backend_xmin) keeps VACUUM from removing the dead versions made after it;
- a READ COMMITTED transaction idle after a write: between statements it
  holds no snapshot, but its transaction id (backend_xid) holds VACUUM back.

Beside each culprit: a decoy READ COMMITTED transaction idle after one
SELECT (idle in transaction too, but holding nothing), opened before the
culprit in the first scene and after it in the second; an idle session
outside any transaction; and the learner's query's own session, which holds
a snapshot while it runs. A query that picks "the oldest (or newest) idle
transaction" names a decoy in one scene or the other.

The query must name the culprit's pid and no other. Then the checker ends the
sessions it named and runs VACUUM again: the dead versions go (guide #18)."""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg

from ..experiments.bloat import vacuum
from ..guide import figure
from ..statements import run
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, parse
from .verdict import Evidence, Verdict

JOBS = 1_000
NOT_STAGED = "a client session the scene did not open"
APP = "worker"  # every staged session has the same application_name: the state must tell them apart


def vacuum_counts(scratch: Scratch) -> tuple[int, int]:
    """(removed, dead but not yet removable), from VACUUM (VERBOSE) jobs as the owner."""
    report = vacuum(scratch.db)
    return report.removed, report.not_removable


def session(scratch: Scratch, isolation: psycopg.IsolationLevel | None) -> psycopg.Connection:
    """A session of the learner's role; with `isolation`, left idle inside a
    transaction after one SELECT."""
    conn = scratch.connect(autocommit=isolation is None)
    run(conn, "exercise/name_session", {"name": APP})
    if isolation is not None:
        conn.commit()  # the name is set; the transaction that stays open starts below
        conn.isolation_level = isolation
        run(conn, "lab/open_transaction")
    return conn


@dataclass
class HolderScene:
    """One scene's sessions, what the learner's query named, and VACUUM's counts."""

    culprit: int
    names: dict[int, str]
    found: list[int] = field(default_factory=list)
    kinds: dict[int, str] = field(default_factory=dict)  # backend_type of found pids the scene did not open
    held_before: int = 0
    removed: int = 0
    held_after: int = 0

    @property
    def named(self) -> bool:
        return self.culprit in self.found

    def counted(self, pid: int) -> bool:
        """Whether naming `pid` counts: a session of the scene's, or any other client session.
        An autovacuum worker that happened to visit the scratch database does not count, nor a
        process gone or of unknown kind by the time the checker asked (see session_kinds.sql)."""
        return pid in self.names or self.kinds.get(pid) == "client backend"

    @property
    def extra(self) -> list[int]:
        """The sessions named beside the culprit that count: decoys, the idle one, the query's own."""
        return [pid for pid in dict.fromkeys(self.found) if pid != self.culprit and self.counted(pid)]

    @property
    def others(self) -> list[int]:
        """The sessions named that do not count (an autovacuum worker, say)."""
        return [pid for pid in dict.fromkeys(self.found) if not self.counted(pid)]


def stage_scene(scratch: Scratch, owner: psycopg.Connection, xid_holder: bool, staged: list) -> HolderScene:
    """Open the scene's sessions, the decoy before the culprit in the snapshot
    scene and after it in the xid scene, and make JOBS dead versions after them all."""
    run(owner, "lab/seed_jobs", {"kind": "send_receipt", "count": JOBS})
    rc, rr = psycopg.IsolationLevel.READ_COMMITTED, psycopg.IsolationLevel.REPEATABLE_READ
    first = session(scratch, rc)  # the xid scene's culprit, or the snapshot scene's decoy
    second = session(scratch, rc if xid_holder else rr)
    idle = session(scratch, None)
    staged += [first, second, idle]
    culprit, decoy = (first, second) if xid_holder else (second, first)
    if xid_holder:  # it writes job 1, done in the scene before, so finishing the ready jobs waits on no lock
        run(culprit, "exercise/touch_job", {"id": 1})
    held = (
        "a READ COMMITTED transaction idle after a write (its xid)"
        if xid_holder
        else "the idle REPEATABLE READ transaction (its snapshot)"
    )
    when = "after" if xid_holder else "before"
    names = {
        culprit.info.backend_pid: held,
        decoy.info.backend_pid: f"an idle READ COMMITTED transaction, opened {when} it, which holds nothing",
        idle.info.backend_pid: "an idle session outside any transaction",
    }
    run(owner, "exercise/finish_ready_jobs")  # dead versions, made after every staged session began
    return HolderScene(culprit.info.backend_pid, names)


def end_session(conn: psycopg.Connection) -> None:
    """Roll back (which returns once the server has let go), then close."""
    if not conn.closed:
        try:
            conn.rollback()
        except psycopg.Error:
            pass  # a session the server already ended: closing is all that is left
        conn.close()


def play(scratch: Scratch, learner: LearnerSQL, scene: HolderScene, staged: list) -> None:
    """Run the learner's query, end the sessions it named, VACUUM again."""
    _, scene.held_before = vacuum_counts(scratch)
    with scratch.connect() as conn:
        columns = parse(conn, learner)
        own_pid = conn.info.backend_pid
        rows = execute(conn, learner, {}).fetchall()
    column = columns.index("pid") if "pid" in columns else 0
    scene.found = [row[column] for row in rows]
    if not all(isinstance(pid, int) for pid in scene.found):
        raise Refused("return the sessions' pids: a column named pid, from pg_stat_activity")
    scene.names[own_pid] = "your query's own session"
    unknown = [pid for pid in scene.found if pid not in scene.names]
    if unknown:  # asked at once, while they still run: as the owner, who may see their kinds
        with scratch.db.connection() as owner:
            scene.kinds = dict(run(owner, "exercise/session_kinds", {"pids": unknown}).fetchall())
    for conn in staged:  # end the sessions the query named, as a DBA would
        if not conn.closed and conn.info.backend_pid in scene.found:
            # ROLLBACK returns once the server has dropped the snapshot; a bare
            # close() does not wait, and VACUUM straight after could still be held back.
            conn.rollback()
            conn.close()
    scene.removed, scene.held_after = vacuum_counts(scratch)


def extra_text(extra: list[tuple[HolderScene, int]]) -> str:
    """The sessions named that should not have been: the scenes' own one by one, then
    every other client session in one item, since a busy server can have many."""
    staged = [f"pid {pid}: {sc.names[pid]}" for sc, pid in extra if pid in sc.names]
    others = [str(pid) for sc, pid in extra if pid not in sc.names]
    if len(others) == 1:
        staged.append(f"pid {others[0]}: {NOT_STAGED}")
    elif others:
        staged.append(f"{len(others)} client sessions the scene did not open: pid {', '.join(others)}")
    return "; ".join(staged) or "none"


def check_holder(
    scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None
) -> Verdict:
    if learner.first_word not in ("SELECT", "WITH"):
        raise Refused("this exercise runs one SELECT on pg_stat_activity")
    scenes: list[HolderScene] = []
    with scratch.db.connection() as owner:
        run(owner, "lab/autovacuum_off")
        for xid_holder in (False, True):  # the xid scene writes job 1, which the first scene finished
            staged: list[psycopg.Connection] = []
            try:
                scene = stage_scene(scratch, owner, xid_holder, staged)
                play(scratch, learner, scene, staged)
            finally:
                for conn in staged:  # the next scene starts with nothing held, and sees none of these
                    end_session(conn)
            scenes.append(scene)
            if progress:
                progress(len(scenes), 2)
    missed = [sc for sc in scenes if not sc.named]
    extra = [(sc, pid) for sc in scenes for pid in sc.extra]
    own = any(sc.names.get(pid) == "your query's own session" for sc, pid in extra)
    evidence = [
        Evidence(
            "VACUUM before: dead versions kept for an open transaction",
            "; ".join(f"{sc.held_before:,} of {JOBS:,} dead but not yet removable" for sc in scenes),
            None,
        ),
        Evidence(
            "names the session holding VACUUM back, in each scene",
            "; ".join(
                f"pid {sc.culprit} ({sc.names[sc.culprit]}) {'found' if sc.named else 'missing'}"
                for sc in scenes
            ),
            not missed,
        ),
        Evidence(
            "every session it names holds VACUUM back",
            extra_text(extra),
            not extra,
        ),
        *(
            [
                Evidence(
                    "also listed, not counted: processes the scenes did not open, not client sessions",
                    "; ".join(
                        f"pid {pid} ({sc.kinds.get(pid) or 'gone'})" for sc in scenes for pid in sc.others
                    ),
                    None,
                )
            ]
            if any(sc.others for sc in scenes)
            else []
        ),
        Evidence(
            "VACUUM after ending the sessions you named",
            "; ".join(
                f"{sc.removed:,} removed, {sc.held_after:,} dead but not yet removable" for sc in scenes
            ),
            all(sc.held_after == 0 and sc.removed >= JOBS for sc in scenes),
        ),
    ]
    if missed and not scenes[-1].named and scenes[0].named:  # the xid holder alone was missed
        hint = (
            "a transaction that wrote holds VACUUM back by its transaction id even with no snapshot: "
            "ask for backend_xmin IS NOT NULL OR backend_xid IS NOT NULL."
        )
    elif missed and extra:
        hint = (
            "a session's state and age do not say what holds VACUUM back: the oldest idle transaction "
            "here held nothing, and the one that did was not named. Ask what each session holds: "
            "backend_xmin (a snapshot) or backend_xid (a write) IS NOT NULL."
        )
    elif missed:
        hint = "look for a session that holds a snapshot: backend_xmin (or backend_xid) IS NOT NULL."
    elif own:
        hint = (
            "your query's own session holds a snapshot while it runs: leave it out with "
            "pid <> pg_backend_pid()."
        )
    else:
        hint = (
            "state = 'idle in transaction' also names sessions that hold nothing back: a READ COMMITTED "
            "transaction idle between statements has no snapshot and, until it writes, no transaction id. "
            "Ask for backend_xmin IS NOT NULL OR backend_xid IS NOT NULL instead."
        )
    return Verdict.from_evidence(
        exercise,
        evidence,
        hint,
        # culprit, found, held_before and held_after: the snapshot scene's, as the lesson tells it.
        numbers={
            "culprit": scenes[0].culprit,
            "found": scenes[0].found,
            "held_before": scenes[0].held_before,
            "held_after": scenes[0].held_after,
            "scenes": [
                {
                    "culprit": sc.culprit,
                    "found": sc.found,
                    "extra": sc.extra,
                    "held_before": sc.held_before,
                    "held_after": sc.held_after,
                }
                for sc in scenes
            ],
        },
        passed_headline="your query names the session holding VACUUM back, and ending it let VACUUM work",
        passed_hint=(
            "backend_xmin and backend_xid mark what holds VACUUM back; ending that session lets VACUUM work."
        ),
        server_version=scratch.db.server.version,
        guide=figure(18),
    )
