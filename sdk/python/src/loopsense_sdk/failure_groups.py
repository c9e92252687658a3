"""``client.failure_groups``: the failure groups of the tenant's telemetry (docs/failure-groups.md):
executions that fired the same signature, newest ``lastSeen`` first, with their playbook.

    for group in client.failure_groups.all(class_="loops"):
        print(group["signature"], group["executions"], group["severity"])
    detail = client.failure_groups.get("loops/identical_call_1f0c2a9e")

Reads only: retried by the client's rules (loopsense_sdk.client) like every call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Literal, cast

from loopsense_sdk import routes as R
from loopsense_sdk.plan import Namespace, Plan, asynchronous, call, synchronous
from loopsense_sdk.types import FailureGroup, FailureGroupDetail, FailureGroupPage, Severity

if TYPE_CHECKING:
    pass

__all__ = ["AsyncFailureGroups", "FailureGroups"]

GroupClass = Literal["loops", "semantic_loop", "tool_calls"]


def _list(*, limit: int | None = None, cursor: str | None = None,
          class_: GroupClass | None = None,
          severity: Severity | None = None) -> Plan[FailureGroupPage]:
    """One page (``limit`` 1..100, default 50); ``nextCursor`` continues it (None: the
    last page). ``class_`` and ``severity`` filter (the severity is the tenant's routing)."""
    query = {name: str(value) for name, value in (
        ("limit", limit), ("cursor", cursor), ("class", class_), ("severity", severity))
        if value is not None}
    return cast(FailureGroupPage, (yield call(R.FAILURE_GROUPS, query=query)))


def _get(signature: str) -> Plan[FailureGroupDetail]:
    """A group, its 20 most recent executions, its playbook and (semantic_loop) the
    revisited state; ``NotFoundError`` (FAILURE_GROUP_NOT_FOUND) for one this tenant lacks."""
    return cast(FailureGroupDetail, (yield call(R.FAILURE_GROUP, signature=signature)))


class FailureGroups(Namespace):
    list = synchronous(_list)
    get = synchronous(_get)

    def all(self, *, class_: GroupClass | None = None, severity: Severity | None = None,
            page_size: int = 100) -> Iterator[FailureGroup]:
        """Every group, following the pages (one request per ``page_size`` groups)."""
        cursor: str | None = None
        while True:
            page = self.list(limit=page_size, cursor=cursor, class_=class_, severity=severity)
            yield from page["items"]
            cursor = page["nextCursor"]
            if cursor is None:
                return


class AsyncFailureGroups(Namespace):
    list = asynchronous(_list)
    get = asynchronous(_get)

    async def all(self, *, class_: GroupClass | None = None, severity: Severity | None = None,
                  page_size: int = 100) -> AsyncIterator[FailureGroup]:
        """Every group, following the pages: ``async for group in ....all()``."""
        cursor: str | None = None
        while True:
            page = await self.list(limit=page_size, cursor=cursor, class_=class_,
                                   severity=severity)
            for group in page["items"]:
                yield group
            cursor = page["nextCursor"]
            if cursor is None:
                return
