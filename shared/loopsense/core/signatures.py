"""The hashed suffixes of agent.loops' identical_call and similar_call signatures
(spec/loops.md): the first 8 hex digits of SHA-256 over the UTF-8 bytes of the compact JSON
array ``[model, text]``, strings escaped as the canonical form's rule 6 says (``quote`` of
core/canonical.py, shared with agent.semantic_loop) and otherwise exactly as sent.
"""

from __future__ import annotations

import hashlib
import re

from loopsense.core.canonical import WHITE_SPACE, quote

_WHITE_SPACE_RUN = re.compile(f"[{re.escape(WHITE_SPACE)}]+")
_ASCII_DIGITS = re.compile(r"[0-9]+")


def pair_json(model: str, text: str) -> str:
    """``[model, text]`` as compact JSON with rule-6 escaping (non-ASCII as itself)."""
    return f"[{quote(model)},{quote(text)}]"


def hash8(model: str, text: str) -> str:
    return hashlib.sha256(pair_json(model, text).encode("utf-8")).hexdigest()[:8]


def template(message: str) -> str:
    """similar_call's template of a message: lowercased, runs of Unicode White_Space (the
    canonical form's set, not ``str.isspace``) collapsed to one space and trimmed, runs of
    ASCII digits replaced by ``#``."""
    text = _WHITE_SPACE_RUN.sub(" ", message.lower()).strip(" ")
    return _ASCII_DIGITS.sub("#", text)
