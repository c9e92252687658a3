"""The canonical form of a JSON value and its SHA-256 (spec/semantic_loop.md, "Canonical form").

Byte for byte, applied recursively:

1. Object keys: NFC, lowercased, not trimmed; entries sorted by the lowered key (code point);
   keys that collide after lowering all stay, ordered by their canonical value's bytes.
2. Strings: NFC, trimmed of exactly the Unicode White_Space characters (``WHITE_SPACE``),
   lowercased.
3. Integers: their exact digits (``-0`` is ``0``).
4. Floats: rounded half away from zero to 2 decimals on the shortest round-trip decimal form
   (``repr``), no exponent, no trailing zeros, no decimal point when integral, zero as ``0``.
5. true, false, null as themselves; arrays keep their order.
6. Compact JSON, non-ASCII as itself; only ``"``, ``\\`` and U+0000..U+001F are escaped
   (``\\b \\f \\n \\r \\t`` short, the others ``\\u00xx`` in lowercase hex).

Values are what ``json.loads`` gives: dict, list, str, int (exact, any size), float, bool, None.

Two implementations, one answer: ``_reference`` writes the text itself and is the definition;
``_normalize`` rewrites the value into one that ``json.dumps(sort_keys=True)`` (C) serializes to
the same bytes, which is several times faster. The fast path hands over to the reference when
it meets what ``json.dumps`` cannot write (keys that collide after lowering, a rounded float
whose ``repr`` would differ from its decimal form); tests check the two agree.

Pure: no I/O, nothing of the project. Errors are ``CanonicalError`` (a ``ValueError``) whose
``issue`` names the limit, never the offending value.
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from collections.abc import Callable, Collection
from decimal import ROUND_HALF_UP, Context, Decimal
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

MAX_DEPTH = 64  # nested objects/arrays; the 65th level is refused
MAX_KEY_LENGTH = 1_024  # characters of an object key, as sent

# Unicode White_Space (PropList.txt): what rule 2 trims, and nothing else. Not str.strip()'s
# default set (it adds U+001C..U+001F), not JavaScript's trim() (it adds U+FEFF).
WHITE_SPACE = (
    "\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

_HUNDREDTH = Decimal("0.01")
# Enough digits for any double written out in full at 2 decimals (1.8e308 -> 309 + 2 digits).
_DECIMAL = Context(prec=400, rounding=ROUND_HALF_UP, Emax=999_999, Emin=-999_999)

_ESCAPES = {i: f"\\u{i:04x}" for i in range(0x20)}
_ESCAPES.update({0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t",
                 0x22: '\\"', 0x5C: "\\\\"})

_ASCII_SPACE = "\t\n\x0b\x0c\r "  # WHITE_SPACE within ASCII: enough for an ASCII string

_KEY_CACHE_SIZE = 4_096
# key as sent -> canonical key, for keys within MAX_KEY_LENGTH: keys repeat across checkpoints
_key_cache: dict[str, str] = {}


class CanonicalError(ValueError):
    """The value has no canonical form. ``issue`` is safe to show: it never quotes the value."""

    def __init__(self, issue: str) -> None:
        super().__init__(issue)
        self.issue = issue


class _UseReference(Exception):  # noqa: N818 - control flow, never escapes this module
    """The fast path met something json.dumps cannot write; the reference writes it."""


def canonical_string(value: str) -> str:
    """Rule 2: NFC, trimmed of White_Space, lowercased."""
    if not value.isascii():  # ASCII is always NFC
        value = unicodedata.normalize("NFC", value)
    return value.strip(WHITE_SPACE).lower()


def canonical_key(key: str) -> str:
    """Rule 1: NFC, lowercased, not trimmed."""
    found = _key_cache.get(key)
    if found is None:
        found = (key if key.isascii() else unicodedata.normalize("NFC", key)).lower()
        if len(key) <= MAX_KEY_LENGTH:
            if len(_key_cache) >= _KEY_CACHE_SIZE:
                _key_cache.clear()
            _key_cache[key] = found
    return found


def canonical_float(value: float) -> str:
    """Rule 4 as text: ``2.675`` -> ``2.68``, ``5.0`` -> ``5``, ``-0.001`` -> ``0``, ``1e21``
    -> ``1000000000000000000000``."""
    if not math.isfinite(value):
        raise CanonicalError("contains a number that is not finite")
    rounded = Decimal(repr(value)).quantize(_HUNDREDTH, context=_DECIMAL)
    if not rounded:
        return "0"
    text = f"{rounded:f}"  # always two decimals after quantize
    return text.rstrip("0").rstrip(".")


def quote(text: str) -> str:
    """Rule 6: a JSON string with only ``"``, ``\\`` and U+0000..U+001F escaped."""
    return '"' + text.translate(_ESCAPES) + '"'


# ---- the reference: the rules, written out ---------------------------------------------------


def _reference(value: Any, ignore: Collection[str], depth: int) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return quote(canonical_string(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return canonical_float(value)
    if isinstance(value, dict | list):
        if depth >= MAX_DEPTH:
            raise CanonicalError(f"is nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, list):
            return "[" + ",".join(_reference(v, ignore, depth + 1) for v in value) + "]"
        entries = []
        for key, item in value.items():
            _check_key(key)
            lowered = canonical_key(key)
            if lowered not in ignore:
                entries.append((lowered, _reference(item, ignore, depth + 1)))
        # By key, then (only for keys that collided) by the value's text: code point order is
        # UTF-8 byte order.
        entries.sort()
        return "{" + ",".join(quote(k) + ":" + v for k, v in entries) + "}"
    raise CanonicalError("contains a value that is not JSON")


def _check_key(key: Any) -> None:
    if not isinstance(key, str):
        raise CanonicalError("contains a key that is not a string")
    if len(key) > MAX_KEY_LENGTH:
        raise CanonicalError(f"contains a key longer than {MAX_KEY_LENGTH} characters")


# ---- the fast path: normalize, then json.dumps in C -----------------------------------------


def _fast_float(value: float) -> float | int:
    """A float or int that json.dumps writes as rule 4's text, else _UseReference.

    Rounds on the digits of ``repr`` (the shortest round-trip form) with integer arithmetic:
    ``hundredths`` is the magnitude in units of 0.01, truncated, plus one when the third
    decimal is 5 or more (half away from zero, on the decimal form). ``hundredths / 100`` is
    then the double nearest that decimal (IEEE division rounds correctly), whose ``repr`` is
    the decimal itself while it has at most 15 significant digits.
    """
    text = repr(value)
    dot = text.find(".")
    if dot < 0 or "e" in text:  # 1e+16 and up, below 1e-04, inf, nan
        if not math.isfinite(value):
            raise CanonicalError("contains a number that is not finite")
        if -0.005 < value < 0.005:
            return 0
        written = canonical_float(value)  # integral: |value| >= 1e16
        return int(written)
    if len(text) - dot <= 3:  # at most 2 decimals already
        if text.endswith(".0"):
            return int(text[:dot])  # 5.0 -> 5, -0.0 -> 0
        return value  # repr is shortest: no trailing zero; json.dumps writes this same text
    negative = text[0] == "-"
    hundredths = int(text[negative:dot] + text[dot + 1:dot + 3])
    if text[dot + 3] >= "5":
        hundredths += 1
    if hundredths % 100 == 0:
        whole = hundredths // 100
        return -whole if negative else whole  # 4.999 -> 5, -0.001 -> 0
    if hundredths >= 10**15:
        raise _UseReference  # 16+ significant digits: the double's repr could differ
    return (-hundredths if negative else hundredths) / 100


def _normalize(value: Any, ignore: Collection[str], depth: int) -> Any:
    """``value`` rewritten so that json.dumps(sort_keys=True) writes its canonical text.

    Hot: scalars inside objects and arrays are handled inline, without a call per value."""
    kind = type(value)
    if kind is dict:
        return _normalize_object(value, ignore, depth)
    if kind is list:
        return _normalize_array(value, ignore, depth)
    if kind is str:
        return value.strip(_ASCII_SPACE).lower() if value.isascii() else canonical_string(value)
    if kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return _fast_float(value)
    raise _UseReference  # a subclass or a non-JSON type: the reference decides


def _normalize_object(value: dict[Any, Any], ignore: Collection[str], depth: int) -> Any:
    if depth >= MAX_DEPTH:
        raise CanonicalError(f"is nested deeper than {MAX_DEPTH} levels")
    out: dict[str, Any] = {}
    cache = _key_cache
    dropped = 0
    for key, item in value.items():
        lowered = cache.get(key)  # a cached key is a string within the length limit
        if lowered is None:
            _check_key(key)
            lowered = canonical_key(key)
        if ignore and lowered in ignore:
            dropped += 1
            continue
        kind = type(item)
        if kind is str:
            out[lowered] = (item.strip(_ASCII_SPACE).lower() if item.isascii()
                            else canonical_string(item))
        elif kind is int or kind is bool or item is None:
            out[lowered] = item
        elif kind is float:
            out[lowered] = _fast_float(item)
        elif kind is dict:
            out[lowered] = _normalize_object(item, ignore, depth + 1)
        elif kind is list:
            out[lowered] = _normalize_array(item, ignore, depth + 1)
        else:
            raise _UseReference
    if len(out) + dropped != len(value):
        raise _UseReference  # keys collided after lowering: json.dumps cannot write both
    return out


def _normalize_array(value: list[Any], ignore: Collection[str], depth: int) -> Any:
    if depth >= MAX_DEPTH:
        raise CanonicalError(f"is nested deeper than {MAX_DEPTH} levels")
    out: list[Any] = []
    append = out.append
    for item in value:
        kind = type(item)
        if kind is str:
            append(item.strip(_ASCII_SPACE).lower() if item.isascii()
                   else canonical_string(item))
        elif kind is int or kind is bool or item is None:
            append(item)
        elif kind is float:
            append(_fast_float(item))
        elif kind is dict:
            append(_normalize_object(item, ignore, depth + 1))
        elif kind is list:
            append(_normalize_array(item, ignore, depth + 1))
        else:
            raise _UseReference
    return out


_ENCODER = json.JSONEncoder(ensure_ascii=False, check_circular=False, allow_nan=False,
                            sort_keys=True, separators=(",", ":"))
# The C encoder that JSONEncoder.encode builds on every call, built once (same arguments, so the
# same bytes): half the cost of a small value's text.
_c_encode = (c_make_encoder(None, _ENCODER.default, encode_basestring, None, ":", ",", True,
                            False, False) if c_make_encoder is not None else None)


def _dumps(value: Any) -> str:
    if _c_encode is None:  # pragma: no cover - CPython has the C accelerator
        return _ENCODER.encode(value)
    return "".join(_c_encode(value, 0))


def canonical_json(value: Any, ignore_keys: Collection[str] = ()) -> str:
    """The canonical text of ``value``. Entries whose canonical key is in ``ignore_keys`` (give
    them already canonical: ``canonical_key(k)``) are dropped at any depth."""
    return _text(value, ignore_keys, 0)


def canonical_bytes(value: Any, ignore_keys: Collection[str] = ()) -> bytes:
    return _utf8(_text(value, ignore_keys, 0))


def canonical_hash(value: Any, ignore_keys: Collection[str] = ()) -> str:
    """SHA-256 of the canonical form's UTF-8 bytes, 64 lowercase hex digits."""
    return hashlib.sha256(_bytes(value, ignore_keys, 0)).hexdigest()


def canonical_pair_hash(head: str | None, tail: Any, ignore_keys: Collection[str] = ()) -> str:
    """``canonical_hash([head, tail], ignore_keys)`` for a ``head`` that recurs (the run monitor
    keys every tool call by ``[action, args]``): the text's start, ``["head",``, is kept per
    head rather than written again."""
    return canonical_pair(head, tail, ignore_keys)[0]


def canonical_pair(head: str | None, tail: Any, ignore_keys: Collection[str] = ()
                   ) -> tuple[str, bytes]:
    """``canonical_pair_hash`` and the canonical UTF-8 text of ``tail`` (the run monitor reads
    a tool call's argument words from it)."""
    rest = _bytes(tail, ignore_keys, 1)  # first: its errors come first in the pair's text
    start = _starts.get(head)
    if start is None:
        start = b"[" + _utf8(_text(head, (), 1)) + b","
        if len(_starts) >= _KEY_CACHE_SIZE:
            _starts.clear()
        _starts[head] = start
    return hashlib.sha256(start + rest + b"]").hexdigest(), rest


_starts: dict[str | None, bytes] = {}


def _text(value: Any, ignore: Collection[str], depth: int) -> str:
    """The canonical text of ``value`` found ``depth`` levels down (the depth limit counts from
    the top)."""
    try:
        try:
            return _dumps(_normalize(value, ignore, depth))
        except _UseReference:
            return _reference(value, ignore, depth)
    except RecursionError:
        raise CanonicalError("is nested too deeply") from None
    except CanonicalError:
        raise
    except ValueError:  # e.g. an int past Python's 4,300-digit str() limit
        raise CanonicalError("contains a number that cannot be written out") from None


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate ("\ud800" is valid JSON, not Unicode)
        raise CanonicalError("contains a string that is not valid Unicode") from None


def _bytes(value: Any, ignore: Collection[str], depth: int) -> bytes:
    """``_utf8(_text(...))``, hot (two per tool call in the run monitor): the fast path inline;
    anything else (the reference, every error) through ``_text``, which gives the same text or
    raises the same CanonicalError."""
    try:
        form = _normalize(value, ignore, depth)
    except (_UseReference, RecursionError):
        return _utf8(_text(value, ignore, depth))
    return _written(form, value, ignore, depth)


def _written(form: Any, value: Any, ignore: Collection[str], depth: int) -> bytes:
    """The UTF-8 text of ``form``, ``value`` normalized: by the C encoder, or through ``_text``
    for what only writing finds (a lone surrogate, an int too long to write)."""
    if _c_encode is not None:
        try:
            return "".join(_c_encode(form, 0)).encode("utf-8")
        except ValueError:  # UnicodeEncodeError included
            pass
    return _utf8(_text(value, ignore, depth))


def canonical_hash_later(value: Any, ignore_keys: Collection[str] = ()) -> Callable[[], str]:
    """``canonical_hash(value, ignore_keys)`` as a function to call when the digest is needed
    (maybe never): ``value`` is normalized now, so every CanonicalError comes now but those
    only writing finds (a lone surrogate, an int too long to write), which come at the call."""
    form, digest = canonical_form(value, ignore_keys)
    if digest is not None:
        return lambda: digest
    return lambda: form_hash(form, value, ignore_keys)


def canonical_form(value: Any, ignore_keys: Collection[str] = ()) -> tuple[Any, str | None]:
    """``canonical_hash_later`` without a function object per value (a trace of thousands
    keeps them all): the normalized form (two values whose canonical texts are equal have equal
    forms) and None, for ``form_hash`` to write; or, when only the reference writes the value,
    None and its digest, made now."""
    try:
        return _normalize(value, ignore_keys, 0), None
    except (_UseReference, RecursionError):
        return None, canonical_hash(value, ignore_keys)


def form_hash(form: Any, value: Any, ignore_keys: Collection[str] = ()) -> str:
    """``canonical_hash(value, ignore_keys)`` from ``form``, ``canonical_form``'s of it."""
    return hashlib.sha256(_written(form, value, ignore_keys, 0)).hexdigest()


def reference_json(value: Any, ignore_keys: Collection[str] = ()) -> str:
    """The reference implementation alone (tests compare it with ``canonical_json``)."""
    try:
        return _reference(value, ignore_keys, 0)
    except RecursionError:
        raise CanonicalError("is nested too deeply") from None
