"""The runs table (docs/runs.md): every item of a run in one partition, one item per kind.

Keys: ``pk`` = ``<tenantId>#<runId>`` (run ids hold no ``#``, so no two tenants or runs share
a partition), ``sk`` = the item's kind:

- ``AGENT#<agentId>``: one agent's monitor. ``version`` (a write counter: every write of the
  item is conditional on the version it read), ``seq`` (steps applied), ``role`` and ``body``:
  zlib-compressed JSON of {"monitor": the core's state, "objective": the registered objective
  embedding or null, "recent": the last Idempotency-Keys applied [[key digest, body digest,
  answer], ...]}. Compressed: the state is mostly hex keys and unit vectors.
- ``CONFIG``: the run's config (as validated JSON), ``version``.
- ``CALLS``: the run's view of its agents' tool calls (core/monitor/run_view.py, for
  run_repeated_call): ``version`` and ``body``, zlib-compressed JSON, at most 256 keys.
- ``MEMORY``, ``LESSON#<id>``, ``EVENT#<seq>`` (and the run's ``#MEMORY`` partition): working
  memory, lessons and snapshots, the event log (platform/runs/memory_store.py).

Every agent item also carries the keys of the ``byActivity`` index (keys only): ``apk`` (the
tenant id) and ``ask`` (its ``updatedAt``), so a tenant's runs are listed newest activity first
without a Scan (GET /v1/runs, platform/runs/views.py).

Every item carries ``expiresAt`` (epoch seconds, the table's TTL attribute): its last write plus
the tenant's ``run_retention_days``. TTL deletes lazily, so readers treat an item whose
``expiresAt`` has passed as absent (``AgentItem.live``).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from loopsense import jsonio
from loopsense.core.monitor.run_view import new_view
from loopsense.store.dynamo import CONFLICTS, ConditionFailed, Dynamo, from_item, to_item

AGENT = "AGENT#"
CONFIG = "CONFIG"
CALLS = "CALLS"  # sorts between AGENT# and CONFIG: the run's Query reads it with them
ACTIVITY_INDEX = "byActivity"


def partition(tenant_id: str, run_id: str) -> str:
    return f"{tenant_id}#{run_id}"


def run_of(pk: str) -> str:
    """The run of a partition key (a tenant id holds no '#'; a run id may)."""
    return pk.split("#", 1)[1]


def encode(body: dict[str, Any]) -> bytes:
    return zlib.compress(jsonio.dumps(body).encode("utf-8"), 6)


def decode(blob: bytes) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(zlib.decompress(blob))
    return value


@dataclass
class AgentItem:
    agent_id: str
    version: int = 0  # 0: no item yet
    role: str | None = None
    body: dict[str, Any] = field(default_factory=dict)
    expires_at: int = 0
    created_at: str | None = None
    updated_at: str | None = None

    def live(self, now: int) -> bool:
        return self.version > 0 and self.expires_at > now

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> AgentItem:
        blob = item["body"]
        return cls(item["agentId"], int(item["version"]), item.get("role"),
                   decode(bytes(blob.value if hasattr(blob, "value") else blob)),
                   int(item["expiresAt"]), item.get("createdAt"), item.get("updatedAt"))


@dataclass(frozen=True)
class ConfigItem:
    raw: dict[str, Any]
    version: int
    expires_at: int


@dataclass
class CallsItem:
    """The run's view of its agents' calls; version 0: no item yet (or it expired)."""
    body: dict[str, Any]
    version: int = 0
    expires_at: int = 0

    @classmethod
    def from_item(cls, item: dict[str, Any], now: int) -> CallsItem:
        blob = item["body"]
        if int(item["expiresAt"]) <= now:  # expired, not yet deleted: a view afresh
            return cls(new_view(), int(item["version"]))
        return cls(decode(bytes(blob.value if hasattr(blob, "value") else blob)),
                   int(item["version"]), int(item["expiresAt"]))


class WriteRefused(Exception):
    """A transaction was cancelled by a condition; ``reasons`` holds each action's code."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("write refused")
        self.reasons = reasons

    def failed(self, index: int) -> bool:
        """Whether the action at ``index`` failed its condition."""
        return self.reasons[index:index + 1] == ["ConditionalCheckFailed"]


class RunStore:
    def __init__(self, db: Dynamo, table: str) -> None:
        self.db = db
        self.table = table

    def _key(self, tenant_id: str, run_id: str, sk: str) -> dict[str, Any]:
        return {"pk": {"S": partition(tenant_id, run_id)}, "sk": {"S": sk}}

    # reads ---------------------------------------------------------------------------------
    def agent_and_config(self, tenant_id: str, run_id: str, agent_id: str, now: int
                         ) -> tuple[AgentItem | None, ConfigItem | None, CallsItem]:
        """One BatchGetItem (consistent): the agent's item, the run's config and its view of
        the agents' calls."""
        agent, config, calls, _ = self.agent_config_and(tenant_id, run_id, agent_id, now, {})
        return agent, config, calls

    def agent_config_and(self, tenant_id: str, run_id: str, agent_id: str, now: int,
                         also: dict[str, list[dict[str, Any]]]
                         ) -> tuple[AgentItem | None, ConfigItem | None, CallsItem,
                                    list[dict[str, Any]]]:
        """``agent_and_config`` and, in the same BatchGetItem, the items of ``also`` (other
        tables' keys: a step batch's credits), found ones last."""
        keys = [self._key(tenant_id, run_id, AGENT + agent_id),
                self._key(tenant_id, run_id, CONFIG), self._key(tenant_id, run_id, CALLS)]
        request = {self.table: {"Keys": keys, "ConsistentRead": True},
                   **{table: {"Keys": k, "ConsistentRead": True} for table, k in also.items()}}
        pages = self.db.batch("batch_get_item", request, "UnprocessedKeys")
        found = [from_item(i) for page in pages
                 for i in page.get("Responses", {}).get(self.table, [])]
        others = [from_item(i) for page in pages for table in also
                  for i in page.get("Responses", {}).get(table, [])]
        agent = next((AgentItem.from_item(i) for i in found if i["sk"].startswith(AGENT)),
                     None)
        config = next((_config(i) for i in found if i["sk"] == CONFIG), None)
        return agent, config, _calls(found, now), others

    def agent(self, tenant_id: str, run_id: str, agent_id: str) -> AgentItem | None:
        item = self.db.get(self.table, {"pk": partition(tenant_id, run_id),
                                        "sk": AGENT + agent_id})
        return AgentItem.from_item(item) if item else None

    def agents(self, tenant_id: str, run_id: str) -> list[AgentItem]:
        items = self.db.query(
            self.table, ConsistentRead=True,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :agent)",
            ExpressionAttributeValues={":pk": {"S": partition(tenant_id, run_id)},
                                       ":agent": {"S": AGENT}})
        return [AgentItem.from_item(i) for i in items]

    def run(self, tenant_id: str, run_id: str, now: int
            ) -> tuple[list[AgentItem], ConfigItem | None, CallsItem]:
        """One Query (consistent): every agent of the run, its config and its view of the
        agents' calls. ``AGENT#...``, ``CALLS`` and ``CONFIG`` sort in that order and no other
        kind sorts between them (EVENT#, LESSON#, MEMORY)."""
        items = self.db.query(
            self.table, ConsistentRead=True,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :agent AND :config",
            ExpressionAttributeValues={":pk": {"S": partition(tenant_id, run_id)},
                                       ":agent": {"S": AGENT}, ":config": {"S": CONFIG}})
        agents = [AgentItem.from_item(i) for i in items if i["sk"].startswith(AGENT)]
        config = next((_config(i) for i in items if i["sk"] == CONFIG), None)
        return agents, config, _calls(items, now)

    def recent(self, tenant_id: str, limit: int, start: dict[str, Any] | None
               ) -> tuple[list[dict[str, str]], dict[str, Any] | None]:
        """One page of the tenant's agent items by activity, newest first (the byActivity
        index: keys only): ``[{"pk", "sk", "apk", "ask"}]`` and the key to go on from."""
        page = self.db.call(
            "query", TableName=self.table, IndexName=ACTIVITY_INDEX, Limit=limit,
            ScanIndexForward=False, KeyConditionExpression="apk = :t",
            ExpressionAttributeValues={":t": {"S": tenant_id}},
            **({"ExclusiveStartKey": start} if start else {}))
        return [from_item(i) for i in page.get("Items", [])], page.get("LastEvaluatedKey")

    # writes: transaction actions, combined by the caller ------------------------------------
    def put_agent(self, tenant_id: str, run_id: str, agent: AgentItem, blob: bytes, now: str,
                  expires_at: int) -> dict[str, Any]:
        """Put ``agent`` (its body encoded as ``blob``) as version ``agent.version + 1``, if it
        is still at ``agent.version``."""
        values = {"pk": partition(tenant_id, run_id), "sk": AGENT + agent.agent_id,
                  "agentId": agent.agent_id, "role": agent.role, "version": agent.version + 1,
                  "seq": agent.body["monitor"]["next"], "body": blob,
                  "createdAt": agent.created_at or now, "updatedAt": now,
                  "expiresAt": expires_at, "apk": tenant_id, "ask": now}
        return self._put_versioned(values, agent.version)

    def put_config(self, tenant_id: str, run_id: str, raw: dict[str, Any], now: str,
                   expires_at: int) -> dict[str, Any]:
        return {"Update": {
            "TableName": self.table, "Key": self._key(tenant_id, run_id, CONFIG),
            "UpdateExpression": "SET config = :c, updatedAt = :now, expiresAt = :e "
                                "ADD version :one",
            "ExpressionAttributeValues": to_item({":c": jsonio.dumps(raw), ":now": now,
                                                  ":e": expires_at, ":one": 1})}}

    def keep_config(self, tenant_id: str, run_id: str, config: ConfigItem,
                    expires_at: int) -> dict[str, Any]:
        """Extend the config's life with the run's; only while it is the version read (a step
        batch applied with an older config would otherwise be written after the change)."""
        return {"Update": {
            "TableName": self.table, "Key": self._key(tenant_id, run_id, CONFIG),
            "UpdateExpression": "SET expiresAt = :e", "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": {":e": {"N": str(expires_at)},
                                          ":v": {"N": str(config.version)}}}}

    def put_calls(self, tenant_id: str, run_id: str, calls: CallsItem, now: str,
                  expires_at: int) -> dict[str, Any]:
        """Put the run's view as version ``calls.version + 1``, if it is still at
        ``calls.version`` (a concurrent batch of another agent: read and apply again)."""
        values = {"pk": partition(tenant_id, run_id), "sk": CALLS,
                  "version": calls.version + 1, "body": encode(calls.body), "updatedAt": now,
                  "expiresAt": expires_at}
        return self._put_versioned(values, calls.version)

    def _put_versioned(self, values: dict[str, Any], version: int) -> dict[str, Any]:
        """A Put of ``values`` on condition that the item is still at ``version`` (0: none)."""
        if version == 0:
            return {"Put": {"TableName": self.table, "Item": to_item(values),
                            "ConditionExpression": "attribute_not_exists(sk)"}}
        return {"Put": {"TableName": self.table, "Item": to_item(values),
                        "ConditionExpression": "version = :v",
                        "ExpressionAttributeValues": {":v": {"N": str(version)}}}}

    def drop_calls(self, tenant_id: str, run_id: str) -> dict[str, Any]:
        """Forget the run's view (a reset point of every agent)."""
        return {"Delete": {"TableName": self.table, "Key": self._key(tenant_id, run_id, CALLS)}}

    def write(self, actions: list[dict[str, Any]]) -> None:
        """One TransactWriteItems: all of ``actions`` or none. WriteRefused names the actions
        whose condition failed (or that met a concurrent transaction)."""
        try:
            self.db.transact(actions, CONFLICTS)
        except ConditionFailed as refused:
            raise WriteRefused(refused.reasons) from None


def _config(item: dict[str, Any]) -> ConfigItem:
    return ConfigItem(json.loads(item["config"]), int(item["version"]), int(item["expiresAt"]))


def _calls(items: list[dict[str, Any]], now: int) -> CallsItem:
    found = next((i for i in items if i["sk"] == CALLS), None)
    return CallsItem.from_item(found, now) if found is not None else CallsItem(new_view())
