"""Lesson 11: what per-key order costs. The same backlog relayed with the per-key
claim and with the plain claim, and the per-key claim's plan at the lesson's
backlog and at ten times it. `RelayDrain` and `KeyClaimPlan` are plain records."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ... import checks, queue
from ...databases import Database
from ...guide import GuideFigure
from ...infra import broker
from ...outbox import (
    JETSTREAM_DUPLICATE_WINDOW_S,
    OUTBOX_KEY_INDEX,
    OUTBOX_KIND,
    RELAY_LEASE_S,
    Relay,
    consumed,
    prepare_outbox,
)
from ...statements import explain_analyze, run
from ..results import Comparison, Result, finish
from .orders import EVENTS, GUIDE_OUTBOX, OrderDesk


@dataclass(frozen=True)
class RelayDrain:
    """One relay draining a backlog: claims made, time in the claim, time in all."""

    claim: str
    events: int
    claims: int
    claim_s: float
    elapsed_s: float
    out_of_order: int

    @property
    def events_per_s(self) -> float:
        return self.events / self.elapsed_s if self.elapsed_s else 0.0


@dataclass(kw_only=True)
class KeyOrderCost(Result):
    """The same backlog relayed with the per-key claim and with the plain claim."""

    orders: int
    rows: list[RelayDrain]
    guide: GuideFigure = GUIDE_OUTBOX

    def comparison(self) -> list[Comparison]:
        return [
            (
                f"{r.claim}: events/s, claims, ms per claim",
                None,
                f"{r.events_per_s:,.0f}, {r.claims}, {1000 * r.claim_s / max(r.claims, 1):.1f}",
                None,
            )
            for r in self.rows
        ]

    def summary(self) -> str:
        lines = [f"a backlog of {self.orders} orders x {len(EVENTS)} events, one relay, batch 100:"]
        for r in self.rows:
            lines.append(
                f"  {r.claim}: {r.events} events in {r.elapsed_s:.2f} s ({r.events_per_s:,.0f}/s), "
                f"{r.claims} claims, {1000 * r.claim_s / max(r.claims, 1):.1f} ms each, "
                f"{r.out_of_order} out of order"
            )
        return "\n".join(lines + self.footer())


def key_order_cost(db: Database, *, orders: int = 500, nats: broker.Broker | None = None) -> KeyOrderCost:
    """Write `orders` orders' three events each (all unsent, as after an outage), then
    relay them once with claim_in_key_order.sql and once with the plain claim.sql."""
    checks.whole_number("orders", orders, 1, 100_000)
    nats = nats or broker.Broker()
    rows = []
    with broker.Client(nats.start().url, name="key-order") as client, db.connection() as conn:
        for in_key_order in (True, False):
            prepare_outbox(conn, client, duplicate_window_s=JETSTREAM_DUPLICATE_WINDOW_S)
            desk = OrderDesk(db)
            with conn.transaction():
                while len(desk.written) < orders * len(EVENTS):
                    desk.step(conn)
            run(conn, "lab/analyze_jobs")
            relay = Relay(db, client, in_key_order=in_key_order)
            began = time.perf_counter()
            while relay.run_once(conn)[0]:
                pass
            elapsed = time.perf_counter() - began
            consumer = consumed(client)
            rows.append(
                RelayDrain(
                    "per-key claim" if in_key_order else "plain claim",
                    relay.stats.sent,
                    relay.stats.claims,
                    relay.stats.claim_s,
                    elapsed,
                    consumer.out_of_order,
                )
            )
    return finish(KeyOrderCost, db, orders=orders, rows=rows)


# --- the per-key claim's plan, at the lesson's backlog and at ten times it --------------


@dataclass(frozen=True)
class KeyClaimPlan:
    """EXPLAIN (ANALYZE, BUFFERS) of one per-key claim on a backlog: candidates the
    claim walked in jobs_ready_idx, probes of the key index, heads it claimed, and the
    buffers of the claim's CTE (the walk and the probes, before the UPDATE)."""

    unsent: int
    batch: int
    walked: int
    probes: int
    claimed: int
    cte_buffers: int


def plan_nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    """A JSON plan node and every node under it."""
    return [node] + [n for child in node.get("Plans", []) for n in plan_nodes(child)]


def key_claim_plan(db: Database, *, orders: int, batch: int = 100) -> KeyClaimPlan:
    """Seed a backlog of `orders` orders x 3 unsent events (an order's events written
    together), analyze, and read the per-key claim's plan, run once and rolled back."""
    checks.whole_number("orders", orders, 1, 1_000_000)
    checks.whole_number("batch", batch, 1, queue.MAX_BATCH)
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
        run(conn, "lab/drop_index", idents={"name": OUTBOX_KEY_INDEX})
        run(conn, "outbox_key_index")
        run(conn, "lab/seed_order_events", {"kind": OUTBOX_KIND, "orders": orders})
        run(conn, "lab/analyze_jobs")
        params = {"kind": OUTBOX_KIND, "batch": batch, "lease": timedelta(seconds=RELAY_LEASE_S)}
        plan = explain_analyze(conn, "claim_in_key_order", params)
    nodes = plan_nodes(plan)

    def index_scans(index: str) -> list[dict[str, Any]]:
        return [n for n in nodes if n.get("Index Name") == index]

    walk = index_scans("jobs_ready_idx")
    probes = index_scans(OUTBOX_KEY_INDEX)
    cte = next(n for n in nodes if n.get("Subplan Name") == "CTE next")
    return KeyClaimPlan(
        unsent=3 * orders,
        batch=batch,
        walked=int(walk[0]["Actual Rows"]) if walk else 3 * orders,  # no index walk: every row read
        probes=int(probes[0]["Actual Loops"]) if probes else 0,
        claimed=int(plan["Actual Rows"]),
        cte_buffers=int(cte["Shared Hit Blocks"] + cte["Shared Read Blocks"]),
    )
