"""The runs API's rules (spec/loop_safety.md, docs/runs.md): the stateful run monitor.

Each agent of a run has its own monitor state (loopsense.core.monitor, the same core as the
stateless skill agent.run_monitor) in one item of the runs table. A step batch reads the agent
and the run's config (one BatchGetItem), applies the steps, and writes everything in one
transaction: the tenant's rate-limit counter, the charge (1 credit and a usage record), the
agent on condition that its version is still the one read, and the config's extended life.
A batch that loses to a concurrent one reads again and is applied again (access/retry.py), so
no step is lost or applied twice; then RUN_WRITE_CONFLICT (retryable). An Idempotency-Key is kept in
the agent's item with its answer: a retry is answered from there, applied and charged once.

Who may: the key must be granted agent.run_monitor and the tenant's plan must include it (team
and enterprise), as for the stateless skill. The tenant's settings come with the authorizer's
context (its thresholds map): the monitor's thresholds, ``run_retention_days`` and
``monitor_disabled``. While the monitor is off, steps are validated and answered
``monitor_disabled: true``, and nothing is stored or charged.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints

from loopsense.core.canonical import CanonicalError
from loopsense.core.instants import DAY_S, stamp
from loopsense.core.monitor.config import MonitorConfig
from loopsense.core.monitor.monitor import inspect, new_state, observe, reset
from loopsense.core.monitor.run_view import agent_tag
from loopsense.errors import LoopsenseError, validation_error
from loopsense.platform.access.catalog import CATALOG
from loopsense.platform.access.gate import Admitted, Gate, Offer
from loopsense.platform.access.idempotency import digest, remember, replay
from loopsense.platform.access.plans import quota_exceeded, rate_limited, resolve_plan
from loopsense.platform.access.retry import until_written
from loopsense.platform.http.auth import Identity
from loopsense.platform.runs.store import (
    AgentItem,
    CallsItem,
    ConfigItem,
    RunStore,
    WriteRefused,
    encode,
)
from loopsense.skills import run_monitor
from loopsense.skills.thresholds import THRESHOLDS
from loopsense.store.accounts import Accounts, Plan
from loopsense.store.metering import Metering, UsageRecord, period_of
from loopsense.store.shards import CREDIT_SHARDS, Credits, any_shard
from loopsense.validation import PRINTABLE_ID, SAFE_ID, STRICT, validate

SKILL = CATALOG["agent.run_monitor"]  # the plan and grant rules of the runs API are its
OFFER = Offer(SKILL.key, "the runs API", "team and enterprise plans")
USAGE_KEY = "runs.steps"  # usage records of step batches
COST = 1  # credits per accepted step batch (docs/decisions.md)
MAX_BATCH = 500
MAX_STEPS_BODY = 2 * 1024 * 1024
MAX_BODY = 64 * 1024  # register, reset, config
MAX_STORED = 350_000  # bytes of an agent's compressed body (DynamoDB items: 400 KB)
MAX_BREAK_AGENTS = 8  # agents a reset or a break without agentId resets (one transaction)
PLAN_CACHE_S = 60.0

RUN_ID = SAFE_ID
AGENT_ID = PRINTABLE_ID
INVALID = "RUN_BATCH_INVALID"


def check_run_id(run_id: str | None) -> str:
    if not run_id or not RUN_ID.match(run_id):
        raise validation_error("runId", "must be 1 to 128 characters among A-Z a-z 0-9 . _ : -")
    return run_id


def check_agent_id(agent_id: Any, path: str, code: str = "VALIDATION_ERROR") -> str:
    if not isinstance(agent_id, str) or not AGENT_ID.match(agent_id):
        raise validation_error(path, "must be 1 to 128 printable ASCII characters, no spaces",
                               code)
    return agent_id


# --------------------------------------------------------------------------------------------
# Bodies


class StepBatch(BaseModel):
    model_config = STRICT
    steps: list[run_monitor.Step] = Field(min_length=1, max_length=MAX_BATCH)


class Registration(BaseModel):
    model_config = STRICT
    agentId: str
    role: Annotated[str, StringConstraints(max_length=128)] | None = None
    objectiveEmbedding: run_monitor.Embedding | None = None


class ResetBody(BaseModel):
    model_config = STRICT
    agentId: str | None = None


def parse_steps(raw: Any) -> tuple[str, list[dict[str, Any]]]:
    """One step (an object with ``kind``) or ``{"steps": [...]}`` (1..500): the agent and the
    steps. A batch is of one agent; paths name ``steps.<i>.<field>``."""
    if isinstance(raw, dict) and "steps" not in raw:
        raw = {"steps": [raw]}
    if isinstance(raw, dict) and isinstance(raw.get("steps"), list) and \
            len(raw["steps"]) > MAX_BATCH:
        raise validation_error("steps", f"must have 1 to {MAX_BATCH} steps (send more batches)",
                               INVALID)
    steps = validate(StepBatch, raw, prefix="").steps
    agent = check_agent_id(steps[0].get("agentId"), "steps.0.agentId", INVALID)
    for index, step in enumerate(steps):
        if step.get("agentId") != agent:
            raise validation_error(f"steps.{index}.agentId",
                                   "is required and must be the same in every step of a batch "
                                   "(one call per agent)", INVALID)
        if step["kind"] == "tool_call" and "action" not in step:
            raise validation_error(f"steps.{index}.action", "is required for a tool_call",
                                   INVALID)
    return agent, [dict(s) for s in steps]


def parse_config(raw: Any, tenant: Mapping[str, Any]) -> MonitorConfig:
    """A run's config: the stateless skill's ``config``, checked the same way; the objective is
    an agent's (POST /v1/runs/{runId}/agents)."""
    if not isinstance(raw, dict):
        raise validation_error("config", "must be a JSON object of settings")
    if "objective_embedding" in raw:
        raise validation_error("config.objective_embedding",
                               "is set per agent here (POST /v1/runs/{runId}/agents)")
    return run_monitor.resolve_config(raw, tenant, "config")


# --------------------------------------------------------------------------------------------
# The service


class Caller(Admitted):
    """A caller the gate admitted to the runs API, with the two settings that are the runs
    API's own (skills/thresholds.py)."""

    @property
    def monitor_disabled(self) -> bool:
        return bool(self.thresholds.get("monitor_disabled", False))

    @property
    def retention_days(self) -> int:
        return int(self.thresholds.get("run_retention_days", THRESHOLDS["run_retention_days"]
                                       .default))


class PlanCache:
    """Plans by name, kept PLAN_CACHE_S per process: the hot path reads no plan row (an
    operator's change of a plan reaches the runs API within a minute; docs/decisions.md)."""

    def __init__(self, accounts: Accounts, clock: Callable[[], float] = time.monotonic) -> None:
        self.accounts, self.clock = accounts, clock
        self._plans: dict[str, tuple[float, Plan]] = {}

    def get(self, name: str, fresh: bool = False) -> Plan:
        """The plan, from the cache unless ``fresh`` (read again, and cached)."""
        now = self.clock()
        cached = self._plans.get(name)
        if fresh or cached is None or now - cached[0] > PLAN_CACHE_S:
            cached = (now, resolve_plan(self.accounts, name))
            self._plans[name] = cached
        return cached[1]


class Runs:
    def __init__(self, store: RunStore, accounts: Accounts, metering: Metering,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.store, self.metering, self.clock = store, metering, clock
        self.plans = PlanCache(accounts)
        # ``self.plans`` looked up at each call: a test may hand the service another cache.
        self.gate = Gate(lambda name: self.plans.get(name), metering)

    # who may --------------------------------------------------------------------------------
    def admit(self, identity: Identity) -> Caller:
        admitted = self.gate.admit(identity, OFFER)
        return Caller(admitted.tenant_id, admitted.plan, admitted.thresholds)

    def admission(self, caller: Caller, epoch: int) -> dict[str, Any]:
        return self.gate.admission(caller, epoch)

    def count_request(self, caller: Caller) -> None:
        """Reads count against the rate limit with their own write."""
        self.gate.rate(caller, int(self.clock().timestamp()))

    def retention(self, caller: Caller, expires_at: int) -> dict[str, Any]:
        return {"days": caller.retention_days, "expiresAt": stamp(expires_at * 1000)}

    def expiry(self, caller: Caller, now: datetime) -> int:
        return int(now.timestamp()) + caller.retention_days * DAY_S

    def monitor_config(self, caller: Caller, config: ConfigItem | None, now: int,
                       agent: AgentItem | None) -> MonitorConfig:
        """The monitor's configuration for ``agent``: the run's config (unless expired) over the
        tenant's thresholds, with the agent's objective."""
        raw = config.raw if config is not None and config.expires_at > now else {}  # TTL lags
        resolved = run_monitor.resolve_config(raw, caller.thresholds, "config")
        objective = (agent.body.get("objective") if agent is not None else None) or None
        # Stateful answers may name tools: the tenant's own run, stored by design.
        return replace(resolved, name_tools=True,
                       objective=tuple(objective) if objective else None)

    def write(self, caller: Caller, actions: list[dict[str, Any]], charged: Credits | None,
              now: datetime, room: bool = True) -> bool:
        """Write ``actions`` (after the rate counter, and the charge on ``charged`` when one);
        False when a concurrent write got there first (read again: a full shard of the credits
        too, which the next attempt moves from, unless no shard had ``room``: QUOTA_EXCEEDED,
        after the rate limit's own refusal). A full rate shard is tried once more on another
        shard of the second."""
        other_shard_tried = False
        while True:
            try:
                self.store.write(actions)
            except WriteRefused as refused:
                if refused.failed(0):
                    other = None if other_shard_tried else \
                        self.gate.other_admission(caller, actions[0])
                    if other is None:
                        raise rate_limited(caller.plan) from None
                    actions, other_shard_tried = [other, *actions[1:]], True
                    continue
                if charged is not None and refused.failed(1) and (
                        charged.shard is None or not room):  # the month's one item, or all
                    raise quota_exceeded(caller.plan, now) from None
                return False
            return True

    def credits(self, caller: Caller, read: Credits) -> tuple[Credits, bool]:
        """Where a step batch is charged (``Metering.where``), and whether any shard has room
        (if not, the write is still sent, so that a rate limit's refusal comes first, as the
        spec orders the checks; its charge refuses it). A shard split from another quota than
        the cached plan's: the plan is read afresh first, so only a fresh quota splits again."""
        if read.shard is not None and read.quota is not None and \
                read.quota != caller.plan.credits_per_month:
            caller = replace(caller, plan=self.plans.get(caller.plan.name, fresh=True))
        where = self.metering.where(caller.tenant_id, read, caller.plan.credits_per_month, COST)
        return (read, False) if where is None else (where, True)

    # POST /v1/runs/{runId}/steps ---------------------------------------------------------------
    def steps(self, identity: Identity, run_id: str, raw: Any, body: bytes,
              idempotency_key: str | None) -> dict[str, Any]:
        started = time.perf_counter()
        check_run_id(run_id)
        agent_id, steps = parse_steps(raw)
        caller = self.admit(identity)
        if caller.monitor_disabled:
            self.count_request(caller)
            return {"runId": run_id, "agentId": agent_id, "accepted": len(steps),
                    "monitor_disabled": True}
        key = digest(idempotency_key) if idempotency_key is not None else None
        body_digest = digest(body)

        def attempt() -> dict[str, Any] | None:
            now = self.clock()
            epoch = int(now.timestamp())
            period, shard = period_of(now), any_shard(CREDIT_SHARDS)
            agent, config, calls, usage = self.store.agent_config_and(
                caller.tenant_id, run_id, agent_id, epoch, {self.metering.s.usage_table: (
                    self.metering.credit_keys(caller.tenant_id, period, shard))})
            if config is not None and config.expires_at <= epoch:
                config = None  # expired, not yet deleted: neither applied nor kept alive
            if agent is not None and key is not None:
                made = replay(agent.body.get("recent", []), key, body_digest, epoch)
                if made is not None:
                    return dict(made)
            credits, room = self.credits(caller, Metering.credits_found(period, shard, usage))
            current = current_agent(agent, agent_id, epoch)
            made = calls.body["made"]
            answer = self._apply(caller, current, config, steps, run_id, now, calls)
            expires = self.expiry(caller, now)
            answer["retention"] = self.retention(caller, expires)
            if key is not None:
                current.body["recent"] = remember(current.body.get("recent", []), key,
                                                  body_digest, epoch, answer)
            record = UsageRecord(answer["executionId"], USAGE_KEY, SKILL.version, COST,
                                 stamp(now),
                                 int((time.perf_counter() - started) * 1000), "succeeded")
            actions = [self.admission(caller, epoch),
                       *self.metering.charge_items(
                           caller.tenant_id, credits, caller.plan.credits_per_month
                           if credits.quota is None else credits.quota, record),
                       self.store.put_agent(caller.tenant_id, run_id, current, encoded(current),
                                            stamp(now), expires)]
            if config is not None:
                actions.append(self.store.keep_config(caller.tenant_id, run_id, config,
                                                      expires))
            if calls.body["made"] != made:  # the batch counted calls in the run's view
                actions.append(self.store.put_calls(caller.tenant_id, run_id, calls,
                                                    stamp(now), expires))
            if self.write(caller, actions, credits, now, room):
                return answer
            return None

        return until_written(attempt, write_conflict)

    def _apply(self, caller: Caller, agent: AgentItem, config_item: ConfigItem | None,
               steps: list[dict[str, Any]], run_id: str, now: datetime, calls: CallsItem
               ) -> dict[str, Any]:
        config = self.monitor_config(caller, config_item, int(now.timestamp()), agent)
        state = agent.body["monitor"]
        first = state["next"]
        answer = None
        tag = agent_tag(agent.agent_id)
        for offset, step in enumerate(steps):
            try:
                state, answer = observe(state, step, config, view=calls.body, agent=tag)
            except CanonicalError as exc:
                raise validation_error(f"steps.{offset}", exc.issue, INVALID) from None
        assert answer is not None
        signal = answer.signal()
        return {"runId": run_id, "agentId": agent.agent_id, "accepted": len(steps),
                "firstIndex": first, "sequence": state["next"],
                "segmentStart": state["segmentStart"], "signals": answer.signals(),
                "findings": signal["findings"], "recommendation": signal["recommendation"],
                "executionId": str(uuid.uuid4()), "billing": {"credits": COST}}

    # GET /v1/runs/{runId}/signal ---------------------------------------------------------------
    def signal(self, identity: Identity, run_id: str, agent_id: str | None) -> dict[str, Any]:
        check_run_id(run_id)
        agent_id = check_agent_id(agent_id, "agentId")
        caller = self.admit(identity)
        self.count_request(caller)
        now = self.clock()
        epoch = int(now.timestamp())
        if caller.monitor_disabled:
            return {"runId": run_id, "agentId": agent_id, "monitor_disabled": True,
                    "signal": None}
        agent, config_item, calls = self.store.agent_and_config(caller.tenant_id, run_id,
                                                                agent_id, epoch)
        if agent is None or not agent.live(epoch):
            raise agent_not_found()
        config = self.monitor_config(caller, config_item, epoch, agent)
        state = agent.body["monitor"]
        return {"runId": run_id, "agentId": agent_id, "monitor_disabled": False,
                "sequence": state["next"], "segmentStart": state["segmentStart"],
                "signal": inspect(state, config, calls.body).signal(),
                "retention": self.retention(caller, agent.expires_at)}

    # POST /v1/runs/{runId}/agents --------------------------------------------------------------
    def register(self, identity: Identity, run_id: str, raw: Any) -> dict[str, Any]:
        check_run_id(run_id)
        body = validate(Registration, raw, prefix="")
        agent_id = check_agent_id(body.agentId, "agentId")
        objective = body.objectiveEmbedding
        if objective is not None and not math.fsum(v * v for v in objective):
            raise validation_error("objectiveEmbedding", "must not be all zeros")
        caller = self.admit(identity)

        def change(agent: AgentItem) -> None:
            agent.role = body.role
            agent.body["objective"] = objective

        agent, expires = self._update_agent(caller, run_id, agent_id, change, create=True)
        return {"runId": run_id, "agentId": agent_id, "role": agent.role,
                "objectiveDimensions": len(objective) if objective else None,
                "sequence": agent.body["monitor"]["next"],
                "retention": self.retention(caller, expires)}

    def _update_agent(self, caller: Caller, run_id: str, agent_id: str,
                      change: Callable[[AgentItem], None], create: bool
                      ) -> tuple[AgentItem, int]:
        """Read, change and conditionally write one agent (with the rate counter)."""

        def attempt() -> tuple[AgentItem, int] | None:
            now = self.clock()
            epoch = int(now.timestamp())
            found = self.store.agent(caller.tenant_id, run_id, agent_id)
            if not create and (found is None or not found.live(epoch)):
                raise agent_not_found()
            agent = current_agent(found, agent_id, epoch)
            change(agent)
            expires = self.expiry(caller, now)
            actions = [self.admission(caller, epoch),
                       self.store.put_agent(caller.tenant_id, run_id, agent, encoded(agent),
                                            stamp(now), expires)]
            if self.write(caller, actions, None, now):
                return agent, expires
            return None

        return until_written(attempt, write_conflict)

    # POST /v1/runs/{runId}/reset ---------------------------------------------------------------
    def reset(self, identity: Identity, run_id: str, raw: Any) -> dict[str, Any]:
        """A reset point for one agent, or for every agent of the run (no agentId, at most
        MAX_BREAK_AGENTS): one transaction, one request against the rate limit."""
        check_run_id(run_id)
        body = validate(ResetBody, raw if raw is not None else {}, prefix="")
        agent_id = check_agent_id(body.agentId, "agentId") if body.agentId is not None else None
        caller = self.admit(identity)

        def attempt() -> dict[str, Any] | None:
            now = self.clock()
            epoch = int(now.timestamp())
            agents = self.agents_to_reset(caller, run_id, agent_id, epoch)
            expires = self.expiry(caller, now)
            actions = [self.admission(caller, epoch)]
            for agent in agents:
                reset(agent.body["monitor"])
                actions.append(self.store.put_agent(caller.tenant_id, run_id, agent,
                                                    encoded(agent),
                                                    stamp(now),
                                                    expires))
            if agent_id is None:  # every agent: the run's view of their calls starts afresh
                actions.append(self.store.drop_calls(caller.tenant_id, run_id))
            if self.write(caller, actions, None, now):
                return {"runId": run_id, "reset": [
                    {"agentId": a.agent_id, "segmentStart": a.body["monitor"]["segmentStart"]}
                    for a in agents]}
            return None

        return until_written(attempt, write_conflict)

    def agents_to_reset(self, caller: Caller, run_id: str, agent_id: str | None, epoch: int
                        ) -> list[AgentItem]:
        """The agent named (RUN_AGENT_NOT_FOUND unless live), or every live agent of the run
        in id order: at most MAX_BREAK_AGENTS, whose writes fit one transaction."""
        if agent_id is not None:
            found = self.store.agent(caller.tenant_id, run_id, agent_id)
            if found is None or not found.live(epoch):
                raise agent_not_found()
            return [found]
        agents = sorted((a for a in self.store.agents(caller.tenant_id, run_id)
                         if a.live(epoch)), key=lambda a: a.agent_id)
        if len(agents) > MAX_BREAK_AGENTS:
            raise validation_error("agentId", f"is required when the run has more than "
                                              f"{MAX_BREAK_AGENTS} live agents (one "
                                              f"transaction resets at most {MAX_BREAK_AGENTS})")
        return agents

    # PUT /v1/runs/{runId}/config ---------------------------------------------------------------
    def set_config(self, identity: Identity, run_id: str, raw: Any) -> dict[str, Any]:
        check_run_id(run_id)
        caller = self.admit(identity)
        parse_config(raw, caller.thresholds)
        now = self.clock()
        expires = self.expiry(caller, now)
        actions = [self.admission(caller, int(now.timestamp())),
                   self.store.put_config(caller.tenant_id, run_id, raw,
                                         stamp(now), expires)]
        if not self.write(caller, actions, None, now):
            raise write_conflict()
        return {"runId": run_id, "config": raw, "retention": self.retention(caller, expires)}


def current_agent(found: AgentItem | None, agent_id: str, epoch: int) -> AgentItem:
    """The agent to apply to: the item read, or a fresh one when there is none or it expired
    (its version still guards the write)."""
    if found is not None and found.live(epoch):
        return found
    version = found.version if found is not None else 0
    return AgentItem(agent_id, version, body={"monitor": new_state(), "objective": None,
                                              "recent": []})


def encoded(agent: AgentItem) -> bytes:
    """The agent's body as stored; refused (nothing written) past MAX_STORED bytes."""
    blob = encode(agent.body)
    if len(blob) > MAX_STORED:
        raise validation_error(
            "steps", f"would grow the agent's stored state past {MAX_STORED} bytes "
                     "(embedding length x history_size): send shorter embeddings or set a "
                     "smaller history_size", INVALID)
    return blob


def agent_not_found() -> LoopsenseError:
    return LoopsenseError("RUN_AGENT_NOT_FOUND", "no such agent in this run")


def write_conflict() -> LoopsenseError:
    return LoopsenseError("RUN_WRITE_CONFLICT",
                          "concurrent writes to this agent kept winning; nothing was applied",
                          retry_after=1)
