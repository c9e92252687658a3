"""The template's scheduled functions (ScheduleV2 / Schedule events with ``rate(...)``), run by
`loopsense serve` in a background thread, as EventBridge Scheduler runs them on AWS.

LOOPSENSE_SCHEDULE_INTERVAL_S overrides every rate (tests and demos need seconds, not minutes).
A run that fails is logged by its type and tried again at the next tick.
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from dataclasses import dataclass
from typing import Any

from loopsense.observability import logger
from loopsense_local.gateway import LocalContext, load_handler

_RATE = re.compile(r"^rate\((\d+) (second|minute|hour|day)s?\)$")
_UNIT_S = {"second": 1, "minute": 60, "hour": 3600, "day": 86_400}


@dataclass(frozen=True)
class Schedule:
    function: str  # logical id
    code_dir: str
    interval_s: float


def template_schedules(template: dict[str, Any]) -> list[Schedule]:
    found = []
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        for event in (resource["Properties"].get("Events") or {}).values():
            if event["Type"] not in ("Schedule", "ScheduleV2"):
                continue
            rate = _RATE.match(str(event["Properties"].get("ScheduleExpression", "")))
            if rate:
                interval = int(rate.group(1)) * _UNIT_S[rate.group(2)]
                found.append(Schedule(logical_id, resource["Properties"]["CodeUri"], interval))
    return sorted(found, key=lambda s: s.function)


class Scheduler:
    def __init__(self, schedules: list[Schedule]) -> None:
        override = os.environ.get("LOOPSENSE_SCHEDULE_INTERVAL_S")
        self.schedules = schedules
        self.interval = {s.function: float(override) if override else s.interval_s
                         for s in schedules}
        self.handlers = {s.function: load_handler(s.code_dir) for s in schedules}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> Scheduler:
        for schedule in self.schedules:
            thread = threading.Thread(target=self._loop, args=(schedule,), daemon=True,
                                      name=f"schedule-{schedule.function}")
            thread.start()
            self._threads.append(thread)
        return self

    def _loop(self, schedule: Schedule) -> None:
        handler = self.handlers[schedule.function]
        while not self._stop.wait(self.interval[schedule.function]):
            request_id = str(uuid.uuid4())
            try:
                handler({"source": "loopsense.local-scheduler"},
                        LocalContext(schedule.function, request_id))
            except Exception as exc:  # noqa: BLE001 - a failed run must not stop the schedule
                logger.error("scheduled run failed", extra={"function": schedule.function,
                                                             "exception": type(exc).__name__})

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
