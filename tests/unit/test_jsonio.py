"""jsonio.loads: the API's JSON policy, and its prefilter never skipping a string it must check."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsense import jsonio
from loopsense.errors import LoopsenseError

NOT_UNICODE = ("body", "contains a string that is not valid Unicode")
NOT_FINITE = ("body", "contains a number that is not finite")


def refusal(raw: bytes | str) -> tuple[str, str] | None:
    try:
        jsonio.loads(raw)
    except LoopsenseError as error:
        assert error.code == "VALIDATION_ERROR"
        return error.details[0].path, error.details[0].issue
    return None


@pytest.mark.parametrize("raw, expected", [
    ('{"a": "\\ud800"}', NOT_UNICODE),                       # lone high surrogate, escaped
    ('{"a": "x\\uDFFFy"}', NOT_UNICODE),                     # lone low surrogate, upper case
    ('{"\\udc00": 1}', NOT_UNICODE),                          # in a key
    ('[["ok", {"k": ["\\ud83d"]}]]', NOT_UNICODE),           # deep inside
    ('{"a": "\\ud83d\\ude00"}', None),                        # a pair: one character
    ('{"a": "\\u00e9\\u0041 \\\\ud800"}', None),              # an escaped backslash, then text
    ('{"a": NaN}', NOT_FINITE),
    ('[-Infinity]', NOT_FINITE),
    ('{"a": 1e400}', NOT_FINITE),
    ('{"a": 1e308, "b": 12345678901234567890}', None),
    ('{"a": ', ("body", "is not valid JSON")),
])
def test_the_policy_on_text_and_on_utf8_bytes(raw: str, expected: tuple[str, str] | None) -> None:
    assert refusal(raw) == expected
    assert refusal(raw.encode()) == expected


def test_a_raw_surrogate_is_refused_as_str_and_as_bytes_in_every_json_encoding() -> None:
    text = '{"a": ["\ud800"]}'
    assert refusal(text) == NOT_UNICODE
    for encoding in ("utf-8", "utf-16", "utf-16-le", "utf-16-be", "utf-32"):
        assert refusal(text.encode(encoding, "surrogatepass")) == NOT_UNICODE, encoding
        # The escaped form too: in UTF-16/32 its bytes are not those of the UTF-8 patterns.
        assert refusal('{"a": "\\ud800"}'.encode(encoding)) == NOT_UNICODE, encoding
    assert refusal('{"a": "\U0001f600 é"}'.encode("utf-16")) is None


_CHARS = st.characters(codec=None, categories=None) | st.sampled_from("\ud800\udbff\udc00\udfff")
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(_CHARS, max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(_CHARS, max_size=4),
                                                                inner, max_size=4),
    max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(_VALUES, st.booleans(), st.sampled_from(["str", "utf-8", "utf-16"]))
def test_the_prefilter_refuses_exactly_what_walking_every_string_refuses(
        value: object, ascii_only: bool, form: str) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    raw: bytes | str = text if form == "str" else text.encode(form, "surrogatepass")
    expected = None if jsonio.is_unicode(json.loads(text)) else NOT_UNICODE
    assert refusal(raw) == expected
