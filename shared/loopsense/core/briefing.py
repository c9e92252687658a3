"""The context briefing of a fresh attempt (spec/loop_safety.md, "Briefing a fresh attempt";
docs/recover.md): a run's lessons and snapshots ranked by relevance to a query and packed into
a text block within a token budget. Pure and deterministic: no clock, no salted hash.

Relevance: the cosine similarity of an item's content (a lesson's tags and text; a snapshot's
reason and entries; never the times and ids of its title) with the query under agent.loops'
lexical vectorizer (core/lexvec.py: the query and every item vectorized together, so words
shared by all items weigh less), rounded to 6 decimals, a negative one (hash collisions)
counted as 0. Ties go to the newer item (``created``), then to the smaller id. Items that share
nothing with the query (score 0) still follow, newest first: a briefing with budget left tells
what else is known.

Tokens: ``estimate_tokens(text) = ceil(UTF-8 bytes / 4)``, the usual four characters of
English per token; multi-byte characters count more, so the estimate errs on the large side
for other scripts. The block's estimate is at most the budget: an item whose block does not
fit is left out (a snapshot keeps the entries that fit, in key order, and says how many).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loopsense.core.lexvec import vectorize

HEADER = "What earlier attempts of this run learned (most relevant first):"
SCORE_DIGITS = 6


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text.encode("utf-8")) / 4)


@dataclass(frozen=True)
class Item:
    """A lesson (``lines`` empty) or a snapshot (``lines``: its entries, ``key: json``)."""

    kind: str  # "lesson" | "snapshot"
    id: str
    created: str  # ISO time; sorts as time
    title: str  # the first line: what the item is
    text: str  # a lesson's text (empty for a snapshot)
    lines: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()  # a lesson's tags, a snapshot's reason

    def document(self) -> str:
        """What relevance is computed over: the content, not the title's times and ids (noise
        that would match any query with numbers)."""
        return "\n".join((*self.terms, self.text, *self.lines))


def ranked(query: str, items: Sequence[Item]) -> list[tuple[float, Item]]:
    """Items by relevance to ``query``, then recency, then id."""
    if not items:
        return []
    vectors = vectorize([query, *(i.document() for i in items)]).astype(np.float64)
    scores = vectors[1:] @ vectors[0]
    scored = [(round(max(float(s), 0.0), SCORE_DIGITS), i) for s, i in zip(scores, items,
                                                                          strict=True)]
    scored.sort(key=lambda pair: pair[1].id)
    scored.sort(key=lambda pair: pair[1].created, reverse=True)
    scored.sort(key=lambda pair: pair[0], reverse=True)
    return scored


def _block(item: Item, lines: Sequence[str], total: int) -> str:
    if item.kind == "lesson":
        return f"- {item.title}: {item.text}"
    shown = "" if len(lines) == total else f" ({len(lines)} of {total} shown)"
    return "\n".join([f"- {item.title}{shown}:", *(f"  {line}" for line in lines)])


@dataclass(frozen=True)
class Briefing:
    block: str
    items: list[dict[str, object]]
    tokens: int


def pack(query: str, items: Sequence[Item], budget: int) -> Briefing:
    """The most relevant items whose blocks fit, with the header, within ``budget`` tokens."""
    chosen: list[dict[str, object]] = []
    blocks: list[str] = []
    used = estimate_tokens(HEADER)
    if used > budget:
        return Briefing("", [], 0)
    for score, item in ranked(query, items):
        if item.kind == "lesson":
            lines: list[str] = []
            cost = estimate_tokens("\n" + _block(item, lines, 0))
        else:  # the entries that fit, in key order; the title priced at its longest
            title = f"\n- {item.title} ({len(item.lines)} of {len(item.lines)} shown):"
            cost = estimate_tokens(title)
            lines = []
            for line in item.lines:
                more = estimate_tokens(f"\n  {line}")
                if used + cost + more > budget:
                    break
                lines.append(line)
                cost += more
            if item.lines and not lines:
                continue
        if used + cost > budget:
            continue
        blocks.append(_block(item, lines, len(item.lines)))
        used += cost
        chosen.append({"type": item.kind, "id": item.id, "score": score,
                       "createdAt": item.created,
                       **({"entries": len(lines)} if item.kind == "snapshot" else {})})
    if not chosen:
        return Briefing("", [], 0)
    text = "\n".join([HEADER, *blocks])
    return Briefing(text, chosen, estimate_tokens(text))
