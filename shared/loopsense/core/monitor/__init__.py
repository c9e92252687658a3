"""The run monitor's pure core (spec/loop_safety.md): one step at a time over a bounded,
JSON-serializable state, shared by the stateless skill agent.run_monitor and the runs API.

``config`` (rules, thresholds, policies) is cheap and read by the settings code. The rules
(``monitor``: new_state, observe, reset, inspect, evaluate) import numpy through the cycle
search, so they are imported from ``loopsense.core.monitor.monitor`` where needed.
"""
