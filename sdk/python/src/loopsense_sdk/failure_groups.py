"""``client.failure_groups``: the failure groups of the tenant's telemetry (docs/failure-groups.md):
executions that fired the same signature, newest ``lastSeen`` first, with their playbook.

    for group in client.failure_groups.all(class_="loops"):
        print(group["signature"], group["executions"], group["severity"])
    detail = client.failure_groups.get("loops/identical_call_1f0c2a9e")

Reads only: retried by the client's rules (loopsense_sdk.client) like every call.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from typing import Literal, cast

from loopsense_sdk import routes as R
from loopsense_sdk.runs import Send
from loopsense_sdk.types import FailureGroup, FailureGroupDetail, FailureGroupPage, Severity

__all__ = ["FailureGroups"]

GroupClass = Literal["loops", "semantic_loop", "tool_calls"]


class FailureGroups:
    def __init__(self, send: Send) -> None:
        self._send = send

    def list(self, *, limit: int | None = None, cursor: str | None = None,
             class_: GroupClass | None = None,
             severity: Severity | None = None) -> FailureGroupPage:
        """One page (``limit`` 1..100, default 50); ``nextCursor`` continues it (None: the
        last page). ``class_`` and ``severity`` filter (the severity is the tenant's routing)."""
        query = {name: str(value) for name, value in (
            ("limit", limit), ("cursor", cursor), ("class", class_), ("severity", severity))
            if value is not None}
        path = R.FAILURE_GROUPS.path() + ("?" + urllib.parse.urlencode(query) if query else "")
        return cast(FailureGroupPage, self._send(R.FAILURE_GROUPS.method, path, None, {}))

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

    def get(self, signature: str) -> FailureGroupDetail:
        """A group, its 20 most recent executions, its playbook and (semantic_loop) the
        revisited state; ``NotFoundError`` (FAILURE_GROUP_NOT_FOUND) for one this tenant lacks."""
        return cast(FailureGroupDetail, self._send(
            R.FAILURE_GROUP.method, R.FAILURE_GROUP.path(signature=signature), None, {}))
