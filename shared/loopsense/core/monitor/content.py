"""content_loop: the same chunk of text recurring within one streamed message.

Consecutive ``text_chunk`` steps form one stream; any other step ends it. Every
``content_chunk_chars``-character window of the stream (sliding by one character) is counted;
``content_repeats`` occurrences of one window with an average distance of at most five windows
between them, and few distinct texts between occurrences (a list of items that share a prefix
is not a loop), make a critical finding. Markdown elements where repetition is normal (code
fences, tables, list items, headings, block quotes, dividers) reset the counts, and nothing is
tracked inside a code fence (every ``` toggles it).

State (JSON): ``text`` the tracked tail of the stream (``tail_chars``: all a loop can span),
``base`` how many characters were dropped from its front, ``scanned`` the next window start,
``pieces`` [stream offset, step index] where each step's text begins, ``code`` inside a fence,
``hit`` the finding once raised ([count, window, step indices, latest chunk]; it stands
until the stream ends). The window counts are
rebuilt from ``text`` at each chunk: bounded work, and a state that holds no index.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from loopsense.core.monitor.config import MonitorConfig
from loopsense.core.monitor.findings import CRITICAL, Finding

DISTANCE_CHUNKS = 5  # the largest average distance between occurrences, in windows
CHUNK = "text_chunk"


def tail_chars(size: int, repeats: int) -> int:
    """The tracked tail: the longest span ``repeats`` occurrences can cover and still be a loop
    (2,300 characters at the defaults)."""
    return (repeats - 1) * DISTANCE_CHUNKS * size + size

_TABLE = re.compile(r"(^|\n)\s*(\|.*\||[|+-]{3,})")
_LIST = re.compile(r"(^|\n)\s*([*+-]|\d+\.)\s")
_HEADING = re.compile(r"(^|\n)#+\s")
_QUOTE = re.compile(r"(^|\n)>\s")
_DIVIDER = re.compile(r"[-_=*+\u2500-\u257f]+")


def follow(state: dict[str, Any], step: Mapping[str, Any], index: int,
           config: MonitorConfig) -> None:
    """The step's part in the streamed message: a ``text_chunk`` joins it (opening one), any
    other step ends it."""
    if step.get("kind") != CHUNK:
        state["stream"] = None
        return
    if state["stream"] is None:
        state["stream"] = new_stream()
    text = step.get("text")
    if config.on("content_loop"):
        add_chunk(state["stream"], text if isinstance(text, str) else "", index, config)


def new_stream() -> dict[str, Any]:
    return {"text": "", "base": 0, "scanned": 0, "pieces": [], "code": False, "hit": None}


def _reset_tracking(stream: dict[str, Any]) -> None:
    stream["base"] += len(stream["text"])
    stream.update(text="", scanned=0, pieces=[])


def add_chunk(stream: dict[str, Any], text: str, index: int,
              config: MonitorConfig) -> Finding | None:
    """Feed one chunk; the stream's finding (raised now or earlier), if any."""
    if stream["hit"] is not None:  # it stands, with this chunk as fresh evidence
        stream["hit"][3] = index
        return finding(stream["hit"], config)
    fences = text.count("```")
    stripped = text.strip()
    divider = bool(stripped) and _DIVIDER.fullmatch(stripped) is not None
    if fences or divider or any(p.search(text) for p in (_TABLE, _LIST, _HEADING, _QUOTE)):
        _reset_tracking(stream)
    was_in_code = stream["code"]
    if fences % 2:
        stream["code"] = not was_in_code
    if was_in_code or stream["code"] or divider or not text:
        return None
    stream["pieces"].append([stream["base"] + len(stream["text"]), index])
    stream["text"] += text
    size, repeats = config.integer("content_chunk_chars"), config.integer("content_repeats")
    overflow = len(stream["text"]) - tail_chars(size, repeats)
    if overflow > 0:
        stream["text"] = stream["text"][overflow:]
        stream["base"] += overflow
        stream["scanned"] = max(0, stream["scanned"] - overflow)
        first = stream["base"]
        pieces = stream["pieces"]
        while len(pieces) > 1 and pieces[1][0] <= first:
            pieces.pop(0)
    hit = _scan(stream, size, repeats)
    if hit is None:
        return None
    hit.append(index)
    stream["hit"] = hit
    return finding(hit, config)


def _scan(stream: dict[str, Any], size: int, repeats: int) -> list[Any] | None:
    text = stream["text"]
    seen: dict[str, list[int]] = {}
    for start in range(stream["scanned"]):  # windows already scanned: their counts
        seen.setdefault(text[start:start + size], []).append(start)
    start = stream["scanned"]
    found = None
    while start + size <= len(text):
        positions = seen.setdefault(text[start:start + size], [])
        positions.append(start)
        start += 1
        if len(positions) >= repeats and _looping(text, positions[-repeats:], size, repeats):
            found = positions[-repeats:]
            break
    stream["scanned"] = start
    if found is None:
        return None
    return [repeats, size, _steps(stream, found)]


def _looping(text: str, recent: list[int], size: int, repeats: int) -> bool:
    if (recent[-1] - recent[0]) / (repeats - 1) > DISTANCE_CHUNKS * size:
        return False
    # A real loop repeats whole periods; distinct texts between occurrences are a list.
    periods = {text[a:b] for a, b in zip(recent, recent[1:], strict=False)}
    return len(periods) <= repeats // 2


def _steps(stream: dict[str, Any], positions: list[int]) -> list[int]:
    """The indices of the steps whose text holds the occurrences' first characters."""
    base, pieces = stream["base"], stream["pieces"]
    out: set[int] = set()
    for position in positions:
        offset = base + position
        step = pieces[0][1]
        for piece_offset, piece_step in pieces:
            if piece_offset > offset:
                break
            step = piece_step
        out.add(step)
    return sorted(out)


def finding(hit: list[Any], config: MonitorConfig) -> Finding:
    count, size, indices, latest = hit
    if latest not in indices:
        indices = [*indices, latest]
    return Finding("content_loop", CRITICAL, count, indices, count, first=indices[0],
                   facts={"chars": size})
