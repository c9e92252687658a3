"""Both SDKs against the server's single sources, so that they cannot drift from it.

- Skill keys: the catalog (loopsense.platform.access.catalog.SKILLS) is what the Python SDK's typed
  ``execute`` overloads and ``SkillKey``, and the TypeScript ``SkillMap``, name: no more, no fewer.
- Inputs and outputs: each skill module's pydantic ``*Input`` (and ``*Output`` where it has one),
  read through its JSON schema, against the SDKs' types, field by field and one level of nesting
  after another: every server field known to the SDK, no SDK field the server refuses, the same
  required fields, ``null`` allowed only where the server allows it (and, in outputs, exactly
  where the server may send it).
- Errors: every code of loopsense.errors.ERRORS has a typed class in both SDKs, within the family
  of its HTTP status (the class an unknown code of that status would get); no SDK code that the
  server does not have.

All in this file, so that a change of the catalog's shape is adapted in one place. The
TypeScript side is read from its sources (src/types.ts, src/errors.ts): no build needed.
"""

from __future__ import annotations

import importlib
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import loopsense_sdk
import pytest
from loopsense_sdk import errors as sdk_errors
from pydantic import BaseModel

from loopsense.errors import ERRORS
from loopsense.platform.access.catalog import SKILLS, Skill

ROOT = Path(__file__).resolve().parents[2]
TS_SOURCE = ROOT / "sdk" / "typescript" / "src"
CATALOG_KEYS = sorted(skill.key for skill in SKILLS)


# ---- one shape for every side: fields, whether each is required / nullable, nested shapes --------
@dataclass
class Field:
    required: bool
    nullable: bool
    nested: Shape | None


@dataclass
class Shape:
    fields: dict[str, Field]
    open: bool = False  # other fields are accepted (the server ignores or keeps them)


def compare(sdk: Shape | None, server: Shape | None, path: str, output: bool) -> list[str]:
    """What differs, as readable lines (empty: the SDK matches the server)."""
    if server is None:
        return []
    if sdk is None:
        return [f"{path}: the server has fields here, the SDK's type has none"]
    problems = [f"{path}.{name}: missing in the SDK" for name in server.fields
                if name not in sdk.fields]
    if not server.open:
        problems += [f"{path}.{name}: not a server field" for name in sdk.fields
                     if name not in server.fields]
    for name in sorted(set(sdk.fields) & set(server.fields)):
        ours, theirs = sdk.fields[name], server.fields[name]
        where = f"{path}.{name}"
        if ours.required != theirs.required:
            problems.append(f"{where}: required {ours.required} in the SDK, {theirs.required} "
                            "on the server")
        if ours.nullable and not theirs.nullable:
            problems.append(f"{where}: null in the SDK, never on the server")
        if output and theirs.nullable and not ours.nullable:
            problems.append(f"{where}: the server may send null, the SDK's type does not say so")
        problems += compare(ours.nested, theirs.nested, where, output)
    return problems


# ---- the server: the skill modules' pydantic models, through their JSON schema -----------------
def server_model(skill: Skill, suffix: str) -> type[BaseModel] | None:
    module = importlib.import_module(skill.module)
    found = [value for name, value in vars(module).items()
             if name.endswith(suffix) and isinstance(value, type) and issubclass(value, BaseModel)
             and value.__module__ == module.__name__]
    assert len(found) <= 1, (skill.key, suffix, found)
    return found[0] if found else None


def schema_shape(node: dict[str, Any], defs: dict[str, Any]) -> Shape | None:
    node = defs[node["$ref"].rsplit("/", 1)[1]] if "$ref" in node else node
    branches = [b for b in node.get("anyOf", []) if b.get("type") != "null"]
    if len(branches) == 1:
        return schema_shape(branches[0], defs)
    if node.get("type") == "array" and "items" in node:
        return schema_shape(node["items"], defs)
    if node.get("type") != "object" or "properties" not in node:
        return None
    required = set(node.get("required", []))
    return Shape({name: Field(name in required,
                              any(b.get("type") == "null" for b in prop.get("anyOf", [])),
                              schema_shape(prop, defs))
                  for name, prop in node["properties"].items()},
                 open=node.get("additionalProperties", True) is not False)


def server_shape(model: type[BaseModel] | None, mode: str) -> Shape | None:
    if model is None:
        return None
    schema = model.model_json_schema(by_alias=True, mode=mode)  # type: ignore[arg-type]
    return schema_shape(schema, schema.get("$defs", {}))


# ---- the Python SDK: the execute overloads and their TypedDicts ----------------------------------
def python_skill_types() -> dict[str, tuple[Any, Any]]:
    """skill key -> (input type, output type), from ``Client.execute``'s overloads."""
    found = {}
    for overload in typing.get_overloads(loopsense_sdk.Client.execute):
        hints = typing.get_type_hints(overload, vars(loopsense_sdk.client))
        (key,) = typing.get_args(hints["skill_key"])
        (output,) = typing.get_args(hints["return"])
        # ``<Name>Input | <Name>FileInput``: the inline input is the one the model checks
        inline = typing.get_args(hints["input"])[:1] or (hints["input"],)
        found[key] = (inline[0], output)
    return found


def python_shape(annotation: Any) -> Shape | None:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return python_shape(args[0])
    if origin is list:
        return python_shape(args[0])
    if not typing.is_typeddict(annotation):
        return None
    # Required[]/NotRequired[] read from the hints: with string annotations (PEP 563),
    # __required_keys__ does not see them before Python 3.14.
    hints = typing.get_type_hints(annotation, include_extras=True)
    fields = {}
    for name, hint in hints.items():
        required = annotation.__total__
        while typing.get_origin(hint) in (typing.Required, typing.NotRequired):
            required = typing.get_origin(hint) is typing.Required
            (hint,) = typing.get_args(hint)
        fields[name] = Field(required, type(None) in typing.get_args(hint), python_shape(hint))
    return Shape(fields)


# ---- the TypeScript SDK: src/types.ts and src/errors.ts, parsed ------------------------------
def ts_source(name: str) -> str:
    text = (TS_SOURCE / name).read_text(encoding="utf-8")
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def split_top(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside brackets."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "{<([" and 1 or 0
        depth -= char in "}>)]" and 1 or 0
        if char == separator and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [p.strip() for p in [*parts, current] if p.strip()]


def ts_interfaces() -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(
        r"^export interface (\w+)(?:<[^>]*>)? \{\n(.*?)^\}", ts_source("types.ts"), re.M | re.S)}


def ts_members(body: str, interfaces: dict[str, str]) -> Shape:
    shape = Shape({})
    for member in split_top(body.replace("\n", " "), ";"):
        if member.startswith("["):
            shape.open = True
            continue
        name, optional, annotation = re.fullmatch(r"(\w+)(\??)\s*:\s*(.+)", member, re.S).groups()
        union = split_top(annotation, "|")
        shape.fields[name] = Field(not optional, "null" in union, ts_shape(annotation, interfaces))
    return shape


def ts_shape(annotation: str, interfaces: dict[str, str]) -> Shape | None:
    union = [p for p in split_top(annotation, "|") if p not in ("null", "undefined")]
    if len(union) != 1:
        return None
    text = re.sub(r"^Required<(.+)>$", r"\1", union[0].removesuffix("[]"))
    if text.startswith("{"):
        return ts_members(text[1:-1], interfaces)
    return ts_members(interfaces[text], interfaces) if text in interfaces else None


def ts_skill_types() -> dict[str, tuple[str, str]]:
    body = ts_interfaces()["SkillMap"]
    return {key: (i, o) for key, i, o in re.findall(
        r'"([\w.]+)":\s*\{\s*input:\s*(\w+);\s*output:\s*(\w+);?\s*\}', body)}


def ts_record(name: str) -> dict[str, str]:
    body = re.search(rf"export const {name}\b[^=]*=\s*\{{(.*?)\}};", ts_source("errors.ts"),
                     re.S)
    assert body, name
    return dict(re.findall(r"(\w+):\s*(\w+),", body.group(1)))


def ts_parents() -> dict[str, str]:
    return dict(re.findall(r"export class (\w+) extends (\w+)", ts_source("errors.ts")))


# ---- the tests -----------------------------------------------------------------------------------
def test_the_skill_keys_are_the_catalogs() -> None:
    assert sorted(python_skill_types()) == CATALOG_KEYS
    assert sorted(typing.get_args(loopsense_sdk.SkillKey)) == CATALOG_KEYS
    assert sorted(ts_skill_types()) == CATALOG_KEYS


@pytest.mark.parametrize("skill", SKILLS, ids=lambda s: s.key)
def test_the_python_types_match_the_skills_models(skill: Skill) -> None:
    sdk_input, sdk_output = python_skill_types()[skill.key]
    problems = compare(python_shape(sdk_input),
                       server_shape(server_model(skill, "Input"), "validation"), "input", False)
    problems += compare(python_shape(sdk_output),
                        server_shape(server_model(skill, "Output"), "serialization"), "output",
                        True)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("skill", SKILLS, ids=lambda s: s.key)
def test_the_typescript_types_match_the_skills_models(skill: Skill) -> None:
    interfaces = ts_interfaces()
    sdk_input, sdk_output = ts_skill_types()[skill.key]
    problems = compare(ts_shape(sdk_input, interfaces),
                       server_shape(server_model(skill, "Input"), "validation"), "input", False)
    problems += compare(ts_shape(sdk_output, interfaces),
                        server_shape(server_model(skill, "Output"), "serialization"), "output",
                        True)
    assert not problems, "\n".join(problems)


def test_every_server_error_code_has_its_python_class_in_its_status_family() -> None:
    by_code, by_status = sdk_errors._BY_CODE, sdk_errors._BY_STATUS
    assert sorted(by_code) == sorted(ERRORS)
    for code, kind in ERRORS.items():
        family = by_status[kind.status]
        assert issubclass(by_code[code], family), (code, by_code[code], family)
        assert by_code[code] is not sdk_errors.LoopsenseError, code


def test_every_server_error_code_has_its_typescript_class_in_its_status_family() -> None:
    by_code, by_status, parents = ts_record("ERROR_CLASSES"), ts_record("STATUS_CLASSES"), \
        ts_parents()
    assert sorted(by_code) == sorted(ERRORS)

    def ancestors(name: str) -> list[str]:
        return [name, *ancestors(parents[name])] if name in parents else [name]

    for code, kind in ERRORS.items():
        family = by_status[str(kind.status)]
        assert family in ancestors(by_code[code]), (code, by_code[code], family)
        assert by_code[code] != "LoopsenseError" and by_code[code] in parents, code
