"""The `loopsense` command line."""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Sequence

from loopsense import jsonio
from loopsense.errors import LoopsenseError, error_envelope
from loopsense.observability import logger
from loopsense.platform.catalog import find_skill
from loopsense.platform.skill_call import call_skill


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as handle:
        return handle.read()


def cmd_execute(args: argparse.Namespace) -> int:
    """Run one skill on the `input` object in FILE; print the output or the error envelope."""
    request_id = str(uuid.uuid4())
    try:
        skill = find_skill(args.skill)
        raw_input = jsonio.loads(_read(args.file), path="input")
    except LoopsenseError as error:
        print(jsonio.dumps(error_envelope(error, request_id)))
        return 1
    result = call_skill(skill, raw_input, request_id)
    print(jsonio.dumps(result.get("output", result)))
    return 0 if "output" in result else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loopsense", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    execute = commands.add_parser("execute", help=cmd_execute.__doc__)
    execute.add_argument("skill", help="skill key, e.g. agent.loop_detect")
    execute.add_argument("file", help="JSON file holding the input object; - reads stdin")
    execute.set_defaults(handler=cmd_execute)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logger.setLevel("WARNING")  # a command's stderr is for problems, not per-call records
    try:
        return int(args.handler(args))
    except OSError as exc:
        print(f"loopsense: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
