"""The semantic_loop canonical form, its SHA-256 and signature, computed locally.

Reproduces the server byte for byte (spec/semantic_loop.md, "Canonical form"; every vector of
spec/vectors/canonical.json). Applied recursively:

1. Object keys: NFC, lowercased, not trimmed; entries sorted by the lowered key (code point);
   keys that collide after lowering all stay, ordered by their canonical value's text.
2. Strings: NFC, trimmed of exactly the Unicode White_Space characters, lowercased.
3. Integers: their exact digits (``-0`` is ``0``).
4. Floats: rounded half away from zero to 2 decimals on the shortest round-trip decimal form
   (``repr``), no exponent, no trailing zeros, no decimal point when integral, zero as ``0``.
5. true, false, null as themselves; arrays keep their order.
6. Compact JSON, non-ASCII as itself; only ``"``, ``\\`` and U+0000..U+001F are escaped
   (``\\b \\f \\n \\r \\t`` short, the others ``\\u00xx`` in lowercase hex).

Values are what ``json.loads`` gives: dict, list, str, int, float, bool, None. Parse JSON text
with ``json.loads`` (not a float-only parser) so that ``5`` and ``5.0`` stay distinct; both
canonicalize to ``5`` anyway, but ``1e21`` and ``1000000000000000000001`` do not.
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "CanonicalError",
    "canonical_hash",
    "canonical_key",
    "canonicalize",
    "semantic_signature",
]

MAX_DEPTH = 64  # nested objects/arrays, as the server: the 65th level is refused
MAX_KEY_LENGTH = 1_024  # characters of an object key, as the server
SIGNATURE_PREFIX = "semantic_loop:"

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


class CanonicalError(ValueError):
    """The value has no canonical form (the server would answer VALIDATION_ERROR).

    ``issue`` names the limit, never the offending value."""

    def __init__(self, issue: str) -> None:
        super().__init__(issue)
        self.issue = issue


def canonical_key(key: str) -> str:
    """Rule 1 for one key: NFC, lowercased, not trimmed (also how ``ignore_keys`` match)."""
    return unicodedata.normalize("NFC", key).lower()


def _string(value: str) -> str:
    return unicodedata.normalize("NFC", value).strip(WHITE_SPACE).lower()


def _float(value: float) -> str:
    if not math.isfinite(value):
        raise CanonicalError("contains a number that is not finite")
    rounded = Decimal(repr(value)).quantize(_HUNDREDTH, context=_DECIMAL)
    if not rounded:
        return "0"
    return f"{rounded:f}".rstrip("0").rstrip(".")  # quantize leaves exactly two decimals


def _quote(text: str) -> str:
    return '"' + text.translate(_ESCAPES) + '"'


def _write(value: Any, ignore: frozenset[str], depth: int) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _quote(_string(value))
    if isinstance(value, int):
        return str(value)  # -0 is already 0 for an int
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, dict | list | tuple):
        if depth >= MAX_DEPTH:
            raise CanonicalError(f"is nested deeper than {MAX_DEPTH} levels")
        if not isinstance(value, dict):
            return "[" + ",".join(_write(v, ignore, depth + 1) for v in value) + "]"
        entries = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalError("contains a key that is not a string")
            if len(key) > MAX_KEY_LENGTH:
                raise CanonicalError(f"contains a key longer than {MAX_KEY_LENGTH} characters")
            lowered = canonical_key(key)
            if lowered not in ignore:
                entries.append((lowered, _write(item, ignore, depth + 1)))
        # By key (code point order = UTF-8 byte order), then, for keys that collided after
        # lowering, by the value's canonical text.
        entries.sort()
        return "{" + ",".join(_quote(k) + ":" + v for k, v in entries) + "}"
    raise CanonicalError("contains a value that is not JSON")


def canonicalize(value: Any, ignore_keys: Iterable[str] = ()) -> str:
    """The canonical text of ``value``; entries whose key (lowercased) is in ``ignore_keys``
    are dropped at any depth, as the server's ``ignoreKeys``."""
    ignore = frozenset(canonical_key(k) for k in ignore_keys)
    try:
        return _write(value, ignore, 0)
    except RecursionError:
        raise CanonicalError("is nested too deeply") from None
    except CanonicalError:
        raise
    except ValueError:  # an int past Python's str() digit limit
        raise CanonicalError("contains a number that cannot be written out") from None


def canonical_hash(value: Any, ignore_keys: Iterable[str] = ()) -> str:
    """SHA-256 of the canonical form's UTF-8 bytes: 64 lowercase hex digits."""
    try:
        data = canonicalize(value, ignore_keys).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: valid JSON text, not Unicode
        raise CanonicalError("contains a string that is not valid Unicode") from None
    return hashlib.sha256(data).hexdigest()


def semantic_signature(metadata: Any, ignore_keys: Iterable[str] = ()) -> str:
    """``semantic_loop:<first 8 hex of canonical_hash>``: the signature agent.semantic_loop
    gives a group of checkpoints with this metadata. A checkpoint sent without metadata hashes
    as ``{}``: pass ``{}`` for it (``None`` is the JSON ``null``, a different state)."""
    return SIGNATURE_PREFIX + canonical_hash(metadata, ignore_keys)[:8]
