"""A discrete-event simulation of one tenant's hot items on DynamoDB: what 500 executes a second
and 200 agents each sending a step batch a second meet there, as the platform writes them now
and with its counters sharded.

Run from the repository root (seeded: the same figures every run; about a minute):

    .venv/bin/python benchmarks/sim_tenant_dynamodb.py
    .venv/bin/python benchmarks/sim_tenant_dynamodb.py --quick   # 5 simulated seconds

What DynamoDB documents, and the model takes from it (developer guide, as of 2026-12):
- "Transaction conflict handling": a TransactWriteItems with an item another one in flight holds
  is cancelled (TransactionConflict); a PutItem/UpdateItem of such an item fails with
  TransactionConflictException. Reads are not refused.
- "Capacity management for transactions": a transactional write costs 2 WCU per KB of each item
  (prepare and commit); a standard write 1 WCU per KB.
- "Partitions and data distribution" / "Burst and adaptive capacity": one partition serves at
  most 1,000 WCU (and 3,000 RCU) a second, and one item lives in one partition: adaptive capacity
  can isolate a hot item on a partition of its own, never give it more than that. Throttled
  requests fail (ThrottlingException / ProvisionedThroughputExceeded) and the SDK retries them.

What the model assumes (DynamoDB publishes no latencies; these are the usual single-digit
milliseconds, stated so they can be changed): a single-item write answers in 6 ms (3 ms each
way), a consistent read in 4 ms, a transaction in 15 ms (two rounds over its items), holding
its items from its arrival until it commits (12 ms); a refused request answers in 6 ms. Each
latency varies uniformly by +-30 %. boto3's standard retry mode (the platform's client:
2 attempts) retries a throttled request once after a random pause of up to 1 s; then the call
fails (503). A conflict is retried by the platform's loop (platform/access/retry.py: 32
attempts, full-jitter pauses doubling from 1 ms to 20 ms); a call that loses all 32 fails.

The calls, as the platform writes them (docs/tenant-throughput.md has the items):
- execute: the rate counter of the second (an UpdateItem), the usage read (GetItem), then the
  charge: one transaction of the usage period item, the usage record and the Idempotency-Key
  claim (1 KB each or less).
- a step batch: one transaction of the rate counter, the period item, the record, the agent
  (4 KB: a monitor state) and its run's config (10 agents a run).
Each agent sends its next batch one second after the previous one was answered (a batch a
second when the store keeps up); executes arrive at random (Poisson) at their rate.

Designs: "unsharded" (one rate counter item a second, one period item a month, on every call:
the design before issue 23) and "built 20/32" (store/shards.py at the enterprise plan's 500/s:
the rate counter of a second split into 20 items, the month's credits into 32, a call writing
one of each chosen at random, another on each retry). Per design and load: calls answered a
second, failed a second, the conflicts per attempt, the retries per call, p50 and p99 latency,
and the WCU a second of the hottest item.
"""

from __future__ import annotations

import argparse
import heapq
import random
import statistics
from collections import Counter
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from functools import partial

WRITE_S, READ_S, TRANSACT_S, HOLD_S, REFUSED_S = 0.006, 0.004, 0.015, 0.012, 0.006
JITTER = 0.3
ITEM_WCU_PER_S = 1000.0
ATTEMPTS, BACKOFF_S, BACKOFF_CAP_S = 32, 0.001, 0.02
SDK_RETRY_MAX_S = 1.0
AGENTS_PER_RUN = 10
WARMUP_S = 2.0

Process = Generator[float, None, bool]


@dataclass
class Item:
    held_until: float = 0.0
    tokens: float = ITEM_WCU_PER_S
    refilled: float = 0.0
    used: float = 0.0  # WCU consumed after the warm-up


@dataclass
class Sim:
    rng: random.Random
    rate_shards: int  # 1 and 1: the design before the shards
    credit_shards: int
    now: float = 0.0
    queue: list[tuple[float, int, Generator[float, None, bool]]] = field(default_factory=list)
    items: dict[str, Item] = field(default_factory=dict)
    seq: int = 0
    stats: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)

    def start(self, process: Generator[float, None, bool], at: float) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (at, self.seq, process))

    def run(self, until: float) -> None:
        while self.queue and self.queue[0][0] <= until:
            self.now, _, process = heapq.heappop(self.queue)
            try:
                delay = next(process)
            except StopIteration:
                continue
            self.start(process, self.now + delay)

    def late(self, seconds: float) -> float:
        return seconds * self.rng.uniform(1 - JITTER, 1 + JITTER)

    def item(self, name: str) -> Item:
        item = self.items.setdefault(name, Item(refilled=self.now))
        item.tokens = min(ITEM_WCU_PER_S,
                          item.tokens + (self.now - item.refilled) * ITEM_WCU_PER_S)
        item.refilled = self.now
        return item

    def counter(self, name: str) -> str:
        shards = self.rate_shards if name.startswith("rate#") else self.credit_shards
        return name if shards == 1 else f"{name}#{self.rng.randrange(shards)}"

    def spend(self, items: list[Item], wcu: float) -> None:
        for item in items:
            item.tokens -= wcu
            if self.now >= WARMUP_S:
                item.used += wcu

    def write(self, names: Callable[[], list[str]], wcu: float, transaction: bool) -> Process:
        """One write (a transaction of ``names()`` or an UpdateItem of the one name), with the
        SDK's retry of throttling and the platform's of conflicts; True when it was written."""
        throttled = 0
        for attempt in range(ATTEMPTS):
            self.stats["attempts"] += 1
            yield self.late(REFUSED_S / 2)  # to the store
            items = [self.item(n) for n in names()]
            if any(i.held_until > self.now for i in items):
                self.stats["conflicts"] += 1
                yield self.late(REFUSED_S / 2)
                if attempt + 1 < ATTEMPTS:
                    self.stats["retries"] += 1
                    yield self.rng.uniform(0, min(BACKOFF_CAP_S, BACKOFF_S * 2 ** attempt))
                continue
            if any(i.tokens < wcu for i in items):
                self.stats["throttled"] += 1
                yield self.late(REFUSED_S / 2)
                throttled += 1
                if throttled == 2:
                    return False
                yield self.rng.uniform(0, SDK_RETRY_MAX_S)
                continue
            self.spend(items, wcu)
            if transaction:
                hold = self.late(HOLD_S)
                for i in items:
                    i.held_until = self.now + hold
                yield hold + self.late(TRANSACT_S - HOLD_S - REFUSED_S / 2)
            else:
                yield self.late(WRITE_S - REFUSED_S / 2)
            return True
        return False

    def finish(self, began: float, ok: bool) -> None:
        if began < WARMUP_S:
            return
        if ok:
            self.stats["done"] += 1
            self.latencies.append(self.now - began)
        else:
            self.stats["failed"] += 1


def execute(sim: Sim, n: int) -> Process:
    began = sim.now
    second = int(sim.now)
    ok = yield from sim.write(lambda: [sim.counter(f"rate#{second}")], 1, False)
    if ok:
        yield sim.late(READ_S)
        ok = yield from sim.write(lambda: [sim.counter("period"), f"rec#e{n}", f"once#e{n}"],
                                  2, True)
    sim.finish(began, ok)
    return ok


def batch_items(sim: Sim, second: int, own: list[str]) -> list[str]:
    return [sim.counter(f"rate#{second}"), sim.counter("period"), *own]


def agent(sim: Sim, a: int, until: float) -> Process:
    batch = 0
    while sim.now < until:
        began = sim.now
        second = int(sim.now)
        names = [f"rec#a{a}-{batch}", f"agent#{a}", f"config#{a // AGENTS_PER_RUN}"]
        ok = yield from sim.write(partial(batch_items, sim, second, names), 4, True)
        sim.finish(began, ok)
        batch += 1
        yield max(0.0, 1.0 - (sim.now - began))
    return True


def simulate(shards: tuple[int, int], rps: float, agents: int, seconds: float, seed: int
             ) -> dict[str, float]:
    sim = Sim(random.Random(seed), *shards)
    t, n = 0.0, 0
    while rps and t < seconds:
        t += sim.rng.expovariate(rps)
        sim.start(execute(sim, n), t)
        n += 1
    for a in range(agents):
        sim.start(agent(sim, a, seconds), sim.rng.uniform(0, 1))
    sim.run(seconds + 60)  # the calls under way at the end finish
    measured = seconds - WARMUP_S
    lat = sorted(sim.latencies)
    hottest = max((i.used for i in sim.items.values()), default=0.0)
    return {
        "offered": rps + agents, "done": sim.stats["done"] / measured,
        "failed": sim.stats["failed"] / measured,
        "conflicts": sim.stats["conflicts"] / max(1, sim.stats["attempts"]),
        "retries": sim.stats["retries"] / max(1, sim.stats["done"] + sim.stats["failed"]),
        "throttled": sim.stats["throttled"] / measured,
        "p50": statistics.median(lat) * 1e3 if lat else float("nan"),
        "p99": lat[int(0.99 * (len(lat) - 1))] * 1e3 if lat else float("nan"),
        "hot_wcu": hottest / measured,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    seconds = 5.0 if args.quick else 20.0
    loads = (("500 executes/s", 500, 0), ("200 agents, a batch/s each", 0, 200),
             ("both at once", 500, 200))
    print(f"{seconds:g} simulated seconds each ({WARMUP_S:g} s warm-up not counted)")
    print(f"  {'design':<11} {'load':<28} {'answered/s':>10} {'failed/s':>9} {'conflicts':>9} "
          f"{'retries':>8} {'thrott/s':>8} {'p50 ms':>7} {'p99 ms':>8} {'hot WCU/s':>9}")
    # (rate shards, credit shards): before the shards; the built design at the enterprise
    # plan's 500/s (store/shards.py: ceil(500 / 25) rate shards, 32 credit shards).
    designs = {"unsharded": (1, 1), "built 20/32": (20, 32)}
    for design, shards in designs.items():
        for label, rps, agents in loads:
            r = simulate(shards, rps, agents, seconds, seed=23)
            print(f"  {design:<11} {label:<28} {r['done']:10.1f} {r['failed']:9.1f} "
                  f"{r['conflicts']:8.1%} {r['retries']:8.2f} {r['throttled']:8.1f} "
                  f"{r['p50']:7.1f} {r['p99']:8.1f} {r['hot_wcu']:9.0f}")


if __name__ == "__main__":
    main()
