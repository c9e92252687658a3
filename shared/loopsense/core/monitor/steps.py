"""A step in, its entry out: the canonical keys and the few facts the rules read.

An entry is a small JSON object (it lives in the monitor's state, which is stored as JSON):
``i`` the step's index in the run, ``k`` its kind, ``n`` its novelty key, and per kind ``c``
(the tool-call or text key), ``r`` (the result hash), ``o`` (outcome ``neg``/``pos``/``neu``),
``a`` (the tool's name, kept for per-tool policy and, on the stateful surface, for nudges),
``x`` (exempt tool), ``e`` (the unit-length embedding). Keys are the first 32 hex digits (128
bits) of the SHA-256 of the canonical form (spec/semantic_loop.md): enough to never collide in
practice, half the state's size. A tool call's novelty key joins halves of its two keys (still
128 bits) rather than hashing them again: one SHA-256 less per call.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from loopsense.core.canonical import (
    WHITE_SPACE,
    CanonicalError,
    canonical_hash,
    canonical_hash_later,
    canonical_pair_hash,
    canonical_string,
)
from loopsense.core.monitor.config import RESULT_IGNORE_KEYS, MonitorConfig

KEY_HEX = 32
THOUGHT = "thought"
TEXT_KINDS = frozenset({"llm_call", "message", "user_message", "recall", "text_chunk"})
OUTCOMES = {"negative": "neg", "error": "neg", "positive": "pos", "neutral": "neu"}

_SPACE_RUNS = re.compile(f"[{re.escape(WHITE_SPACE)}]+")


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:KEY_HEX]


def novelty_key(call: str, result: str | None) -> str:
    """A tool call is the same step again when both its arguments and its result are."""
    return call if result is None else call[:KEY_HEX // 2] + result[:KEY_HEX // 2]


def normal_text(text: str) -> str:
    """The canonical string rule (trim, lowercase) with whitespace runs collapsed."""
    text = canonical_string(text)
    if text.isprintable() and "  " not in text:
        return text  # no White_Space but single ASCII spaces (the others are not printable)
    return _SPACE_RUNS.sub(" ", text)


def unit(vector: list[float]) -> list[float] | None:
    norm = math.sqrt(math.fsum(v * v for v in vector))
    return [v / norm for v in vector] if norm > 0 else None


def _hash(value: Any, ignore: frozenset[str], field: str) -> str:
    try:
        return canonical_hash(value, ignore)[:KEY_HEX]
    except CanonicalError as exc:
        raise CanonicalError(f"{field} {exc.issue}") from None


def _result_later(value: Any, ignore: frozenset[str]) -> Callable[[], str]:
    try:
        return canonical_hash_later(value, ignore)
    except CanonicalError as exc:
        raise CanonicalError(f"result {exc.issue}") from None


def settle(e: dict[str, Any], compared: bool) -> None:
    """A tool call's entry made ``later``, completed: its result digested if it may be compared
    (another call has its key), else dropped (``r`` None, as if sent without one): no rule
    reads the result of a call made once, for results are compared only between copies of one
    call. Then its novelty key."""
    digest = e["r"]
    if digest is not None:
        try:
            e["r"] = digest()[:KEY_HEX] if compared else None
        except CanonicalError as exc:
            raise CanonicalError(f"result {exc.issue}") from None
    e["n"] = novelty_key(e["c"], e["r"])


def call_key(action: str | None, args: Any, ignore: frozenset[str]) -> str:
    """The key of ``[action, args]`` (spec/loop_safety.md, Steps)."""
    try:
        return canonical_pair_hash(action, args, ignore)[:KEY_HEX]
    except CanonicalError as exc:
        raise CanonicalError(f"args {exc.issue}") from None


def entry(step: Mapping[str, Any], index: int, config: MonitorConfig,
          later: bool = False) -> dict[str, Any]:
    """The entry of one step. Raises CanonicalError (a ValueError naming the limit, never the
    value) when ``args``, ``result`` or ``metadata`` has no canonical form.

    ``later``: a tool call's result is checked but not digested yet; its ``r`` is a function
    and it has no ``n`` until ``settle``."""
    kind = step.get("kind")
    out: dict[str, Any]
    if kind == "tool_call":
        action = step.get("action")
        policy = config.policy(action)
        own = policy.ignore_keys
        ignore = config.ignore_keys | own if own else config.ignore_keys
        call = call_key(action, step.get("args"), ignore)
        out = {"i": index, "k": kind, "c": call, "r": None,
               "o": OUTCOMES.get(step.get("outcome") or ""), "a": action}
        if "result" in step:
            volatile = ignore | RESULT_IGNORE_KEYS if own else config.result_ignore_keys
            out["r"] = (_result_later(step["result"], volatile) if later
                        else _hash(step["result"], volatile, "result"))
        if not later:
            out["n"] = novelty_key(call, out["r"])
        if policy.exempt:
            out["x"] = 1
    else:
        out = _other(step, kind, index)
    embedding = step.get("embedding")
    if embedding:
        out["e"] = unit(list(embedding))
    return out


def _other(step: Mapping[str, Any], kind: Any, index: int) -> dict[str, Any]:
    """The entry of a step that is not a tool call (without its embedding)."""
    out = {"i": index, "k": kind}
    if kind in TEXT_KINDS:
        text = step.get("text")
        key = digest(f"{kind}:{normal_text(text)}" if isinstance(text, str) else f"{kind}:")
        out.update(c=key, n=key)
    elif kind == "checkpoint":
        out["n"] = digest("checkpoint:" + _hash(step.get("metadata", {}), frozenset(),
                                                 "metadata"))
    else:
        out["n"] = digest(f"kind:{kind}")
    return out
