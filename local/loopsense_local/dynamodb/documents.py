"""Changing and projecting items by document paths: UpdateExpression actions, ProjectionExpression
and the UPDATED_OLD / UPDATED_NEW return values."""

from __future__ import annotations

from typing import Any

from loopsense_local.dynamodb.errors import validation
from loopsense_local.dynamodb.expressions import Context, Tree, child, evaluate, lookup
from loopsense_local.dynamodb.values import (
    SETS,
    AttributeValue,
    Item,
    add,
    number,
    number_text,
    sort_value,
    type_of,
)

Path = tuple[str | int, ...]


def apply_update(tree: Tree, old: Item | None, new: Item, context: Context,
                 key_names: tuple[str, ...]) -> list[Path]:
    """Apply an update's actions to ``new`` (a copy of ``old``, or of its key if absent).

    As in DynamoDB, every operand is evaluated on the item as it was before the update.
    Returns the paths written, for UPDATED_OLD / UPDATED_NEW.
    """
    paths = [context.resolve(path) for _, path, _ in tree]
    for path in paths:
        if path[0] in key_names:
            raise validation(f"One or more parameter values were invalid: Cannot update attribute "
                             f"{path[0]}. This attribute is part of the key")
    check_overlaps(paths, "UpdateExpression")
    operands = [None if operand is None else evaluate(operand, old, context)
                for _, _, operand in tree]
    written: list[Path] = []
    # Every list index names an element of the list as it was: remove those last, highest first,
    # so that no removal shifts another's element.
    def removes_index(i: int) -> bool:
        return tree[i][0] == "REMOVE" and isinstance(paths[i][-1], int)

    order = [i for i in range(len(tree)) if not removes_index(i)] + sorted(
        (i for i in range(len(tree)) if removes_index(i)), key=lambda i: _descending(paths[i]))
    for i in order:
        action, path, value = tree[i][0], paths[i], operands[i]
        if action == "SET":
            if value is None:
                raise validation("The provided expression refers to an attribute that does not "
                                 "exist in the item")
            path = _place(new, path, value)
        elif action == "REMOVE":
            _remove(new, path)
        elif action == "ADD":
            path = _place(new, path, _add(lookup(new, path), value))
        else:
            _delete(new, path, value)
        written.append(path)
    return written


def _descending(path: Path) -> tuple[Any, ...]:
    return tuple(-part if isinstance(part, int) else 0 for part in path)


def check_overlaps(paths: list[Path], what: str) -> None:
    for i, path in enumerate(paths):
        for other in paths[i + 1:]:
            shorter = min(len(path), len(other))
            if path[:shorter] == other[:shorter]:
                raise validation(f"Invalid {what}: Two document paths overlap with each other; "
                                 f"must remove or rewrite one of these paths")


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


def _place(item: Item, path: Path, value: AttributeValue) -> Path:
    """Set ``path`` to ``value``; the path written (an index past a list's end appends)."""
    parent, last = _parent(item, path), path[-1]
    if isinstance(last, str) and parent is not None and "M" in parent:
        parent["M"][last] = value
        return path
    if isinstance(last, int) and parent is not None and "L" in parent:
        items = parent["L"]
        if last < len(items):
            items[last] = value
            return path
        items.append(value)  # DynamoDB appends past the end of a list
        return (*path[:-1], len(items) - 1)
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
    kind = type_of(value)
    if kind not in ("N", *SETS):
        raise _wrong_type("ADD")
    if current is None:
        return value
    if type_of(current) != kind:
        raise validation("An operand in the update expression has an incorrect data type")
    if kind == "N":
        return {"N": number_text(add(number(current), number(value)))}
    return {kind: _union(kind, current[kind], value[kind])}


def _delete(item: Item, path: Path, value: AttributeValue | None) -> None:
    assert value is not None
    kind = type_of(value)
    if kind not in SETS:
        raise _wrong_type("DELETE")
    current = lookup(item, path)
    if current is None:
        return
    if type_of(current) != kind:
        raise validation("An operand in the update expression has an incorrect data type")
    drop = {_member(kind, m) for m in value[kind]}
    kept = [m for m in current[kind] if _member(kind, m) not in drop]
    if kept:
        _place(item, path, {kind: kept})
    else:
        _remove(item, path)


def _member(kind: str, member: str) -> Any:
    """What identifies a set member: a number by value, binary by bytes."""
    return sort_value({kind[0]: member})


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
