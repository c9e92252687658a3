"""The canonical form (spec/semantic_loop.md): the public vectors byte for byte, the rules one by
one, and properties over generated JSON values.

The vectors are the project's own copy of the spec's (spec/vectors/canonical.json), the file
both SDKs must reproduce too; tests/unit/test_vectors_copy.py keeps it equal to the spec's.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from loopsense import jsonio
from loopsense.core.canonical import (
    MAX_DEPTH,
    MAX_KEY_LENGTH,
    WHITE_SPACE,
    CanonicalError,
    canonical_bytes,
    canonical_float,
    canonical_hash,
    canonical_hash_later,
    canonical_json,
    canonical_key,
    canonical_pair_hash,
    reference_json,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
# The project's own copy of the spec's conformance vectors (a clone stands alone);
# tests/unit/test_vectors_copy.py compares it with ../shared/spec/vectors when that exists.
VECTORS_FILE = REPO_ROOT / "spec/vectors/canonical.json"


def _load_vectors() -> list[dict[str, str]]:
    vectors: list[dict[str, str]] = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))[
        "vectors"]
    assert vectors, f"{VECTORS_FILE} holds no vectors"
    return vectors


VECTORS = _load_vectors()


# ---- the spec's vectors, byte for byte ------------------------------------------------------


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_canonical_string_and_sha256(vector):
    value = jsonio.loads(vector["input"])  # the server's own parser
    text = canonical_json(value)
    assert text == vector["canonical"]
    assert reference_json(value) == vector["canonical"]
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == vector["sha256"]
    assert canonical_hash(value) == vector["sha256"]


def test_every_vector_was_read():
    assert len(VECTORS) >= 31
    assert len({v["name"] for v in VECTORS}) == len(VECTORS)


# ---- the rules, one by one ------------------------------------------------------------------


def test_spec_example_both_spellings_give_one_form():
    a = {"userId": 7, "Plan": "  Retry Search  "}
    b = {"USERID": 7.0, "plan": "retry search"}
    assert canonical_json(a) == canonical_json(b) == '{"plan":"retry search","userid":7}'
    assert canonical_hash(a).startswith("97a932d8")


@pytest.mark.parametrize(("value", "text"), [
    (2.675, "2.68"), (1.005, "1.01"), (-2.345, "-2.35"), (4.999, "5"), (-0.001, "0"),
    (0.125, "0.13"), (-0.125, "-0.13"), (0.1 + 0.2, "0.3"), (5.0, "5"), (-0.0, "0"),
    (0.004999, "0"), (0.005, "0.01"), (-0.005, "-0.01"), (1e21, "1000000000000000000000"),
    (1e23, "100000000000000000000000"),  # the shortest form, not the double's exact value
    (1.5e-3, "0"), (1e-7, "0"), (123456.789, "123456.79"), (0.1, "0.1"), (10.10, "10.1"),
    (1.7976931348623157e308, "17976931348623157" + "0" * 292), (99.995, "100"),
    (12345678901234.567, "12345678901234.57"), (0.995, "1"), (-99.994, "-99.99"),
])
def test_float_rule(value, text):
    assert canonical_float(value) == text
    assert canonical_json(value) == text
    assert reference_json(value) == text


@pytest.mark.parametrize(("value", "text"), [
    (0, "0"), (-0, "0"), (5, "5"), (-12, "-12"), (2**64, "18446744073709551616"),
    (-(10**40) - 1, "-10000000000000000000000000000000000000001"),
])
def test_integers_keep_their_exact_digits(value, text):
    assert canonical_json(value) == text
    assert canonical_json(jsonio.loads(text)) == text


def test_json_integers_and_floats_are_told_apart_only_where_the_rules_need_it():
    assert canonical_json(jsonio.loads("5")) == canonical_json(jsonio.loads("5.0")) == "5"
    assert canonical_json(jsonio.loads("5.001")) == "5"
    assert canonical_json(jsonio.loads("5.006")) == "5.01"
    big = "123456789012345678901234567890"
    assert canonical_json(jsonio.loads(big)) == big  # exact: a float would lose digits
    assert canonical_json(jsonio.loads(big + ".0")) == "123456789012345680000000000000"


def test_white_space_is_exactly_unicode_white_space():
    expected = {*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028,
                0x2029, 0x202F, 0x205F, 0x3000}
    assert {ord(c) for c in WHITE_SPACE} == expected
    for char in WHITE_SPACE:
        assert canonical_json(f"{char}x{char}") == '"x"'
    for kept in ("\u001c", "\u001d", "\u001e", "\u001f", "\ufeff", "\u200b", "\u180e"):
        assert canonical_json(f"{kept}x{kept}") == json.dumps(f"{kept}x{kept}",
                                                              ensure_ascii=False)


def test_inner_whitespace_and_key_whitespace_are_kept():
    assert canonical_json({" Key ": "  a  b  "}) == '{" key ":"a  b"}'


def test_escaping_only_quote_backslash_and_c0_controls():
    text = "".join(chr(i) for i in range(0x20)) + '"\\/\u007f\u0085\u2028\u00e9\U0001F600'
    # trimming takes \t..\r from the start; keep them inside with a non-space guard
    out = canonical_json("x" + text + "x")
    assert out == ('"x\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n'
                   '\\u000b\\f\\r\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015'
                   '\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f'
                   '\\"\\\\/\u007f\u0085\u2028\u00e9\U0001F600x"')
    assert reference_json("x" + text + "x") == out


def test_keys_sort_by_code_point_not_utf16():
    value = {"\U0001F600": 1, "\uffff": 2, "\u00e9": 3, "z": 4, "Z": 5, "": 6}
    assert canonical_json(value) == '{"":6,"z":4,"z":5,"é":3,"\uffff":2,"\U0001F600":1}'


def test_colliding_keys_all_stay_ordered_by_their_values_bytes():
    value = {"Dup": {"b": 1}, "DUP": [2], "dup": "x", "dUp": None, "duP": 10, "DuP": 9}
    # canonical values: {"b":1} [2] "x" null 10 9 -> byte order: " < 1 < 9 < [ < n < {
    assert canonical_json(value) == (
        '{"dup":"x","dup":10,"dup":9,"dup":[2],"dup":null,"dup":{"b":1}}')
    assert reference_json(value) == canonical_json(value)
    # ... at any depth, and the fast path hands over to the reference for the whole value
    nested = {"outer": [value, {"k": 1.234}]}
    assert canonical_json(nested) == reference_json(nested)


def test_collision_order_is_by_utf8_bytes_of_the_canonical_value():
    # UTF-8 (and code point) order puts U+FFFF before U+1F600; UTF-16 would not.
    value = {"K": "\U0001F600", "k": "\uffff", "k\u0301": 1}
    assert canonical_json(value) == '{"k":"\uffff","k":"\U0001F600","\u1e31":1}'
    assert reference_json(value) == canonical_json(value)


def test_nfc_applies_to_keys_and_strings():
    assert canonical_json({"Cafe\u0301": "Cafe\u0301"}) == '{"café":"café"}'
    assert canonical_key("\u212b") == "\u00e5"  # ANGSTROM SIGN -> NFC Å -> å


def test_literals_arrays_and_empty_containers():
    assert canonical_json([True, False, None, [], {}, [[]]]) == "[true,false,null,[],{},[[]]]"


def test_ignore_keys_drop_entries_at_any_depth():
    value = {"ts": 1, "a": [{"TS": 2, "b": {"ts": 3, "c": 4}}], "Ts": 5}
    assert canonical_json(value, frozenset({"ts"})) == '{"a":[{"b":{"c":4}}]}'
    assert reference_json(value, frozenset({"ts"})) == '{"a":[{"b":{"c":4}}]}'


# ---- limits and rejected values -------------------------------------------------------------


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(depth):
        value = {"k": value} if i % 2 else [value]
    return value


def test_depth_limit_is_64_containers():
    assert canonical_json(nested(MAX_DEPTH)).count("[") == MAX_DEPTH // 2
    assert reference_json(nested(MAX_DEPTH)) == canonical_json(nested(MAX_DEPTH))
    for depth in (MAX_DEPTH + 1, 500, 5_000):
        for fn in (canonical_json, reference_json):
            with pytest.raises(CanonicalError) as caught:
                fn(nested(depth, "SECRET"))
            assert caught.value.issue == "is nested deeper than 64 levels"


def test_key_length_limit():
    assert canonical_json({"K" * MAX_KEY_LENGTH: 1}) == '{"' + "k" * MAX_KEY_LENGTH + '":1}'
    for fn in (canonical_json, reference_json):
        with pytest.raises(CanonicalError) as caught:
            fn({"a": [{"K" * (MAX_KEY_LENGTH + 1): 1}]})
        assert caught.value.issue == "contains a key longer than 1024 characters"
    # the key cache never lets a long key skip the check
    long_key = "x" * 10_000
    canonical_key(long_key)
    with pytest.raises(CanonicalError):
        canonical_json({long_key: 1})


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), 1e400])
def test_non_finite_numbers_are_rejected_everywhere(bad):
    for value in (bad, [1, bad], {"a": {"b": bad}}, {"a": "x", "A": bad}):
        with pytest.raises(CanonicalError) as caught:
            canonical_json(value)
        assert caught.value.issue == "contains a number that is not finite"


def test_lone_surrogate_is_rejected_when_hashing():
    with pytest.raises(CanonicalError) as caught:
        canonical_hash({"s": "\ud800"})
    assert caught.value.issue == "contains a string that is not valid Unicode"


def test_an_integer_too_long_to_write_is_an_error_not_a_crash():
    with pytest.raises(CanonicalError):
        canonical_json(10**5000)


@pytest.mark.parametrize("value", [
    nested(MAX_DEPTH + 1), {"a": [{"K" * (MAX_KEY_LENGTH + 1): 1}]}, {"a": float("nan")},
    {"a": "x", "A": float("inf")}, 10**5000, {"s": "\ud800"}, {1: 2}, {"a": {1, 2}}],
    ids=["deep", "long key", "nan", "inf, collided keys", "long int", "lone surrogate",
         "int key", "set"])
def test_canonical_hash_fails_as_canonical_bytes_does(value):
    """canonical_hash runs the fast path inline and hands every failure to canonical_bytes."""
    with pytest.raises(CanonicalError) as expected:
        canonical_bytes(value)
    with pytest.raises(CanonicalError) as caught:
        canonical_hash(value)
    assert caught.value.issue == expected.value.issue


@pytest.mark.parametrize(("value", "ignore"), [
    ({"a": 1, "A": 2}, ()),  # keys that collide after lowering: the reference writes them
    ([2.675, 1e16, -0.004, 123456789012345.678], ()),  # floats the reference may write
    ({"Keep": " X ", "drop": {"deep": 1}, "n": [{"DROP": 2}]}, ("drop",)),
    ("  Plain  ", ()), (None, ()), (7, ())])
def test_canonical_hash_is_the_sha256_of_canonical_bytes(value, ignore):
    assert canonical_hash(value, ignore) == hashlib.sha256(
        canonical_bytes(value, ignore)).hexdigest()


@pytest.mark.parametrize("tail", [
    nested(MAX_DEPTH - 1), nested(MAX_DEPTH), {"a": float("nan")}, {"s": "\ud800"}, {1: 2},
    {"a": 1, "A": 2}, [2.675, 1e16], None, {"Keep": " X ", "drop": [{"DROP": 2}]}])
@pytest.mark.parametrize("head", ["read_file", " Read_File ", "\ud800", None])
def test_canonical_pair_hash_is_the_hash_of_the_pair(head, tail):
    """Same digest as canonical_hash([head, tail]), or the same error: the tail counts one
    level deeper (nested(MAX_DEPTH - 1) fits in the pair, nested(MAX_DEPTH) does not)."""
    for _ in range(2):  # the second time, head's start of the text comes from the cache
        try:
            expected = canonical_hash([head, tail], ("drop",))
        except CanonicalError as error:
            with pytest.raises(CanonicalError) as caught:
                canonical_pair_hash(head, tail, ("drop",))
            assert caught.value.issue == error.issue
        else:
            assert canonical_pair_hash(head, tail, ("drop",)) == expected


@pytest.mark.parametrize("value", [
    nested(MAX_DEPTH + 1), {"a": [{"K" * (MAX_KEY_LENGTH + 1): 1}]}, {"a": float("nan")},
    {"a": "x", "A": float("inf")}, 10**5000, {"s": "\ud800"}, {1: 2}, {"a": {1, 2}},
    {"a": 1, "A": 2}, [2.675, 1e16]],
    ids=["deep", "long key", "nan", "inf, collided keys", "long int", "lone surrogate",
         "int key", "set", "collided keys", "reference floats"])
def test_canonical_hash_later_is_canonical_hash(value):
    """The same digest or the same error; the errors only writing finds come at the call, the
    others at once."""
    try:
        expected = canonical_hash(value)
    except CanonicalError as error:
        with pytest.raises(CanonicalError) as caught:
            canonical_hash_later(value)()
        assert caught.value.issue == error.issue
    else:
        assert canonical_hash_later(value)() == expected
    if value in (10**5000, {"s": "\ud800"}):
        canonical_hash_later(value)  # no error until the digest is asked for
    elif value == nested(MAX_DEPTH + 1):
        with pytest.raises(CanonicalError):
            canonical_hash_later(value)


def test_errors_never_quote_the_value():
    for value in ({"SECRET" * 300: 1}, nested(70, "SECRET"), {"SECRET": float("nan")}):
        with pytest.raises(CanonicalError) as caught:
            canonical_json(value)
        assert "SECRET" not in str(caught.value).upper()


def test_a_non_json_value_is_an_error():
    with pytest.raises(CanonicalError):
        canonical_json({"a": {1, 2}})


# ---- known limit of the spec's order of rules (NFC, then lowercase) -------------------------


def test_lowercasing_after_nfc_can_leave_a_composable_pair():
    """'J' + U+030C has no precomposed capital; lowercased it is 'j' + U+030C, which NFC would
    compose to U+01F0. The spec normalizes before lowercasing, so the canonical string keeps
    the pair and is itself not canonical (docs/decisions.md). This pins the spec's behaviour."""
    once = canonical_json("J\u030c")
    assert once == '"j\u030c"'
    assert canonical_json(json.loads(once)) == '"\u01f0"'


# ---- properties -----------------------------------------------------------------------------

_KEY_CHARS = st.sampled_from(list("abcXYZ_-0 éÉåÅßøØ") + ["\u0301", "\U0001F600"])
_TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=12)
_SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
            | st.floats(allow_nan=False, allow_infinity=False) | _TEXT)


_KEYS = st.text(_KEY_CHARS, max_size=5)


def json_values(keys: st.SearchStrategy[str] = _KEYS) -> Any:
    return st.recursive(
        _SCALARS,
        lambda children: st.lists(children, max_size=4)
        | st.dictionaries(keys, children, max_size=4),
        max_leaves=20,
    )


def _has_duplicate_keys(text: str) -> bool:
    found = False

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal found
        found = found or len({k for k, _ in pairs}) != len(pairs)
        return dict(pairs)

    json.loads(text, object_pairs_hook=hook)
    return found


@settings(max_examples=400, deadline=None)
@given(json_values())
@example({"dup": 2, "DUP": 1})
@example({"a": [1.005, "  X  ", {"B": -0.0}]})
def test_fast_path_and_reference_agree(value):
    try:
        expected = reference_json(value)
    except CanonicalError:
        with pytest.raises(CanonicalError):
            canonical_json(value)
        return
    assert canonical_json(value) == expected


@settings(max_examples=200, deadline=None)
@given(_TEXT, json_values())
def test_canonical_pair_hash_agrees_with_canonical_hash(head, tail):
    try:
        expected = canonical_hash([head, tail])
    except CanonicalError:
        with pytest.raises(CanonicalError):
            canonical_pair_hash(head, tail)
        return
    assert canonical_pair_hash(head, tail) == expected


@settings(max_examples=200, deadline=None)
@given(json_values())
def test_canonical_hash_later_agrees_with_canonical_hash(value):
    try:
        expected = canonical_hash(value, ("c",))
    except CanonicalError:
        with pytest.raises(CanonicalError):
            canonical_hash_later(value, ("c",))()
        return
    assert canonical_hash_later(value, ("c",))() == expected


@settings(max_examples=400, deadline=None)
@given(json_values())
def test_canonicalizing_twice_changes_nothing(value):
    """canonical_json(json.loads(c)) == c for c = canonical_json(value), wherever c can be
    read back as the same value: c has no repeated key (json.loads keeps only the last of a
    repeated key) and every string in c is NFC (see the J + U+030C test above)."""
    import unicodedata

    text = canonical_json(value)
    assume(not _has_duplicate_keys(text))
    assume(unicodedata.is_normalized("NFC", text))
    assert canonical_json(json.loads(text)) == text
    assert canonical_json(jsonio.loads(text.encode("utf-8"))) == text


def _shuffle_keys(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffle_keys(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffle_keys(v, rng) for v in value]
    return value


def _recase_keys(value: Any, rng: random.Random) -> Any:
    """Every key in random case (only where upper/lower round-trip, as 'ß' -> 'SS' does not),
    the same entries: a recasing that would merge two keys of one object is skipped."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            new = "".join(c.upper() if rng.random() < 0.5 and c.upper().lower() == c.lower()
                          else c for c in k)
            if new in out or (new != k and new in value):
                new = k  # recasing must not merge two entries of the same object
            out[new] = _recase_keys(v, rng)
        return out
    if isinstance(value, list):
        return [_recase_keys(v, rng) for v in value]
    return value


def _pad_strings(value: Any, rng: random.Random) -> Any:
    if isinstance(value, str):
        pad = lambda: "".join(rng.choice(WHITE_SPACE) for _ in range(rng.randrange(4)))  # noqa: E731
        return pad() + value + pad()
    if isinstance(value, dict):
        return {k: _pad_strings(v, rng) for k, v in value.items()}
    if isinstance(value, list):
        return [_pad_strings(v, rng) for v in value]
    return value


@settings(max_examples=300, deadline=None)
@given(json_values(), st.randoms(use_true_random=False))
def test_key_order_never_changes_the_hash(value, rng):
    assert canonical_hash(_shuffle_keys(value, rng)) == canonical_hash(value)


@settings(max_examples=300, deadline=None)
@given(json_values(keys=st.text(st.sampled_from(list("abcxyzABCXYZ_0éÉåÅ")), max_size=5)),
       st.randoms(use_true_random=False))
def test_key_case_never_changes_the_hash(value, rng):
    assert canonical_hash(_recase_keys(value, rng)) == canonical_hash(value)


@settings(max_examples=300, deadline=None)
@given(json_values(), st.randoms(use_true_random=False))
def test_surrounding_whitespace_never_changes_the_hash(value, rng):
    assert canonical_hash(_pad_strings(value, rng)) == canonical_hash(value)


@settings(max_examples=500, deadline=None)
@given(st.integers(min_value=-(10**12), max_value=10**12),
       st.floats(min_value=-0.0049, max_value=0.0049))
@example(267, 0.0049)
@example(0, -0.0049)
@example(-1, 0.0049)
def test_float_noise_below_half_a_hundredth_never_changes_the_hash(hundredths, noise):
    """A value with 2 decimals, plus noise that stays inside its rounding interval (|noise| <
    0.005 and never reaching a half boundary), hashes as the value itself."""
    clean = hundredths / 100
    noisy = clean + noise
    assume(abs(noisy - clean) < 0.00495)  # float addition cannot push it to the boundary
    assert canonical_hash({"x": noisy}) == canonical_hash({"x": clean})
    assert canonical_json(noisy) == reference_json(noisy)


def _leaf_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [path] + [p for k, v in value.items() for p in _leaf_paths(v, (*path, k))]
    if isinstance(value, list):
        return [path] + [p for i, v in enumerate(value) for p in _leaf_paths(v, (*path, i))]
    return [path]


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_replace(v, rest, new) if k == head else v) for k, v in value.items()}
    return [(_replace(v, rest, new) if i == head else v) for i, v in enumerate(value)]


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


@settings(max_examples=400, deadline=None)
@given(json_values(), st.data())
def test_any_other_change_of_a_value_changes_the_hash(value, data):
    """Replace any one part of the value (a leaf, an array, an object) by something whose own
    canonical form differs: the whole value's hash differs."""
    path = data.draw(st.sampled_from(_leaf_paths(value)))
    old = _get(value, path)
    new = data.draw(json_values())
    assume(canonical_json(new) != canonical_json(old))
    changed = _replace(value, path, new)
    # replacing under a key that collides with a sibling replaces one entry of the pair: still
    # a different multiset of entries, so still a different text
    assert canonical_hash(changed) != canonical_hash(value)


@settings(max_examples=200, deadline=None)
@given(json_values(), st.text(_KEY_CHARS, min_size=1, max_size=5), json_values())
def test_adding_or_removing_an_entry_changes_the_hash(value, key, item):
    base = {"root": value}
    grown = {**base, key: item} if key != "root" else {"root": value, "x": item}
    assert canonical_hash(grown) != canonical_hash(base)
    assert canonical_hash([value, item]) != canonical_hash([value])
