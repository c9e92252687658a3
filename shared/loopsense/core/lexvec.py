"""The built-in lexical vectorizer of agent.loops' similar_call: deterministic, no model, no
network, no salted hash (docs/skills/loops.md, "The lexical vectorizer").

A message becomes a unit vector of ``DIMENSIONS`` float32 numbers:

1. Normalize: Unicode NFKC, lowercase. Tokens are the runs of letters and digits; every other
   character (punctuation, underscores, whitespace) separates tokens. A token made only of hex
   digits with at least one decimal digit (a UUID part, a hash, a hex id) becomes ``0``;
   elsewhere every run of decimal digits becomes ``0`` (so a retry counter, a timestamp or a
   request number does not separate two tries). Tokens are joined by single spaces.
2. Features: the character 4-grams of that text with one space added at each end ("attempt
   0" gives " att", "atte", ..., "pt 0", "t 0 "). Crossing token boundaries, they carry some
   word order; a message with fewer than two letters or digits has none.
3. Weights: sublinear term frequency ``1 + ln(tf)`` times the smoothed inverse document
   frequency ``1 + ln((1 + n) / (1 + df))`` over the ``n`` messages vectorized together
   (agent.loops: the distinct messages of one model in one execution), so the words of a bulk
   job's template weigh less than the items that differ.
4. Project: a feature's identity is a 64-bit hash of its four code points (the code points
   packed into 16 bits each, mixed by the splitmix64 finalizer; no salt); it adds
   ``+-weight`` to coordinate ``hash mod DIMENSIONS``, the sign taken from another bit of the
   hash, so that collisions cancel on average. Then each row is L2-normalized. A message
   without features has the zero vector: it is similar to nothing.

Cosine similarity is the dot product of two vectors. All of it is vectorized with numpy over
all messages at once (there is no Python loop over characters, tokens or features).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import numpy as np

DIMENSIONS = 512  # coordinates of the projected vector (a power of two)
NGRAM = 4
DOC_BITS = 14  # documents per call < 2**14 (agent.loops: at most 10,000 llm_calls)

_U64 = np.uint64
_LOW_BITS = _U64((1 << DOC_BITS) - 1)


def _word_chars(codes: np.ndarray) -> np.ndarray:
    """Letters and digits: ASCII after lowercasing; beyond ASCII, ``str.isalnum`` or a
    combining mark (so that scripts with vowel signs keep their words whole)."""
    word = ((codes - 48) <= 9) | ((codes - 97) <= 25)  # unsigned: wraps below 48 / 97
    if codes.dtype != np.uint8:
        high = codes >= 128
        if high.any():
            distinct = np.unique(codes[high])
            keep = [c for c in distinct.tolist()
                    if chr(c).isalnum() or unicodedata.category(chr(c))[0] == "M"]
            if keep:
                word |= high & np.isin(codes, np.asarray(keep, dtype=codes.dtype))
    return word


def normalized_codes(messages: Sequence[str]) -> np.ndarray:
    """Step 1 for all messages at once: the code points of ``"\\x00 " + text + " "`` per
    message, text being the normalized message (uint8 when all of it is ASCII, else uint32)."""
    joined = "".join(f"\x00 {m.replace(chr(0), ' ')} " for m in messages)
    if not joined.isascii():
        joined = unicodedata.normalize("NFKC", joined)
    joined = joined.lower()
    if joined.isascii():
        codes = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    else:
        codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    sep = codes == 0
    word = _word_chars(codes)
    digit = (codes - 48) <= 9
    hexchar = digit | ((codes - 97) <= 5)
    edges = np.diff(word.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    keep = word & ~(digit & np.concatenate(([False], digit[:-1])))  # first digit of a run
    if starts.size:
        # Non-word characters are neither hex nor digits, so each reduceat segment (a token
        # and the separators after it) answers for its token alone.
        all_hex = ~np.logical_or.reduceat(word & ~hexchar, starts)
        is_hex = all_hex & np.logical_or.reduceat(digit, starts)
        hex_starts, hex_ends = starts[is_hex], ends[is_hex]
        if hex_starts.size:
            marks = np.zeros(codes.size + 1, dtype=np.int8)
            marks[hex_starts] = 1  # tokens never touch: no index is both a start and an end
            marks[hex_ends] = -1
            keep &= np.cumsum(marks[:-1], dtype=np.int8) == 0
            keep[hex_starts] = True
    else:
        hex_starts = starts
    # Separators stay; of each run of other non-word characters, the first becomes a space.
    keep |= sep | (~word & np.concatenate(([True], (word | sep)[:-1])))
    if codes.dtype == np.uint8:  # ASCII: every code mapped by one table look-up
        out = _ASCII_OUT[codes]
    else:
        out = codes.copy()
        out[digit] = 48
        out[~(word | sep)] = 32
    out[hex_starts] = 48
    return out[keep]


# What step 1 writes for an ASCII code: a digit becomes "0", a letter (lowercased already) or
# the separator stays, anything else becomes a space.
_ASCII_OUT = np.full(256, 32, dtype=np.uint8)
_ASCII_OUT[0] = 0
_ASCII_OUT[48:58] = 48
_ASCII_OUT[97:123] = np.arange(97, 123, dtype=np.uint8)


def normalize(message: str) -> str:
    """Step 1 for one message: the text its features are read from."""
    codes = normalized_codes([message]).astype(np.uint32)
    return codes.tobytes().decode("utf-32-le").lstrip("\x00").strip(" ")


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, in place: a fixed bijection of uint64 with good avalanche."""
    h ^= h >> _U64(30)
    h *= _U64(0xBF58476D1CE4E5B9)
    h ^= h >> _U64(27)
    h *= _U64(0x94D049BB133111EB)
    h ^= h >> _U64(31)
    return h


def features(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step 2 on ``normalized_codes``: (document index, 64-bit feature hash) of every 4-gram
    occurrence, document by document. Code points above U+FFFF are folded into 16 bits
    (``low ^ high``) before packing."""
    separators = np.flatnonzero(codes == 0)
    docs = separators.size
    size = codes.size
    count = size - NGRAM + 1
    if count <= 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint64)
    wide = codes.astype(np.uint64)
    if codes.dtype == np.uint32:
        wide = (wide & _U64(0xFFFF)) ^ (wide >> _U64(16))
    grams = wide[:count] << _U64(48)
    for k in range(1, NGRAM):
        grams |= wide[k:k + count] << _U64(16 * (NGRAM - 1 - k))
    # A 4-gram is valid when it holds no separator: it starts after a document's separator
    # and ends before the next one. Document i spans separators[i] .. separators[i+1] - 1.
    bounds = np.append(separators, size)
    per_doc = np.maximum(np.diff(bounds) - NGRAM, 0)
    valid = np.ones(count, dtype=bool)
    for k in range(NGRAM):
        at = separators - k
        valid[at[(at >= 0) & (at < count)]] = False
    doc = np.repeat(np.arange(docs, dtype=np.uint64), per_doc)
    return doc, _mix(grams[valid])


def sorted_keys(codes: np.ndarray, counting: bool | None = None) -> np.ndarray:
    """Every 4-gram occurrence as ``(top 50 bits of its hash) | document``, sorted. ASCII text
    (the common case) is ordered by counting instead of ``np.sort`` (3-4x faster on 2 M grams):
    its normalized alphabet is 28 symbols, so a 4-gram is one of 28**4 indices; the distinct
    ones are ranked by hash, and a stable radix argsort by rank keeps each rank's occurrences in
    document order, which is the sorted order. ``counting`` forces a way (tests)."""
    docs, tops, occurrences = sorted_features(codes, counting)
    keys = np.repeat(tops, occurrences)
    keys |= docs
    return keys


def sorted_features(codes: np.ndarray, counting: bool | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sorted_keys`` in parts: the documents of the keys in order, and each distinct feature's
    top 50 bits (ascending) with its number of occurrences (the keys are their runs)."""
    if counting is None:
        counting = codes.dtype == np.uint8
    found = _counted_keys(codes) if counting and codes.dtype == np.uint8 else None
    if found is not None:
        return found
    doc, hashes = features(codes)
    hashes &= ~_LOW_BITS
    hashes |= doc
    del doc
    hashes.sort()
    docs = hashes & _LOW_BITS
    hashes &= ~_LOW_BITS
    if hashes.size == 0:
        return docs, hashes, np.zeros(0, dtype=np.int64)
    new = np.empty(hashes.size, dtype=bool)
    new[0] = True
    np.not_equal(hashes[1:], hashes[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    return docs, hashes[starts], np.diff(starts, append=hashes.size)


# The normalized ASCII alphabet (a space, "0" for every digit, a-z) as symbols 0..27.
_ASCII_CODES = np.array([32, 48, *range(97, 123)], dtype=np.uint64)
_SYMBOL = np.full(256, 255, dtype=np.uint8)
_SYMBOL[_ASCII_CODES] = np.arange(_ASCII_CODES.size, dtype=np.uint8)
_BASE = _ASCII_CODES.size


def _counted_keys(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``sorted_features`` of uint8 codes by counting; None if a code is outside the alphabet or
    two 4-grams share the top 50 bits of their hash (then only a sort orders them as before)."""
    separators = np.flatnonzero(codes == 0)
    count = codes.size - NGRAM + 1
    if count <= 0:
        return (np.zeros(0, dtype=np.uint16), np.zeros(0, dtype=np.uint64),
                np.zeros(0, dtype=np.int64))
    symbols = _SYMBOL[codes]
    symbols[separators] = 0  # never read by a valid 4-gram
    if np.any(symbols == 255):
        return None
    gram = symbols[:count].astype(np.int32)
    for k in range(1, NGRAM):
        gram *= _BASE
        gram += symbols[k:k + count]
    valid = np.ones(count, dtype=bool)
    for k in range(NGRAM):
        at = separators - k
        valid[at[(at >= 0) & (at < count)]] = False
    gram = gram[valid]
    per_doc = np.maximum(np.diff(np.append(separators, codes.size)) - NGRAM, 0)
    doc = np.repeat(np.arange(separators.size, dtype=np.uint16), per_doc)  # < 2**DOC_BITS
    occurrences = np.bincount(gram, minlength=_BASE ** NGRAM)
    distinct = np.flatnonzero(occurrences)
    # The distinct 4-grams' hashes, packed from code points as features() packs them.
    packed = np.zeros(distinct.size, dtype=np.uint64)
    rest = distinct.copy()
    for k in range(NGRAM - 1, -1, -1):
        packed |= _ASCII_CODES[rest % _BASE] << _U64(16 * (NGRAM - 1 - k))
        rest //= _BASE
    top = _mix(packed) & ~_LOW_BITS
    order = np.argsort(top, kind="stable")
    top = top[order]
    if top.size > 1 and not np.all(top[1:] != top[:-1]):
        return None
    # Stable radix argsort by rank (numpy's stable argsort of 16-bit keys is a counting sort):
    # low 16 bits, then high bits; within a rank, occurrences stay in document order.
    narrow = distinct.size <= 1 << 16  # the common case: ranks read straight as 16 bits
    rank = np.zeros(_BASE ** NGRAM, dtype=np.uint16 if narrow else np.int32)
    rank[distinct[order]] = np.arange(distinct.size, dtype=rank.dtype)
    ranks = rank[gram]
    del gram
    if narrow:
        perm = np.argsort(ranks, kind="stable")
    else:
        perm = np.argsort((ranks & 0xFFFF).astype(np.uint16), kind="stable")
        perm = perm[np.argsort((ranks[perm] >> 16).astype(np.uint16), kind="stable")]
    del ranks
    return doc[perm], top, occurrences[distinct[order]]


def vectorize(messages: Sequence[str], dimensions: int = DIMENSIONS) -> np.ndarray:
    """Unit float32 vectors (``len(messages)`` x ``dimensions``) of steps 1-4; zero rows for
    messages without letters or digits."""
    n = len(messages)
    if n == 0:
        return np.zeros((0, dimensions), dtype=np.float32)
    if n >= 1 << DOC_BITS:
        raise ValueError(f"at most {(1 << DOC_BITS) - 1} messages per call")
    docs, tops, occurrences = sorted_features(normalized_codes(messages))
    if docs.size == 0:
        return np.zeros((n, dimensions), dtype=np.float32)
    # One order gives both frequencies: the keys (a feature's top 50 bits, a document) are
    # sorted, so a run of one document within a feature's run is its tf, and the number of
    # such runs is the feature's df. Intermediates are dropped as soon as they are used: this
    # is the memory peak of agent.loops (docs/benchmarks.md).
    feature_starts = np.cumsum(occurrences) - occurrences
    first = np.empty(docs.size, dtype=bool)
    first[0] = True
    np.not_equal(docs[1:], docs[:-1], out=first[1:])
    first[feature_starts] = True
    df = np.add.reduceat(first, feature_starts, dtype=np.int64)
    del feature_starts, occurrences
    starts = np.flatnonzero(first)
    del first
    tf = np.diff(starts, append=docs.size)
    pair_docs = docs[starts]
    del docs, starts
    feature = tops >> _U64(DOC_BITS)
    del tops
    # What depends on the feature alone (its idf, sign and coordinate) is computed once per
    # feature, then repeated over its documents.
    idf = 1.0 + np.log((1.0 + n) / (1.0 + np.arange(n + 1)))
    signed = idf[df]
    signed[(feature & _U64(1 << 49)) != 0] *= -1.0
    weight = np.repeat(signed, df)
    repeated = np.flatnonzero(tf > 1)
    if repeated.size:
        weight[repeated] *= 1.0 + np.log(tf[repeated])
    del tf
    # Column (low bits of the feature) * n + row (document), as one flat index into the
    # transposed matrix: a feature's run of documents then lands in one column's n bins rather
    # than a row apart each, which makes the scatter (the same additions in the same order)
    # about 3x faster.
    index = np.repeat((feature & _U64(dimensions - 1)).view(np.int64), df)
    del feature, df
    index *= n
    index += pair_docs.astype(np.int64, copy=False)
    del pair_docs
    dense = np.bincount(index, weights=weight, minlength=n * dimensions)
    del index, weight
    dense = dense.reshape(dimensions, n).T
    norms = np.sqrt(np.einsum("ij,ij->i", dense, dense))[:, None]
    np.divide(dense, norms, out=dense, where=norms > 0)
    return dense.astype(np.float32, order="C")
