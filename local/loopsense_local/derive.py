"""What the catalog derives: template.yaml's skill parts and README.md's skills table.

    python -m loopsense_local.derive          # rewrite them from the catalog
    python -m loopsense_local.derive --check  # exit 1 and name the files that drifted

Each derived part stands between two marker comments (``<catalog: NAME>`` and
``</catalog: NAME>``) and is rewritten whole from platform/access/catalog.py: a skill's
function and log group, the router's variable and invoke permission for it, its outputs, its
README row. tests/infra/test_derived.py fails when a file differs from what this writes, so a
new skill is one catalog entry away from its template and README (docs/adding-a-skill.md).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from loopsense.platform.access.catalog import SKILLS, Skill
from loopsense_local.tables import REPO_ROOT


def _functions(skills: Iterable[Skill]) -> list[str]:
    lines: list[str] = []
    for s in skills:
        lines += [f"  {s.function}:",
                  "    Type: AWS::Serverless::Function",
                  "    Properties:",
                  f"      Description: Skill {s.key} (direct invoke by the execute router)",
                  f"      CodeUri: functions/{s.name}/",
                  "      Handler: app.lambda_handler"]
        if s.timeout_ms != 10_000:  # the Globals' Timeout is 10 s
            lines.append(f"      Timeout: {s.timeout_ms // 1000}")
        if s.memory_mb is not None:
            lines.append(f"      MemorySize: {s.memory_mb}")
        lines += ["      Layers:", "        - !Ref SharedLayer"]
        if s.environment:
            lines += ["      Environment:", "        Variables:"]
            lines += [f'          {k}: "{v}"' for k, v in sorted(s.environment.items())]
        lines += ["",
                  f"  {s.function}LogGroup:",
                  "    Type: AWS::Logs::LogGroup",
                  "    DeletionPolicy: Delete",
                  "    UpdateReplacePolicy: Delete",
                  "    Properties:",
                  f"      LogGroupName: !Sub /aws/lambda/${{{s.function}}}",
                  "      RetentionInDays: !Ref LogRetentionDays",
                  ""]
    return lines[:-1]


def _router_variables(skills: Iterable[Skill]) -> list[str]:
    return [f"          LOOPSENSE_FUNCTION_{s.function}: !Ref {s.function}" for s in skills]


def _router_invokes(skills: Iterable[Skill]) -> list[str]:
    return [f"                - !GetAtt {s.function}.Arn" for s in skills]


def _outputs(skills: Iterable[Skill]) -> list[str]:
    lines: list[str] = []
    for s in skills:
        lines += [f"  {s.function}Arn:",
                  f"    Description: ARN of the {s.key} function",
                  f"    Value: !GetAtt {s.function}.Arn",
                  f"  {s.function}Name:",
                  f"    Description: Name of the {s.key} function (what the router invokes)",
                  f"    Value: !Ref {s.function}"]
    return lines


def _readme_rows(skills: Iterable[Skill]) -> list[str]:
    return ["| skill | what it finds | spec |", "| --- | --- | --- |"] + [
            f"| `{s.key}` {s.version} | {s.summary} | "
            f"[docs/skills/{s.name}.md](docs/skills/{s.name}.md) |" for s in skills]


# file -> region name -> the region's lines from the skills
REGIONS: dict[str, dict[str, Callable[[Iterable[Skill]], list[str]]]] = {
    "template.yaml": {"skill functions": _functions, "router variables": _router_variables,
                      "router invokes": _router_invokes, "skill outputs": _outputs},
    "README.md": {"skills table": _readme_rows},
}


def derived(text: str, regions: dict[str, Callable[[Iterable[Skill]], list[str]]],
            skills: Iterable[Skill] = SKILLS) -> str:
    """``text`` with each region between its markers rewritten from ``skills``."""
    skills = tuple(skills)
    for name, render in regions.items():
        pattern = re.compile(rf"(^[^\n]*<catalog: {name}>[^\n]*\n)(.*?)(^[^\n]*</catalog: {name}>)",
                             re.MULTILINE | re.DOTALL)
        if len(pattern.findall(text)) != 1:
            raise ValueError(f"no one region <catalog: {name}> ... </catalog: {name}>")
        body = "".join(f"{line}\n" for line in render(skills))
        found = pattern.search(text)
        assert found is not None
        text = text[:found.end(1)] + body + text[found.start(3):]
    return text


def drifted(root: Path = REPO_ROOT) -> list[str]:
    """The files whose derived parts differ from what the catalog derives."""
    return [name for name, regions in REGIONS.items()
            if derived((root / name).read_text(encoding="utf-8"), regions)
            != (root / name).read_text(encoding="utf-8")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only name the drifted files")
    parser.add_argument("--root", type=Path, default=REPO_ROOT)
    args = parser.parse_args(argv)
    stale = drifted(args.root)
    if args.check:
        for name in stale:
            print(f"{name}: differs from the catalog (python -m loopsense_local.derive)")
        return 1 if stale else 0
    for name in stale:
        path = args.root / name
        path.write_text(derived(path.read_text(encoding="utf-8"), REGIONS[name]),
                        encoding="utf-8")
        print(f"{name}: rewritten from the catalog")
    return 0


if __name__ == "__main__":
    sys.exit(main())
