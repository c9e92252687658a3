"""Rate-limit counters and the credit meter: each decision is one conditional atomic write.

A tenant's counters are sharded (docs/tenant-throughput.md): every caller of a tenant writes
one of several items, not all the same one, so one hot item does not hold a tenant to about
one transaction per hold time on DynamoDB. The shards' shares add up to the limit exactly,
so together they never admit more than it (``share``).
"""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from loopsense.settings import Settings
from loopsense.store.accounts import Plan
from loopsense.store.dynamo import (
    ConditionFailed,
    Conflicted,
    Dynamo,
    from_item,
    to_item,
    unavailable,
)
from loopsense.store.shards import (
    CREDIT_SHARDS,
    Credits,
    another,
    any_shard,
    period_sk,
    rate_shards,
    rooms,
    share,
)

RATE_COUNTER_TTL_S = 120
# Usage records and the period's credits are kept 400 days after their last write (13 months:
# a month's charges can be audited for a year after it; docs/decisions.md), then TTL deletes them.
USAGE_RETENTION_S = 400 * 86_400
# A charge that finds its shard full reads the period and moves to a shard with room; each move
# follows a charge that filled the one it tried, so this bound is met only by a store gone wrong.
MAX_MOVES = 2 * CREDIT_SHARDS


@dataclass(frozen=True, slots=True)
class UsageRecord:
    execution_id: str
    skill_key: str
    skill_version: str
    credits: int
    at: str  # RFC 3339 UTC, milliseconds, Z (core.instants.stamp); older records: +00:00
    duration_ms: int
    status: str

    def as_item(self) -> dict[str, Any]:
        """The record's fields as stored and as the operator's `usage` shows them."""
        return {"executionId": self.execution_id, "skillKey": self.skill_key,
                "skillVersion": self.skill_version, "credits": self.credits, "at": self.at,
                "durationMs": self.duration_ms, "status": self.status}

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> UsageRecord:
        return cls(item["executionId"], item["skillKey"], item["skillVersion"], item["credits"],
                   item["at"], item["durationMs"], item["status"])


class Metering:
    def __init__(self, db: Dynamo, settings: Settings) -> None:
        self.db = db
        self.s = settings

    def admit(self, tenant_id: str, epoch_second: int, limit: int) -> bool:
        """Count one request in this second; False (nothing counted) once ``limit`` is reached:
        a full shard tries one other first. Conflicted when the counter is in an in-flight
        transaction (a step batch's)."""
        if limit <= 0:  # a plan with 0 requests/second admits nothing (not one per second)
            return False
        first = self.admission(tenant_id, epoch_second, limit)
        for update in (first, self.other_admission(first, limit)):
            if update is None:
                break
            try:
                self.db.settled("update_item", **update)
            except ConditionFailed:
                continue
            return True
        return False

    def admission(self, tenant_id: str, epoch_second: int, limit: int,
                  shard: int | None = None) -> dict[str, Any]:
        """The conditional UpdateItem that counts one request on one shard of the second
        (``admit``'s, or a transaction's Update action: the runs API counts a step batch in
        the batch's own write); a random shard unless ``shard`` is given."""
        count = rate_shards(limit)
        if shard is None:
            shard = any_shard(count)
        return {
            "TableName": self.s.rate_limits_table,
            "Key": {"counterId": {"S": f"{tenant_id}#{epoch_second}#{shard}"}},
            "UpdateExpression": "ADD hits :one SET expiresAt = :ttl",
            "ConditionExpression": "attribute_not_exists(hits) OR hits < :limit",
            "ExpressionAttributeValues": {
                ":one": {"N": "1"}, ":limit": {"N": str(share(shard, limit, count))},
                ":ttl": {"N": str(epoch_second + RATE_COUNTER_TTL_S)}},
        }

    def other_admission(self, refused: dict[str, Any], limit: int) -> dict[str, Any] | None:
        """The same request on another shard of its second, for when its own shard refused
        it (tried once: then TENANT_RATE_LIMITED); None when the second has one shard."""
        tenant_id, epoch, shard = refused["Key"]["counterId"]["S"].rsplit("#", 2)
        other = another(int(shard), rate_shards(limit))
        return None if other is None else self.admission(tenant_id, int(epoch), limit, other)

    # credits ------------------------------------------------------------------------------
    def used(self, tenant_id: str, period: str) -> int:
        """The credits charged in ``period``: its shards summed (one Query)."""
        return int(self._period_items(tenant_id, period, period).get(period, {}).get("used", 0))

    def credit_keys(self, tenant_id: str, period: str, shard: int) -> list[dict[str, Any]]:
        """The keys a charge reads first (in its caller's BatchGetItem): the period's one item
        of a month charged the old way, and shard ``shard``."""
        return [to_item({"tenantId": tenant_id, "sk": period_sk(period, s)})
                for s in (None, shard)]

    @staticmethod
    def credits_found(period: str, shard: int, items: list[dict[str, Any]]) -> Credits:
        """Where the charge goes, from what ``credit_keys`` found: the old item if the month
        has one, else the shard."""
        found = {str(i["sk"]): i for i in items}
        if period_sk(period) in found:  # shards are written all at once: one found, all are
            others = None if period_sk(period, shard) in found else 0
            return Credits(period, None, int(found[period_sk(period)].get("used", 0)),
                           others=others)
        return _shard(period, shard, found.get(period_sk(period, shard)))

    def plan_and_credits(self, tenant_id: str, period: str, plan: str
                         ) -> tuple[Plan | None, Credits]:
        """The stored row of ``plan`` (None: none stored) and a random shard of the period's
        credits (``credits_found``), in one BatchGetItem."""
        shard = any_shard(CREDIT_SHARDS)
        request = {
            self.s.usage_table: {"Keys": self.credit_keys(tenant_id, period, shard),
                                 "ConsistentRead": True},
            self.s.plans_table: {"Keys": [to_item(Plan.key(plan))], "ConsistentRead": True}}
        found: dict[str, list[dict[str, Any]]] = {}
        for page in self.db.batch("batch_get_item", request, "UnprocessedKeys"):
            for table, items in page.get("Responses", {}).items():
                found.setdefault(table, []).extend(from_item(i) for i in items)
        rows = found.get(self.s.plans_table, [])
        return (Plan.from_item(rows[0]) if rows else None,
                self.credits_found(period, shard, found.get(self.s.usage_table, [])))

    def where(self, tenant_id: str, read: Credits, quota: int, cost: int) -> Credits | None:
        """Where a charge of ``cost`` goes under the plan's ``quota`` (which the caller read
        fresh): the item read if it takes it, else a shard with room (``move``); None when
        none has: QUOTA_EXCEEDED."""
        if read.takes(quota, cost):
            return read
        if read.shard is None and read.others is not None:
            return None
        return self.move(tenant_id, read.period, quota, cost)

    def move(self, tenant_id: str, period: str, quota: int, cost: int) -> Credits | None:
        """A shard with room for ``cost``, at random among them, read afresh (one Query);
        None when none has. The month's first charge writes its shards first (their rooms
        split from ``quota``); a quota other than the one they were split from (the plan
        changed) splits what is left of the new one over them again, so that the used and the
        rooms still add up to the quota in force (``rooms``)."""
        for _ in range(MAX_MOVES):
            items = {str(i["sk"]): i for i in self.db.query(
                self.s.usage_table, ConsistentRead=True,
                KeyConditionExpression="tenantId = :t AND begins_with(sk, :p)",
                ExpressionAttributeValues={":t": {"S": tenant_id},
                                           ":p": {"S": period_sk(period)}})}
            if period_sk(period) in items:  # charged the old way this month: its item decides,
                old = items.pop(period_sk(period))  # counting what any shards hold too
                others = sum(int(i.get("used", 0)) for i in items.values())
                credits = Credits(period, None, int(old.get("used", 0)), others=others)
                return credits if credits.takes(quota, cost) else None
            shards = [_shard(period, i, items.get(period_sk(period, i)))
                      for i in range(CREDIT_SHARDS)]
            if any(c.quota != quota for c in shards):
                self._split(tenant_id, shards, quota)
                continue  # read again: this split, or a concurrent charge's or split's
            room = [c for c in shards if c.takes(quota, cost)]
            return room[any_shard(len(room))] if room else None
        raise unavailable()

    def _split(self, tenant_id: str, shards: list[Credits], quota: int) -> None:
        """Write every shard's room of ``quota`` (``rooms``) in one transaction, on condition
        that none changed since read; one that did (a charge, another split) refuses it all."""
        left = rooms(quota, sum(c.used for c in shards))
        # A shard no charge ever reaches is deleted by TTL too (a charge moves it later).
        expires = int(time.time()) + USAGE_RETENTION_S
        actions = []
        for c, room in zip(shards, left, strict=True):
            key = to_item({"tenantId": tenant_id, "sk": c.sk})
            if c.room is None:
                actions.append({"Put": {
                    "TableName": self.s.usage_table,
                    "ConditionExpression": "attribute_not_exists(sk)",
                    "Item": {**key, **to_item({"used": 0, "room": room, "quota": quota,
                                               "expiresAt": expires})}}})
                continue
            actions.append({"Update": {
                "TableName": self.s.usage_table, "Key": key,
                "UpdateExpression": "SET room = :room, quota = :quota, "
                                    "expiresAt = if_not_exists(expiresAt, :expires)",
                "ConditionExpression": "used = :used AND room = :was",
                "ExpressionAttributeValues": to_item({":room": room, ":quota": quota,
                                                      ":used": c.used, ":was": c.room,
                                                      ":expires": expires})}})
        with suppress(ConditionFailed, Conflicted):  # something changed: the caller reads again
            self.db.settled("transact_write_items", TransactItems=actions)

    def charge(self, tenant_id: str, period: str, quota: int, record: UsageRecord,
               once: Once | None = None, credits: Credits | None = None,
               also: tuple[dict[str, Any], ...] = ()) -> str | None:
        """Add the record's credits to the period if they fit in ``quota``, and write the record.

        One transaction (with ``also``'s actions): all or nothing, on ``credits`` (a random
        shard if not given); a shard without room moves to another (``move``). With ``once``,
        the charge also claims ``once.key`` until ``once.until``; if that claim is held, this
        call was charged before and nothing changes. Returns the execution id the call is
        charged under (the earlier one for a held claim), or None when the credits do not fit
        in any shard; Conflicted (nothing charged) when it met another transaction in flight on
        one of its items: sent again, it is decided afresh.
        """
        credits = credits or self.where(tenant_id, Credits(period, 0), quota, record.credits)
        for _ in range(MAX_MOVES):
            if credits is None:  # no room: unless this very call was charged meanwhile (on
                return self._claimed_by(tenant_id, once) if once else None  # another shard)
            if credits.shard is None or credits.takes(quota, record.credits):
                items = [*self.charge_items(tenant_id, credits, quota, record, once), *also]
                try:
                    self.db.settled("transact_write_items", TransactItems=items)
                except ConditionFailed as failed:
                    if once is not None and failed.reasons[2:3] == ["ConditionalCheckFailed"]:
                        return self._claimed_by(tenant_id, once)
                    if failed.reasons[:1] != ["ConditionalCheckFailed"]:
                        raise unavailable() from None  # not the credits: nothing to move for
                else:
                    return record.execution_id
            if credits.shard is None:  # the month's one item is full
                return self._claimed_by(tenant_id, once) if once else None
            credits = self.move(tenant_id, period, quota, record.credits)
        raise unavailable()

    def charge_items(self, tenant_id: str, credits: Credits, quota: int, record: UsageRecord,
                     once: Once | None = None) -> list[dict[str, Any]]:
        """``charge``'s transaction actions: the conditional credit ADD on ``credits``, the
        usage record and the optional claim (in this order), for a caller that adds its own
        writes to them."""
        expires = {"N": str(_epoch(record.at) + USAGE_RETENTION_S)}
        cost = {"N": str(record.credits)}
        if credits.shard is None:  # the month's one item, as before the shards
            spend = "ADD used :cost, #calls :one SET expiresAt = :expires"
            condition = "attribute_not_exists(used) OR used <= :max"
            # what the shards hold counts too; not read (None): as if they held it all
            others = quota if credits.others is None else credits.others
            values = {":max": {"N": str(quota - record.credits - others)}}
        else:  # a shard's room, split from this very quota (else it refuses: split again)
            spend = "ADD used :cost, room :spent, #calls :one SET expiresAt = :expires"
            condition = "room >= :cost AND quota = :quota"
            values = {":spent": {"N": str(-record.credits)}, ":quota": {"N": str(quota)}}
        items: list[dict[str, Any]] = [
            {"Update": {
                "TableName": self.s.usage_table,
                "Key": to_item({"tenantId": tenant_id, "sk": credits.sk}),
                # and one more call of the record's skill on its day (GET /v1/usage reads them
                # with the period: no query of the records)
                "UpdateExpression": spend, "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#calls": calls_name(record.at, record.skill_key)},
                "ExpressionAttributeValues": {":cost": cost, ":one": {"N": "1"},
                                              ":expires": expires, **values},
            }},
            {"Put": {
                "TableName": self.s.usage_table,
                "Item": {**to_item({"tenantId": tenant_id, "sk": _record(record.execution_id),
                                    "period": credits.period, **record.as_item()}),
                         "expiresAt": expires},
                "ConditionExpression": "attribute_not_exists(sk)",
            }},
        ]
        if once is not None:
            items.append({"Put": {
                "TableName": self.s.usage_table,
                "Item": to_item({"tenantId": tenant_id, "sk": _once(once.key),
                                 "executionId": record.execution_id, "expiresAt": once.until}),
                # An expired claim may linger until TTL removes it: it no longer counts.
                "ConditionExpression": "attribute_not_exists(sk) OR expiresAt < :now",
                "ExpressionAttributeValues": {":now": {"N": str(once.now)}},
            }})
        return items

    def _claimed_by(self, tenant_id: str, once: Once) -> str | None:
        """The execution ``once`` was charged under, if its claim is held (not expired)."""
        item = self.db.get(self.s.usage_table, {"tenantId": tenant_id, "sk": _once(once.key)})
        live = item is not None and int(item.get("expiresAt", 0)) >= once.now
        return str(item["executionId"]) if live and item else None

    def periods(self, tenant_id: str, periods: list[str]) -> dict[str, dict[str, Any]]:
        """The credits items of ``periods`` (consecutive months; one Query), each period's
        shards summed: what was used, and the calls of each day and skill (``calls_of``); an
        absent period is {}."""
        found = self._period_items(tenant_id, min(periods), max(periods))
        return {p: found.get(p, {}) for p in periods}

    def _period_items(self, tenant_id: str, first: str, last: str
                      ) -> dict[str, dict[str, int]]:
        """{period: its items' ``used`` and ``calls#`` counters summed} from ``first`` to
        ``last`` (one Query: the shards of a month sort together, after its old item)."""
        items = self.db.query(
            self.s.usage_table, ConsistentRead=True,
            KeyConditionExpression="tenantId = :t AND sk BETWEEN :first AND :last",
            ExpressionAttributeValues={":t": {"S": tenant_id},
                                       ":first": {"S": period_sk(first)},
                                       ":last": {"S": period_sk(last) + "#~"}})
        summed: dict[str, dict[str, int]] = {}
        for item in items:
            into = summed.setdefault(str(item["sk"])[len("PERIOD#"):][:7], {})
            for name, value in item.items():
                if name == "used" or name.startswith("calls#"):
                    into[name] = into.get(name, 0) + int(value)
        return summed

    def records(self, tenant_id: str, period: str | None = None) -> list[UsageRecord]:
        items = self.db.query(
            self.s.usage_table,
            KeyConditionExpression="tenantId = :t AND begins_with(sk, :r)",
            ExpressionAttributeValues={":t": {"S": tenant_id}, ":r": {"S": "EXEC#"}},
        )
        found = [UsageRecord.from_item(i) for i in items
                 if period is None or i.get("period") == period]
        return sorted(found, key=lambda r: (r.at, r.execution_id))


@dataclass(frozen=True, slots=True)
class Once:
    """One logical call (a tenant's Idempotency-Key): charged at most once until ``until``."""

    key: str  # a digest, never the caller's key itself
    now: int  # epoch seconds
    until: int  # epoch seconds; after it the same key is a new call


def _once(key: str) -> str:
    return f"ONCE#{key}"


def period_of(moment: datetime) -> str:
    """The quota period a moment falls in: its calendar month, UTC ("2026-11")."""
    return moment.astimezone(UTC).strftime("%Y-%m")


def calls_name(at: str, skill_key: str) -> str:
    """The period item's counter of one day's calls of one skill: ``calls#<DD>#<skill>``
    (``at`` is the record's ISO-8601 UTC time; a month has at most 31 such days)."""
    return f"calls#{at[8:10]}#{skill_key}"


def calls_of(item: dict[str, Any]) -> dict[tuple[str, str], int]:
    """A period item's counters: {(day of month "DD", skill key): calls}."""
    found = {}
    for name, value in item.items():
        if name.startswith("calls#"):
            _, day, skill = name.split("#", 2)
            found[(day, skill)] = int(value)
    return found


def _shard(period: str, shard: int, item: dict[str, Any] | None) -> Credits:
    if item is None:
        return Credits(period, shard)
    return Credits(period, shard, int(item.get("used", 0)), int(item.get("room", 0)),
                   int(item["quota"]) if "quota" in item else None)


def _epoch(at: str) -> int:
    """A record's RFC 3339 time (``Z`` or ``+00:00``) in epoch seconds."""
    return int(datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp())


def _record(execution_id: str) -> str:
    return f"EXEC#{execution_id}"
