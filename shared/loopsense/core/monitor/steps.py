"""A step in, its entry out: the canonical keys and the few facts the rules read.

An entry is a small JSON object (it lives in the monitor's state, which is stored as JSON):
``i`` the step's index in the run, ``k`` its kind, ``n`` its novelty key, and per kind ``c``
(the tool-call or text key), ``r`` (the result hash), ``o`` (outcome ``neg``/``pos``/``neu``),
``a`` (the tool's name, kept for per-tool policy and, on the stateful surface, for nudges),
``x`` (exempt tool), ``z`` (its result carries nothing), ``t`` (the words of its arguments,
or of a message, as sorted CRC-32s: what similar_call and monologue compare, no text kept),
``e`` (the unit-length embedding). Keys are the first 32 hex digits (128 bits) of the SHA-256
of the canonical form (spec/semantic_loop.md): enough to never collide in practice, half the
state's size. A tool call's novelty key joins halves of its two keys (still
128 bits) rather than hashing them again: one SHA-256 less per call.
"""

from __future__ import annotations

import hashlib
import math
import re
import zlib
from collections.abc import Mapping
from typing import Any

from loopsense.core.canonical import (
    WHITE_SPACE,
    CanonicalError,
    canonical_form,
    canonical_hash,
    canonical_pair,
    canonical_string,
    form_hash,
)
from loopsense.core.monitor.config import RESULT_IGNORE_KEYS, MonitorConfig

KEY_HEX = 32
THOUGHT = "thought"
TEXT_KINDS = frozenset({"llm_call", "message", "user_message", "recall", "text_chunk"})
OUTCOMES = {"negative": "neg", "error": "neg", "positive": "pos", "neutral": "neu"}

_SPACE_RUNS = re.compile(f"[{re.escape(WHITE_SPACE)}]+")
# A word of the arguments' canonical text (lowercase already): a run of ASCII letters and
# digits, or of non-ASCII UTF-8 bytes (a word of another script stays whole).
_WORD = re.compile(rb"[a-z0-9\x80-\xff]+")


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


def _result_later(value: Any, ignore: frozenset[str]) -> tuple[Any, str | None]:
    try:
        return canonical_form(value, ignore)
    except CanonicalError as exc:
        raise CanonicalError(f"result {exc.issue}") from None


def fingerprint(form: Any) -> Any:
    """A hashable stand-in for a normalized form that equal forms share (unequal ones may too),
    or None when there is none cheap to make (a nested result): lets a whole trace find the
    results that no other call can share before digesting any."""
    if type(form) is dict:  # its values: few objects for the collector to track
        try:
            return frozenset(form.values())
        except TypeError:  # a value is an object or an array
            return None
    return None if type(form) is list else form


def words(text: bytes) -> list[int]:
    """The words of a canonical text, as sorted distinct CRC-32s (compact in the state, never
    the words themselves)."""
    return sorted({zlib.crc32(w) for w in _WORD.findall(text)})


def carries_nothing(value: Any, ignore: frozenset[str]) -> bool:
    """A result that tells the agent nothing: null, false, zero, an empty or blank string, an
    empty array, or an object whose values all carry nothing (its volatile keys aside)."""
    kind = type(value)
    if kind is dict:
        for key, item in value.items():  # most results: the first value carries something
            kind = type(item)
            if kind is str:
                something = bool(item.strip(WHITE_SPACE))
            elif kind is bool or item is None:
                something = item is True
            elif kind is int or kind is float:
                something = item != 0
            else:
                something = not carries_nothing(item, ignore)
            if something and key.lower() not in ignore:
                return False
        return True
    if kind is str:
        return not value.strip(WHITE_SPACE)
    if kind is list:
        return not value
    return value is None or value is False or (kind is int or kind is float) and value == 0


def settle(e: dict[str, Any], compared: bool) -> None:
    """A tool call's entry made ``later``, completed: its result digested if it may be compared
    (``compared``: the caller knows some rule may compare it), else dropped (``r`` None, as if
    sent without one). Then its novelty key. (Its words, ``w``, are the caller's to keep.)"""
    if e["r"] is not None:
        (form, value, ignore), digest = e.pop("f"), e["r"]
        try:
            if not compared:
                e["r"] = None
            else:
                e["r"] = (digest if digest is not True else form_hash(form, value, ignore)
                          )[:KEY_HEX]
        except CanonicalError as exc:
            raise CanonicalError(f"result {exc.issue}") from None
    e["n"] = novelty_key(e["c"], e["r"])


def call_key(action: str | None, args: Any, ignore: frozenset[str]) -> str:
    """The key of ``[action, args]`` (spec/loop_safety.md, Steps)."""
    return keyed_call(action, args, ignore)[0]


def keyed_call(action: str | None, args: Any, ignore: frozenset[str]) -> tuple[str, bytes]:
    """``call_key`` and the canonical text of ``args``."""
    try:
        key, text = canonical_pair(action, args, ignore)
    except CanonicalError as exc:
        raise CanonicalError(f"args {exc.issue}") from None
    return key[:KEY_HEX], text


def entry(step: Mapping[str, Any], index: int, config: MonitorConfig,
          later: bool = False) -> dict[str, Any]:
    """The entry of one step. Raises CanonicalError (a ValueError naming the limit, never the
    value) when ``args``, ``result`` or ``metadata`` has no canonical form.

    ``later``: a tool call's result is checked but not digested yet (``r`` is True, or its
    digest when only the reference could write it; ``f`` its normalized form, the result and
    the keys it drops), its arguments' text is ``w``, and it has no ``n`` nor
    ``t`` until ``settle``; a message's normal text is ``w`` and it has no ``t``."""
    kind = step.get("kind")
    out: dict[str, Any]
    if kind == "tool_call":
        action = step.get("action")
        policy = config.policy(action)
        own = policy.ignore_keys
        ignore = config.ignore_keys | own if own else config.ignore_keys
        call, text = keyed_call(action, step.get("args"), ignore)
        out = {"i": index, "k": kind, "c": call, "r": None,
               "o": OUTCOMES.get(step.get("outcome") or ""), "a": action}
        if "result" in step:
            result = step["result"]
            volatile = ignore | RESULT_IGNORE_KEYS if own else config.result_ignore_keys
            if later:  # its form, the value and keys to write it by, or its digest made
                form, digest = _result_later(result, volatile)
                out["r"] = True if digest is None else digest
                out["f"] = (form, result, volatile)  # one tuple: one key to pop
            else:
                out["r"] = _hash(result, volatile, "result")
            if carries_nothing(result, volatile):
                out["z"] = 1
        if later:
            out["w"] = text
        else:
            out["t"] = words(text)
            out["n"] = novelty_key(call, out["r"])
        if policy.exempt:
            out["x"] = 1
    else:
        out = _other(step, kind, index, later)
    embedding = step.get("embedding")
    if embedding:
        out["e"] = unit(list(embedding))
    return out


def user_key(step: Mapping[str, Any]) -> str:
    """A user message's text key (its entry's ``c``)."""
    text = step.get("text")
    return digest(f"user_message:{normal_text(text)}" if isinstance(text, str)
                  else "user_message:")


def message_words(normal: str) -> list[int]:
    """A message's words (its entry's ``t``), from its normal text: what monologue compares."""
    return words(normal.encode("utf-8", "surrogatepass"))


def _other(step: Mapping[str, Any], kind: Any, index: int, later: bool) -> dict[str, Any]:
    """The entry of a step that is not a tool call (without its embedding). ``later``: a
    message's normal text is ``w``, for the caller to make its words of or drop."""
    out = {"i": index, "k": kind}
    if kind in TEXT_KINDS:
        text = step.get("text")
        normal = normal_text(text) if isinstance(text, str) else ""
        key = digest(f"{kind}:{normal}")
        out["c"] = out["n"] = key
        if kind == "message":
            if later:
                out["w"] = normal
            else:
                out["t"] = message_words(normal)
    elif kind == "checkpoint":
        out["n"] = digest("checkpoint:" + _hash(step.get("metadata", {}), frozenset(),
                                                 "metadata"))
    else:
        out["n"] = digest(f"kind:{kind}")
    return out
