"""DynamoDB's expression language: condition, key-condition and update expressions.

An expression is parsed once into a small tree of tuples (cached by its text: the callers send
the same few expressions over and over) and evaluated against an item with the request's
ExpressionAttributeNames and ExpressionAttributeValues. Placeholders are resolved at
evaluation, so one parsed tree serves every request.

Trees:
    operand   ("path", (part, ...))  part: "#name" | "name" | int (list index)
              ("value", ":v") | ("size", path) | ("if_not_exists", path, operand)
              ("list_append", operand, operand) | ("+" | "-", operand, operand)
    condition ("cmp", op, operand, operand) | ("between", operand, operand, operand)
              ("in", operand, (operand, ...)) | ("call", name, (operand, ...))
              ("and" | "or", condition, condition) | ("not", condition)
    update    ((action, path, operand | None), ...)  action: SET | REMOVE | ADD | DELETE
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from loopsense_local.dynamodb.errors import validation
from loopsense_local.dynamodb.values import (
    SETS,
    AttributeValue,
    Item,
    add,
    blob,
    checked_size,
    compare,
    equal,
    number,
    number_text,
    size,
    type_of,
)

Tree = tuple[Any, ...]

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<cmp><>|<=|>=|=|<|>)
    | (?P<punct>[(),.\[\]+-])
    | (?P<name>\#[A-Za-z0-9_]+)
    | (?P<value>:[A-Za-z0-9_]+)
    | (?P<index>\d+)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    )""", re.VERBOSE)

CONDITION_FUNCTIONS = {"attribute_exists": 1, "attribute_not_exists": 1, "attribute_type": 2,
                       "begins_with": 2, "contains": 2}
_UPDATE_ACTIONS = ("SET", "REMOVE", "ADD", "DELETE")


class _Parser:
    def __init__(self, text: str, what: str) -> None:
        self.what = what
        self.tokens: list[tuple[str, str]] = []
        position, text = 0, text.rstrip()
        while position < len(text):
            found = _TOKEN.match(text, position)
            if found is None or found.end() == position:
                raise self.error(f"syntax error near character {position}")
            kind = found.lastgroup or ""
            self.tokens.append((kind, found.group(kind)))
            position = found.end()
        self.at = 0
        self.groups: dict[int, int] = {}  # where each parenthesized group opened -> closed

    def error(self, issue: str) -> Exception:
        return validation(f"Invalid {self.what}: {issue}")

    # tokens --------------------------------------------------------------------------------
    def peek(self, offset: int = 0) -> tuple[str, str]:
        index = self.at + offset
        return self.tokens[index] if index < len(self.tokens) else ("end", "")

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token[0] == "end":
            raise self.error("the expression ends too early")
        self.at += 1
        return token

    def keyword(self, *words: str) -> str | None:
        kind, text = self.peek()
        if kind == "word" and text.upper() in words:
            self.at += 1
            return text.upper()
        return None

    def expect(self, text: str) -> None:
        if self.take()[1] != text:
            raise self.error(f"expected '{text}'")

    def done(self) -> None:
        if self.peek()[0] != "end":
            raise self.error(f"unexpected token near '{self.peek()[1]}'")

    # operands ------------------------------------------------------------------------------
    def path(self) -> Tree:
        kind, text = self.take()
        if kind not in ("name", "word"):
            raise self.error("expected an attribute name")
        parts: list[str | int] = [text]
        while self.peek()[1] in (".", "["):
            if self.take()[1] == ".":
                kind, text = self.take()
                if kind not in ("name", "word"):
                    raise self.error("expected an attribute name after '.'")
                parts.append(text)
            else:
                kind, text = self.take()
                if kind != "index":
                    raise self.error("expected a list index")
                parts.append(int(text))
                self.expect("]")
        return ("path", tuple(parts))

    def operand(self) -> Tree:
        kind, text = self.peek()
        if kind == "value":
            self.at += 1
            return ("value", text)
        if kind == "word" and self.peek(1)[1] == "(":
            name = text
            self.at += 2
            if name == "size":
                tree: Tree = ("size", self.path())
            elif name == "if_not_exists":
                path = self.path()
                self.expect(",")
                tree = ("if_not_exists", path, self.operand())
            elif name == "list_append":
                first = self.operand()
                self.expect(",")
                tree = ("list_append", first, self.operand())
            else:
                raise self.error(f"the function '{name}' is not an operand")
            self.expect(")")
            return tree
        return self.path()

    def update_value(self) -> Tree:
        left = self.operand()
        if self.peek()[1] in ("+", "-"):
            sign = self.take()[1]
            return (sign, left, self.operand())
        return left

    # conditions ----------------------------------------------------------------------------
    def condition(self) -> Tree:
        tree = self.conjunction()
        while self.keyword("OR"):
            tree = ("or", tree, self.conjunction())
        return tree

    def conjunction(self) -> Tree:
        tree = self.negation()
        while self.keyword("AND"):
            tree = ("and", tree, self.negation())
        return tree

    def negation(self) -> Tree:
        if self.keyword("NOT"):
            return ("not", self.negation())
        return self.predicate()

    def predicate(self) -> Tree:
        kind, text = self.peek()
        if text == "(":
            self.at += 1
            opened = self.at
            tree = self.condition()
            if self.groups.get(opened) == self.at:  # "((...))": DynamoDB refuses it
                raise self.error("The expression has redundant parentheses")
            self.expect(")")
            self.groups[opened - 1] = self.at
            return tree
        if kind == "word" and text in CONDITION_FUNCTIONS and self.peek(1)[1] == "(":
            self.at += 2
            args = [self.path()]
            while self.peek()[1] == ",":
                self.at += 1
                args.append(self.operand())
            self.expect(")")
            if len(args) != CONDITION_FUNCTIONS[text]:
                raise self.error(f"wrong number of arguments for {text}")
            return ("call", text, tuple(args))
        left = self.operand()
        kind, text = self.peek()
        if kind == "cmp":
            self.at += 1
            return ("cmp", text, left, self.operand())
        if self.keyword("BETWEEN"):
            low = self.operand()
            if not self.keyword("AND"):
                raise self.error("expected AND in BETWEEN")
            return ("between", left, low, self.operand())
        if self.keyword("IN"):
            self.expect("(")
            options = [self.operand()]
            while self.peek()[1] == ",":
                self.at += 1
                options.append(self.operand())
            self.expect(")")
            return ("in", left, tuple(options))
        raise self.error("expected a comparison or a function")

    # updates -------------------------------------------------------------------------------
    def update(self) -> Tree:
        actions: list[Tree] = []
        seen: set[str] = set()
        while self.peek()[0] != "end":
            clause = self.keyword(*_UPDATE_ACTIONS)
            if clause is None:
                raise self.error("expected SET, REMOVE, ADD or DELETE")
            if clause in seen:
                raise self.error(f"the {clause} section can only be used once")
            seen.add(clause)
            while True:
                path = self.path()
                if clause == "SET":
                    self.expect("=")
                    value = self.update_value()
                    if _contains_node(value, "size"):
                        raise self.error("the function size is not allowed in an update "
                                         "expression")
                    actions.append((clause, path, value))
                elif clause == "REMOVE":
                    actions.append((clause, path, None))
                else:
                    actions.append((clause, path, self.operand()))
                if self.peek()[1] != ",":
                    break
                self.at += 1
        if not actions:
            raise self.error("the expression can not be empty")
        return tuple(actions)


def _contains_node(operand: Tree, node: str) -> bool:
    if operand[0] in ("path", "value"):
        return False
    return operand[0] == node or any(_contains_node(part, node) for part in operand[1:])


@lru_cache(maxsize=1024)
def parse_condition(text: str, what: str = "ConditionExpression") -> Tree:
    parser = _Parser(text, what)
    if not parser.tokens:
        raise parser.error("the expression can not be empty")
    tree = parser.condition()
    parser.done()
    return tree


@lru_cache(maxsize=1024)
def parse_update(text: str) -> Tree:
    parser = _Parser(text, "UpdateExpression")
    tree = parser.update()
    parser.done()
    return tree


@lru_cache(maxsize=1024)
def parse_projection(text: str) -> Tree:
    parser = _Parser(text, "ProjectionExpression")
    paths = [parser.path()]
    while parser.peek()[1] == ",":
        parser.at += 1
        paths.append(parser.path())
    parser.done()
    return tuple(paths)


@lru_cache(maxsize=4096)
def placeholders(tree: Tree) -> frozenset[str]:
    """Every "#name" and ":value" a tree refers to."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, tuple):
            if node and node[0] == "path":
                found.update(p for p in node[1] if isinstance(p, str) and p.startswith("#"))
            elif node and node[0] == "value":
                found.add(node[1])
            else:
                for child in node:
                    walk(child)

    walk(tree)
    return frozenset(found)


class Context:
    """The request's placeholders, checked the way DynamoDB checks them."""

    def __init__(self, names: dict[str, str] | None, values: dict[str, AttributeValue] | None,
                 trees: list[Tree]) -> None:
        self.names, self.values = names or {}, values or {}
        if names == {} or values == {}:
            which = "ExpressionAttributeNames" if names == {} else "ExpressionAttributeValues"
            raise validation(f"{which} must not be empty")
        used = frozenset().union(*(placeholders(t) for t in trees))
        for placeholder in sorted(used):
            table = self.names if placeholder.startswith("#") else self.values
            if placeholder not in table:
                kind = "name" if placeholder.startswith("#") else "value"
                raise validation(f"An expression attribute {kind} used in the expression is "
                                 f"not defined; attribute {kind}: {placeholder}")
        for which, table in (("Names", self.names), ("Values", self.values)):
            unused = sorted(set(table) - used)
            if unused:
                raise validation(f"Value provided in ExpressionAttribute{which} unused in "
                                 f"expressions: keys: {{{', '.join(unused)}}}")
        for value in self.values.values():
            checked_size(value)  # a value DynamoDB would refuse is refused before any use

    def attribute(self, part: str | int) -> str | int:
        return self.names[part] if isinstance(part, str) and part.startswith("#") else part

    def resolve(self, path: Tree) -> tuple[str | int, ...]:
        return tuple(self.attribute(p) for p in path[1])


def child(container: AttributeValue, part: str | int) -> AttributeValue | None:
    """A map's member or a list's element; None if absent (or ``container`` is neither)."""
    if isinstance(part, int):
        items = container.get("L")
        return items[part] if items is not None and part < len(items) else None
    members = container.get("M")
    return members.get(part) if members is not None else None


def lookup(item: Item | None, path: tuple[str | int, ...]) -> AttributeValue | None:
    value: AttributeValue | None = {"M": item or {}}
    for part in path:
        value = child(value, part) if value is not None else None
    return value


def evaluate(tree: Tree, item: Item | None, context: Context) -> AttributeValue | None:
    """An operand's value on ``item`` (None: the path is absent)."""
    node = tree[0]
    if node == "path":
        return lookup(item, context.resolve(tree))
    if node == "value":
        return context.values[tree[1]]
    if node == "size":
        found = lookup(item, context.resolve(tree[1]))
        return None if found is None else {"N": str(size(found))}
    if node == "if_not_exists":
        found = lookup(item, context.resolve(tree[1]))
        return found if found is not None else evaluate(tree[2], item, context)
    if node == "list_append":
        parts = [_required(evaluate(t, item, context)) for t in tree[1:]]
        if any(type_of(p) != "L" for p in parts):
            raise validation("An operand in the update expression has an incorrect data type")
        return {"L": parts[0]["L"] + parts[1]["L"]}
    left, right = (_required(evaluate(t, item, context)) for t in tree[1:])
    if type_of(left) != "N" or type_of(right) != "N":
        raise validation("An operand in the update expression has an incorrect data type")
    return {"N": number_text(add(number(left), number(right), subtract=node == "-"))}


def _required(value: AttributeValue | None) -> AttributeValue:
    if value is None:
        raise validation("The provided expression refers to an attribute that does not exist "
                         "in the item")
    return value


def holds(tree: Tree, item: Item | None, context: Context) -> bool:
    node = tree[0]
    if node == "and":
        return holds(tree[1], item, context) and holds(tree[2], item, context)
    if node == "or":
        return holds(tree[1], item, context) or holds(tree[2], item, context)
    if node == "not":
        return not holds(tree[1], item, context)
    if node == "cmp":
        return compare(tree[1], evaluate(tree[2], item, context),
                       evaluate(tree[3], item, context))
    if node == "between":
        value, low, high = (evaluate(t, item, context) for t in tree[1:])
        if compare(">", low, high):
            raise validation("Invalid expression: The BETWEEN operator requires upper bound to "
                             "be greater than or equal to lower bound")
        return compare(">=", value, low) and compare("<=", value, high)
    if node == "in":
        value = evaluate(tree[1], item, context)
        return any(compare("=", value, evaluate(t, item, context)) for t in tree[2])
    return _call(tree[1], tree[2], item, context)


def _call(name: str, args: Tree, item: Item | None, context: Context) -> bool:
    target = evaluate(args[0], item, context)
    if name == "attribute_exists":
        return target is not None
    if name == "attribute_not_exists":
        return target is None
    argument = evaluate(args[1], item, context)
    if name == "begins_with" and argument is not None and type_of(argument) not in ("S", "B"):
        raise validation("Invalid expression: Incorrect operand type for operator or function; "
                         "operator or function: begins_with")
    if target is None or argument is None:
        return False
    if name == "attribute_type":
        return type_of(target) == argument.get("S")
    found = type_of(target)
    if found in ("S", "B"):  # begins_with, or contains as a substring: by bytes for binary
        if type_of(argument) != found:
            return False
        whole, part = (blob(target), blob(argument)) if found == "B" else \
            (target["S"], argument["S"])
        return whole.startswith(part) if name == "begins_with" else part in whole
    if name == "begins_with":
        return False
    if found in SETS:  # contains: a member of a set or a list
        return any(equal({found[0]: member}, argument) for member in target[found])
    if found == "L":
        return any(equal(member, argument) for member in target["L"])
    return False
