"""The lexical vectorizer: equal to its plain-Python reference, deterministic across processes,
and normalizing what must not separate two tries of one prompt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsense.core import lexvec
from tests.naive_lexvec import naive_normalize, naive_vectorize

ROOT = Path(__file__).resolve().parents[2]

TRICKY = [
    "trace_id=3f1c9a2e-8b4d-4e6f-9a1b-2c3d4e5f6a7b\nClassify: \"I was charged\"",
    "Attempt 12 of 5!!",
    "  ???  ",
    "",
    "a",
    "ab",
    "【2026-03-12 18:00:05 JST】次の問い合わせを要約して",
    "Ünïcödé ﬁ ＡＢＣ１２３ cafe beef 3B a1",
    "x\x00y\x00\x00",
    "नमस्ते दुनिया",
    "req_8f3k2j9x h264 gpt4o 😀x 😀😀abc 𝔘𝔫𝔦",
    "İstanbul ΣΊΣΥΦΟΣ straße",
    "tabs\tand\nnewlines\r\n\u2028\u3000and nbsp\u00a0here",
    "0000 00 0a 0x1f 1e10 deadbeef 12ab34cd99",
]

text_strategy = st.text(
    alphabet=st.one_of(
        st.sampled_from("abcdefxyzABCDEF0123456789 _-:./\n\t\u00a0\u3000é日本😀\u0301\x00"),
        st.characters(codec="utf-8"),
    ),
    max_size=80,
)


@pytest.mark.parametrize("message", TRICKY)
def test_normalize_matches_the_reference(message):
    assert lexvec.normalize(message) == naive_normalize(message)


@settings(max_examples=400, deadline=None)
@given(st.lists(text_strategy, min_size=1, max_size=8))
def test_vectors_match_the_reference_exactly(messages):
    for message in messages:
        assert lexvec.normalize(message) == naive_normalize(message)
    np.testing.assert_allclose(lexvec.vectorize(messages), naive_vectorize(messages),
                               rtol=0, atol=1e-6)


def test_the_quality_set_vectors_match_the_reference():
    data = json.loads((ROOT / "tests/data/loops_quality.json").read_text(encoding="utf-8"))
    messages = [e["user_message"] for ex in data for e in ex["input"]["events"]
                if e["type"] == "llm_call"]
    np.testing.assert_allclose(lexvec.vectorize(messages), naive_vectorize(messages),
                               rtol=0, atol=1e-6)


def test_rows_are_unit_or_zero():
    vectors = lexvec.vectorize(TRICKY)
    norms = np.linalg.norm(vectors, axis=1)
    for message, norm in zip(TRICKY, norms, strict=True):
        has_features = len(naive_normalize(message)) >= 2
        assert norm == pytest.approx(1.0 if has_features else 0.0, abs=1e-5), message
    assert vectors.dtype == np.float32 and vectors.shape == (len(TRICKY), lexvec.DIMENSIONS)


@pytest.mark.parametrize(("a", "b"), [
    ("Attempt 1 of 5: extract the total", "Attempt 4 of 5: extract the total"),
    ("[2026-03-12T09:14:03.512Z] check pods", "[2026-03-12T10:01:59.001Z] check pods"),
    ("trace 3f1c9a2e-8b4d-4e6f-9a1b-2c3d4e5f6a7b: classify",
     "trace a7e2c410-1f3b-47d9-b8e5-0c9d2a6f4e13: classify"),
    ("sha 9f86d081884c7d659a2feaa0c55ad015 done", "sha 60303ae22b998861bce3b28f33eec1be done"),
    ("How do I reset my password?", "HOW DO I RESET MY PASSWORD"),
    ("ＡＢＣ full width", "abc full width"),
])
def test_what_drifts_between_tries_is_normalized_away(a, b):
    assert lexvec.normalize(a) == lexvec.normalize(b)
    va, vb = lexvec.vectorize([a, b])
    assert float(va @ vb) == pytest.approx(1.0, abs=1e-6)


def test_different_words_stay_different():
    assert lexvec.normalize("reset my password") != lexvec.normalize("reset my passport")
    va, vb = lexvec.vectorize(["What is the capital of France?",
                               "Summarize the open pull requests of acme/billing"])
    assert float(va @ vb) < 0.3


def test_idf_is_over_the_messages_vectorized_together():
    template = "Find the cheapest direct flight from {} to {} and return the price."
    items = [template.format(*pair) for pair in (("Lisbon", "Boston"), ("Boston", "Chicago"),
                                                 ("Chicago", "Denver"))]
    alone = lexvec.vectorize(items[:2])
    together = lexvec.vectorize(items)
    # The shared template weighs less when more messages share it: the pair moves apart.
    assert float(together[0] @ together[1]) < float(alone[0] @ alone[1])


def test_vectors_are_the_same_in_another_process_with_another_hash_seed():
    script = ("import sys, hashlib; from loopsense.core import lexvec; "
              "m = sys.stdin.read().split('\\n---\\n'); "
              "print(hashlib.sha256(lexvec.vectorize(m).tobytes()).hexdigest())")
    payload = "\n---\n".join(TRICKY).encode("utf-8", "surrogatepass")
    digests = set()
    for seed in ("1", "2"):
        done = subprocess.run([sys.executable, "-c", script], input=payload, capture_output=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}, check=True, timeout=60)
        digests.add(done.stdout.strip())
    local = __import__("hashlib").sha256(
        lexvec.vectorize(payload.decode("utf-8").split("\n---\n")).tobytes()).hexdigest()
    assert digests == {local.encode()}


def test_a_one_megabyte_message_is_vectorized():
    big = ("lorem ipsum dolor sit amet 12345 " * 32_000)[:1_000_000]
    vectors = lexvec.vectorize([big, big + " more", "something else entirely"])
    assert float(vectors[0] @ vectors[1]) > 0.99
    assert float(vectors[0] @ vectors[2]) < 0.3


def test_too_many_messages_for_the_document_bits_are_refused():
    with pytest.raises(ValueError):
        lexvec.vectorize(["x"] * (1 << lexvec.DOC_BITS))


ascii_text = st.text(alphabet=st.sampled_from("abcxyz AB01 9_-.\n\x00é"), max_size=60)


@settings(max_examples=300, deadline=None)
@given(st.lists(ascii_text, min_size=1, max_size=10))
def test_ordering_by_counting_gives_the_sorted_keys(messages):
    """The counting order (ASCII text) is the sort's order, key for key."""
    codes = lexvec.normalized_codes(messages)
    sorted_ = lexvec.sorted_keys(codes, counting=False)
    if codes.dtype == np.uint8:
        assert np.array_equal(lexvec.sorted_keys(codes, counting=True), sorted_)
    assert np.array_equal(lexvec.sorted_keys(codes), sorted_)
    # Its parts (what vectorize reads) agree both ways too: documents, features, their counts.
    for a, b in zip(lexvec.sorted_features(codes, counting=True),
                    lexvec.sorted_features(codes, counting=False), strict=True):
        assert a.tolist() == b.tolist()


def test_ordering_by_counting_past_65536_distinct_grams_and_on_the_quality_set():
    rng = np.random.default_rng(7)
    words = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz0 "), 400)) for _ in range(800)]
    data = json.loads((ROOT / "tests/data/loops_quality.json").read_text(encoding="utf-8"))
    quality = [e["user_message"] for ex in data for e in ex["input"]["events"]
               if e["type"] == "llm_call" and e["user_message"].isascii()]
    for messages in (words, quality):
        codes = lexvec.normalized_codes(messages)
        assert codes.dtype == np.uint8
        counted = lexvec.sorted_keys(codes, counting=True)
        assert np.array_equal(counted, lexvec.sorted_keys(codes, counting=False))
    distinct = np.unique(lexvec.sorted_keys(lexvec.normalized_codes(words)) >> np.uint64(14))
    assert distinct.size > 1 << 16  # the radix argsort's second pass ran
