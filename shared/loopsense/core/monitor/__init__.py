"""The run monitor's pure core (spec/loop_safety.md): one step at a time over a bounded,
JSON-serializable state. Shared by the stateless skill agent.run_monitor and the runs API."""

from loopsense.core.monitor.config import (
    DEFAULTS,
    LOOP_RULES,
    RULES,
    STUCK_RULES,
    THRESHOLD_SPECS,
    TOOL_THRESHOLDS,
    MonitorConfig,
    ToolPolicy,
)
from loopsense.core.monitor.monitor import evaluate, new_state, observe, reset
from loopsense.core.monitor.signal import Answer

__all__ = ["DEFAULTS", "LOOP_RULES", "RULES", "STUCK_RULES", "THRESHOLD_SPECS",
           "TOOL_THRESHOLDS", "Answer", "MonitorConfig", "ToolPolicy", "evaluate", "new_state",
           "observe", "reset"]
