"""Reference implementations of agent.loops' lexical vectorizer and similar-graph components,
written from the description in docs/skills/loops.md with plain Python (dicts, loops, ints),
to check the vectorized ones in loopsense.core against.
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter

import numpy as np

M64 = (1 << 64) - 1


def is_word_char(char: str) -> bool:
    if char.isascii():
        return char.isdigit() or "a" <= char <= "z"
    return char.isalnum() or unicodedata.category(char)[0] == "M"


def naive_tokens(message: str) -> list[str]:
    text = message.replace("\x00", " ")
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = text.lower()
    tokens: list[str] = []
    current = ""
    for char in text + " ":
        if is_word_char(char):
            current += char
        elif current:
            tokens.append(current)
            current = ""
    out = []
    for token in tokens:
        hexdigits = all(c in "0123456789abcdef" for c in token)
        if hexdigits and any(c in "0123456789" for c in token):
            out.append("0")
            continue
        collapsed = ""
        previous_digit = False
        for c in token:
            digit = c in "0123456789"
            if not (digit and previous_digit):
                collapsed += "0" if digit else c
            previous_digit = digit
        out.append(collapsed)
    return out


def naive_normalize(message: str) -> str:
    return " ".join(naive_tokens(message))


def mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def gram_hashes(message: str) -> list[int]:
    tokens = naive_tokens(message)
    if not tokens:
        return []
    padded = " " + " ".join(tokens) + " "
    units = [(ord(c) & 0xFFFF) ^ (ord(c) >> 16) for c in padded]
    out = []
    for i in range(len(units) - 3):
        packed = (units[i] << 48) | (units[i + 1] << 32) | (units[i + 2] << 16) | units[i + 3]
        out.append(mix(packed))
    return out


def naive_vectorize(messages: list[str], dimensions: int = 512) -> np.ndarray:
    n = len(messages)
    counts = [Counter(h >> 14 for h in gram_hashes(m)) for m in messages]
    df: Counter[int] = Counter()
    for c in counts:
        df.update(c.keys())
    out = np.zeros((n, dimensions), dtype=np.float64)
    for row, c in enumerate(counts):
        for feature, tf in c.items():
            weight = (1 + math.log(tf)) * (1 + math.log((1 + n) / (1 + df[feature])))
            sign = -1.0 if (feature >> 49) & 1 else 1.0
            out[row, feature & (dimensions - 1)] += sign * weight
    norms = np.linalg.norm(out, axis=1)
    out[norms > 0] /= norms[norms > 0, None]
    return out.astype(np.float32)


def naive_components(vectors: np.ndarray, threshold: float) -> list[int]:
    """Union-find over every pair, in Python: label = smallest index of the component."""
    n = len(vectors)
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for i in range(n):
        for j in range(i + 1, n):
            dot = np.float32(np.dot(vectors[i].astype(np.float32), vectors[j].astype(np.float32)))
            if np.float32(1.0) - dot < np.float32(threshold):
                a, b = find(i), find(j)
                parent[max(a, b)] = min(a, b)
    return [find(i) for i in range(n)]
