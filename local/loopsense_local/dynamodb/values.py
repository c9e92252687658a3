"""Attribute values as DynamoDB defines them: which are valid, how they compare and sort, their
size, numbers with DynamoDB's 38 digits, and binary values by their bytes (they travel and are
kept base64-encoded)."""

from __future__ import annotations

import base64
import binascii
import decimal
from decimal import Decimal
from typing import Any

from loopsense_local.dynamodb.errors import validation

AttributeValue = dict[str, Any]
Item = dict[str, AttributeValue]

MAX_NESTING = 32  # DynamoDB's limit on nested lists and maps
_SCALARS = ("S", "N", "B")
SETS = ("SS", "NS", "BS")
# DynamoDB's numbers: up to 38 significant digits, magnitudes 1E-130 to below 1E+126; exact,
# whatever decimal context the calling thread has set.
_NUMBERS = decimal.Context(prec=38, Emin=-130, Emax=125, traps=[
    decimal.InvalidOperation, decimal.Overflow, decimal.Underflow, decimal.Inexact,
    decimal.Rounded, decimal.Subnormal, decimal.Clamped])


def type_of(value: AttributeValue) -> str:
    return next(iter(value))


def number(value: AttributeValue) -> Decimal:
    return _parse_number(value["N"])


def _parse_number(text: Any) -> Decimal:
    try:
        parsed = Decimal(text) if isinstance(text, str) else None
        if parsed is None or not parsed.is_finite():
            raise decimal.InvalidOperation
        return _NUMBERS.plus(parsed)  # within DynamoDB's range and precision, or trapped
    except (decimal.InvalidOperation, ArithmeticError):
        raise validation("A value provided cannot be converted into a number, or is out of "
                         "DynamoDB's range (38 digits, 1E-130 to 1E+126)") from None


def number_text(value: Decimal) -> str:
    """DynamoDB's form of a number: no exponent, no trailing zeros."""
    text = format(_NUMBERS.normalize(value), "f") if value else "0"
    return text


def add(first: Decimal, second: Decimal, subtract: bool = False) -> Decimal:
    try:
        return _NUMBERS.subtract(first, second) if subtract else _NUMBERS.add(first, second)
    except ArithmeticError:
        raise validation("Number overflow: the result needs more than 38 digits or is out of "
                         "DynamoDB's range") from None


def blob(value: AttributeValue) -> bytes:
    return _decode(value["B"])


def _decode(text: Any) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise validation("A binary value is not valid base64") from None


def sort_value(value: AttributeValue) -> Any:
    """What orders values of one scalar type: numbers by value, binary by bytes."""
    found = type_of(value)
    if found == "N":
        return number(value)
    if found == "B":
        return blob(value)
    return value[found]


def equal(a: AttributeValue, b: AttributeValue) -> bool:
    found = type_of(a)
    if found != type_of(b):
        return False
    if found in _SCALARS:
        return bool(sort_value(a) == sort_value(b))
    if found in SETS:
        return _members(a) == _members(b)
    if found == "L":
        return len(a["L"]) == len(b["L"]) and all(map(equal, a["L"], b["L"]))
    if found == "M":
        return a["M"].keys() == b["M"].keys() and all(equal(v, b["M"][k])
                                                       for k, v in a["M"].items())
    return bool(a[found] == b[found])


def _members(value: AttributeValue) -> set[Any]:
    found = type_of(value)
    return {sort_value({found[0]: member}) for member in value[found]}


def compare(op: str, a: AttributeValue | None, b: AttributeValue | None) -> bool:
    if a is None or b is None:  # a missing attribute equals nothing and orders with nothing
        return op == "<>"
    if op == "=":
        return equal(a, b)
    if op == "<>":
        return not equal(a, b)
    found = type_of(a)
    if found != type_of(b) or found not in _SCALARS:
        return False
    left, right = sort_value(a), sort_value(b)
    return bool({"<": left < right, "<=": left <= right,
                 ">": left > right, ">=": left >= right}[op])


def size(value: AttributeValue) -> int:
    """size(): a string's or binary's length in bytes, or a set's, list's or map's entries."""
    found = type_of(value)
    if found == "S":
        return len(value["S"].encode())
    if found == "B":
        return len(blob(value))
    if found in (*SETS, "L", "M"):
        return len(value[found])
    raise validation("Invalid expression: Incorrect operand type for operator or function; "
                     "operator or function: size")


def key_text(value: AttributeValue) -> str:
    """A key value as a table indexes it: numbers by value ("1.0" and "1" are one key)."""
    found = type_of(value)
    return number_text(number(value)) if found == "N" else str(value[found])


def checked_size(value: Any, depth: int = 0) -> int:
    """The size DynamoDB counts for a value (closely enough to enforce its 400 KB items), once
    the value is known to be one DynamoDB accepts; a ValidationException otherwise."""
    if not isinstance(value, dict) or len(value) != 1:
        raise validation("One or more parameter values were invalid: an attribute value must "
                         "have exactly one type")
    if depth > MAX_NESTING:
        raise validation("Nesting Levels have exceeded supported limits")
    found, raw = next(iter(value.items()))
    if found == "S" and isinstance(raw, str):
        return len(raw.encode())
    if found == "N":
        return len(str(_parse_number(raw)).lstrip("-").replace(".", "")) // 2 + 2
    if found == "B":
        return len(_decode(raw))
    if found in SETS and isinstance(raw, list):
        sizes = [checked_size({found[0]: member}, depth + 1) for member in raw]
        if not raw or len(_members(value)) != len(raw):
            raise validation("One or more parameter values were invalid: a set may not be "
                             "empty or contain duplicates")
        return sum(sizes)
    if found == "L" and isinstance(raw, list):
        return 3 + sum(1 + checked_size(member, depth + 1) for member in raw)
    if found == "M" and isinstance(raw, dict):
        return 3 + sum(1 + len(str(k).encode()) + checked_size(v, depth + 1)
                       for k, v in raw.items())
    if (found == "BOOL" and isinstance(raw, bool)) or (found == "NULL" and raw is True):
        return 1
    raise validation(f"One or more parameter values were invalid: not a valid {found} value"
                     if found in (*_SCALARS, *SETS, "L", "M", "BOOL", "NULL") else
                     "One or more parameter values were invalid: an unknown attribute type")
