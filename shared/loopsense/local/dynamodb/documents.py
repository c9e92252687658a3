"""Changing and projecting items by document paths: UpdateExpression actions, ProjectionExpression
and the UPDATED_OLD / UPDATED_NEW return values."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from loopsense.local.dynamodb.errors import validation
from loopsense.local.dynamodb.expressions import (
    AttributeValue,
    Context,
    Item,
    Tree,
    child,
    evaluate,
    lookup,
    number,
    number_text,
)

Path = tuple[str | int, ...]
_SETS = ("SS", "NS", "BS")


def apply_update(tree: Tree, old: Item | None, new: Item, context: Context,
                 key_names: tuple[str, ...]) -> list[Path]:
    """Apply an update's actions to ``new`` (a copy of ``old``, or of its key if absent).

    As in DynamoDB, every operand is evaluated on the item as it was before the update.
    Returns the paths written, for UPDATED_OLD / UPDATED_NEW.
    """
    paths = [context.resolve(path) for _, path, _ in tree]
    _check_paths(paths, key_names)
    operands = [None if operand is None else evaluate(operand, old, context)
                for _, _, operand in tree]
    for (action, _, _), path, value in zip(tree, paths, operands, strict=True):
        if action == "SET":
            if value is None:
                raise validation("The provided expression refers to an attribute that does not "
                                 "exist in the item")
            _place(new, path, value)
        elif action == "REMOVE":
            _remove(new, path)
        elif action == "ADD":
            _place(new, path, _add(lookup(new, path), value))
        else:
            _delete(new, path, value)
    return paths


def _check_paths(paths: list[Path], key_names: tuple[str, ...]) -> None:
    for i, path in enumerate(paths):
        if path[0] in key_names:
            raise validation(f"One or more parameter values were invalid: Cannot update attribute "
                             f"{path[0]}. This attribute is part of the key")
        for other in paths[i + 1:]:
            shorter = min(len(path), len(other))
            if path[:shorter] == other[:shorter]:
                raise validation("Invalid UpdateExpression: Two document paths overlap with each "
                                 "other; must remove or rewrite one of these paths")


def _parent(item: Item, path: Path) -> Any:
    """The map or list that holds ``path``'s last part, or None if it does not exist."""
    container: Any = {"M": item}
    for part in path[:-1]:
        container = child(container, part)
        if container is None:
            return None
    return container


def _invalid_path() -> Exception:
    return validation("The document path provided in the update expression is invalid for update")


def _place(item: Item, path: Path, value: AttributeValue) -> None:
    parent, last = _parent(item, path), path[-1]
    if isinstance(last, str) and parent is not None and "M" in parent:
        parent["M"][last] = value
    elif isinstance(last, int) and parent is not None and "L" in parent:
        items = parent["L"]
        if last < len(items):
            items[last] = value
        else:
            items.append(value)  # DynamoDB appends past the end of a list
    else:
        raise _invalid_path()


def _remove(item: Item, path: Path) -> None:
    parent, last = _parent(item, path), path[-1]
    if parent is None:
        if len(path) > 1:
            raise _invalid_path()
        return
    if isinstance(last, str) and "M" in parent:
        parent["M"].pop(last, None)
    elif isinstance(last, int) and "L" in parent:
        if last < len(parent["L"]):
            del parent["L"][last]
    else:
        raise _invalid_path()


def _wrong_type(action: str) -> Exception:
    return validation(f"Invalid UpdateExpression: Incorrect operand type for operator or "
                      f"function; operator: {action}")


def _add(current: AttributeValue | None, value: AttributeValue | None) -> AttributeValue:
    assert value is not None
    kind = next(iter(value))
    if kind not in ("N", *_SETS):
        raise _wrong_type("ADD")
    if current is None:
        return value
    if next(iter(current)) != kind:
        raise validation("An operand in the update expression has an incorrect data type")
    if kind == "N":
        return {"N": number_text(number(current) + number(value))}
    return {kind: _union(kind, current[kind], value[kind])}


def _delete(item: Item, path: Path, value: AttributeValue | None) -> None:
    assert value is not None
    kind = next(iter(value))
    if kind not in _SETS:
        raise _wrong_type("DELETE")
    current = lookup(item, path)
    if current is None:
        return
    if next(iter(current)) != kind:
        raise validation("An operand in the update expression has an incorrect data type")
    drop = {_member(kind, m) for m in value[kind]}
    kept = [m for m in current[kind] if _member(kind, m) not in drop]
    if kept:
        _place(item, path, {kind: kept})
    else:
        _remove(item, path)


def _member(kind: str, member: str) -> Any:
    return Decimal(member) if kind == "NS" else member


def _union(kind: str, first: list[str], second: list[str]) -> list[str]:
    seen, merged = set(), []
    for member in first + second:
        if _member(kind, member) not in seen:
            seen.add(_member(kind, member))
            merged.append(member)
    return merged


def project(item: Item, paths: list[Path]) -> Item:
    """The parts of ``item`` at ``paths`` (ProjectionExpression, UPDATED_* return values)."""
    projected: Item = {}
    for path in paths:
        value = lookup(item, path)
        if value is None:
            continue
        container: Any = {"M": projected}
        for part, following in zip(path, path[1:], strict=False):
            empty: AttributeValue = {"L": []} if isinstance(following, int) else {"M": {}}
            if isinstance(part, int):
                container["L"].append(empty)
                container = container["L"][-1]
            else:
                container = container["M"].setdefault(part, empty)
        if isinstance(path[-1], int):
            container["L"].append(value)
        else:
            container["M"][path[-1]] = value
    return projected
