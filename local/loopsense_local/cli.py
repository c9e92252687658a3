"""The `loopsense` command line: run a skill, serve the API locally, operate tenants and keys."""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections.abc import Sequence
from typing import Any

from loopsense import jsonio
from loopsense.errors import ConfigurationError, LoopsenseError, error_envelope
from loopsense.platform.access.catalog import playbook_names

# Commands import what they use: a skill needs neither the settings nor the store, and the
# operator commands need no skill.


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as handle:
        return handle.read()


def cmd_execute(args: argparse.Namespace) -> int:
    """Run one skill on the `input` object in FILE; print the output or the error envelope."""
    from loopsense.observability import logger
    from loopsense.platform.access.catalog import find_skill
    from loopsense.platform.execute.skill_handler import call_skill

    logger.setLevel("WARNING")  # a command's stderr is for problems, not per-call records
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


def cmd_playbook(args: argparse.Namespace) -> int:
    """Print one of agent.loops' playbooks (markdown); an unknown NAME prints the error envelope."""
    from loopsense.playbooks import markdown

    try:
        print(markdown(args.name), end="")
    except LoopsenseError as error:
        print(jsonio.dumps(error_envelope(error, str(uuid.uuid4()))))
        return 1
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve POST /v1/execute on localhost with the same handlers and an embedded DynamoDB."""
    from loopsense_local.limits import Limits
    from loopsense_local.serve import DEV_API_KEY, ServeOptions, serve

    limits = Limits(max_concurrency=args.max_concurrency, idle_timeout_s=args.idle_timeout,
                    read_timeout_s=args.read_timeout)
    return serve(ServeOptions(host=args.host, port=args.port, store_host=args.store_host,
                              store_port=args.store_port,
                              dynamodb_endpoint=args.dynamodb_endpoint,
                              dev_api_key=args.dev_api_key or DEV_API_KEY,
                              dev_plan=args.dev_plan, test_skills=args.test_skills,
                              data_dir=None if args.in_memory else args.data_dir,
                              ttl_sweep_s=args.ttl_sweep_interval, limits=limits))


def _sweep_interval(text: str) -> float:
    value = float(text)
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError("must be above 0 and at most 86400 seconds")
    return value


def _store(args: argparse.Namespace) -> tuple[Any, Any]:
    """Accounts and Metering on the endpoint chosen by flag or environment."""
    from loopsense_local.aws_env import use_local_store

    use_local_store(args.dynamodb_endpoint or os.environ.get("LOOPSENSE_DYNAMODB_ENDPOINT"))
    from loopsense.settings import settings
    from loopsense.store.accounts import Accounts
    from loopsense.store.dynamo import Dynamo, make_client
    from loopsense.store.metering import Metering

    db = Dynamo(make_client(settings()))
    return Accounts(db, settings()), Metering(db, settings())


def cmd_operator(args: argparse.Namespace) -> int:
    from loopsense_local import operator as ops

    accounts, metering = _store(args)
    actions = {
        "tenants-create": lambda: ops.create_tenant(accounts, args.plan, args.tenant_id),
        "tenants-set-plan": lambda: ops.set_tenant_plan(accounts, args.tenant, args.plan),
        "keys-issue": lambda: ops.issue_key(accounts, args.tenant, args.skills.split(",")),
        "keys-revoke": lambda: ops.revoke_key(accounts, args.tenant, args.key_id),
        "keys-list": lambda: ops.list_keys(accounts, args.tenant),
        "plans-list": lambda: ops.list_plans(accounts),
        "plans-set": lambda: ops.set_plan(accounts, args.name, {
            "credits_per_month": args.credits, "requests_per_second": args.rps,
            "skills": args.skills.split(",") if args.skills else None,
            "max_time_budget_ms": args.max_time_budget_ms}),
        "usage": lambda: ops.usage(accounts, metering, args.tenant, args.period),
    }
    try:
        print(jsonio.dumps(actions[args.action]()))
    except LoopsenseError as error:
        print(jsonio.dumps(error_envelope(error, "cli")), file=sys.stderr)
        return 1
    return 0


def cmd_thresholds(args: argparse.Namespace) -> int:
    """A tenant's detector thresholds: --tenant T against the store, or --api-url/--api-key."""
    from loopsense_local import thresholds_cli as tc

    try:
        where = tc.target(args.tenant, args.api_url, args.api_key)
        body = tc.parse_assignments(args.pairs) if args.sub == "set" else None
        service = None
        if where.tenant is not None:
            from loopsense.platform.settings.service import TenantSettings

            service = TenantSettings(_store(args)[0])
        ok, answer = tc.run(args.sub, where, body, service)
    except tc.UsageError as problem:
        print(f"loopsense: {problem}", file=sys.stderr)
        return 2
    print(jsonio.dumps(answer), file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loopsense", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    execute = commands.add_parser("execute", help=cmd_execute.__doc__)
    execute.add_argument("skill", help="skill key, e.g. agent.loop_detect")
    execute.add_argument("file", help="JSON file holding the input object; - reads stdin")
    execute.set_defaults(handler=cmd_execute)

    playbook = commands.add_parser("playbook", help=cmd_playbook.__doc__)
    playbook.add_argument("name", help=", ".join(playbook_names()))
    playbook.set_defaults(handler=cmd_playbook)

    from loopsense_local.limits import Limits  # no import cost: dataclasses only

    serve = commands.add_parser("serve", help=cmd_serve.__doc__)
    serve.add_argument("--host", default="127.0.0.1", help="address of the API")
    serve.add_argument("--port", type=int, default=3000, help="0 picks a free port")
    serve.add_argument("--store-host", default="127.0.0.1",
                       help="address of the embedded DynamoDB endpoint, which takes any "
                            "credentials (default: loopback only, whatever --host is)")
    serve.add_argument("--store-port", type=int, default=8000,
                       help="port of the embedded DynamoDB endpoint (0 picks a free port)")
    serve.add_argument("--max-concurrency", type=_positive, default=Limits.max_concurrency,
                       help="requests handled at once; more get 503 SERVER_BUSY "
                            "(default: %(default)s)")
    serve.add_argument("--idle-timeout", type=_positive, default=Limits.idle_timeout_s,
                       help="seconds a connection may stay open without a complete request "
                            "head (default: %(default)s)")
    serve.add_argument("--read-timeout", type=_positive, default=Limits.read_timeout_s,
                       help="seconds without a byte while a request is arriving before the "
                            "connection is closed (default: %(default)s)")
    serve.add_argument("--dynamodb-endpoint", default=None,
                       help="use this DynamoDB instead of the embedded one")
    serve.add_argument("--data-dir", default=".loopsense",
                       help="where the embedded DynamoDB keeps its data (default: .loopsense)")
    serve.add_argument("--in-memory", action="store_true",
                       help="keep the embedded DynamoDB in memory only: gone when the server stops")
    serve.add_argument("--ttl-sweep-interval", type=_sweep_interval, default=30.0,
                       metavar="SECONDS",
                       help="how often expired items (TTL) are deleted from the embedded store")
    serve.add_argument("--dev-api-key", default=None,
                       help="the development tenant's API key (default: a fixed local key)")
    serve.add_argument("--dev-plan", default="team", choices=["hobby", "team", "enterprise"])
    serve.add_argument("--test-skills", action="store_true", help=argparse.SUPPRESS)
    serve.set_defaults(handler=cmd_serve)

    def operator_command(group: Any, name: str, action: str, help_text: str) -> Any:
        sub = group.add_parser(name, help=help_text)
        sub.add_argument("--dynamodb-endpoint", default=None,
                         help="store endpoint (default: LOOPSENSE_DYNAMODB_ENDPOINT or AWS)")
        sub.set_defaults(handler=cmd_operator, action=action)
        return sub

    tenants = commands.add_parser("tenants", help="create tenants, change their plan")
    tenants_cmds = tenants.add_subparsers(dest="sub", required=True)
    create = operator_command(tenants_cmds, "create", "tenants-create", "create a tenant")
    create.add_argument("--plan", required=True)
    create.add_argument("--tenant-id", default=None)
    set_plan = operator_command(tenants_cmds, "set-plan", "tenants-set-plan", "change plan")
    set_plan.add_argument("tenant")
    set_plan.add_argument("plan")

    keys = commands.add_parser("keys", help="issue, revoke and list API keys")
    keys_cmds = keys.add_subparsers(dest="sub", required=True)
    issue = operator_command(keys_cmds, "issue", "keys-issue", "issue a key (shown once)")
    issue.add_argument("tenant")
    issue.add_argument("--skills", default="*", help="comma-separated skill keys, * = all")
    revoke = operator_command(keys_cmds, "revoke", "keys-revoke", "revoke a key at once")
    revoke.add_argument("tenant")
    revoke.add_argument("key_id")
    listing = operator_command(keys_cmds, "list", "keys-list", "list a tenant's keys")
    listing.add_argument("tenant")

    plans = commands.add_parser("plans", help="show and change plans")
    plans_cmds = plans.add_subparsers(dest="sub", required=True)
    operator_command(plans_cmds, "list", "plans-list", "every plan in force")
    plan_set = operator_command(plans_cmds, "set", "plans-set", "store a plan row")
    plan_set.add_argument("name")
    plan_set.add_argument("--credits", type=int, dest="credits")
    plan_set.add_argument("--rps", type=int)
    plan_set.add_argument("--skills", default=None, help="comma-separated, * = all")
    plan_set.add_argument("--max-time-budget-ms", type=int)

    thresholds = commands.add_parser(
        "thresholds", help="a tenant's detector thresholds (spec/thresholds.md)")
    thresholds_cmds = thresholds.add_subparsers(dest="sub", required=True)
    for name, help_text in (("get", "every threshold: value, default, bounds, own setting"),
                            ("set", "change some, all or nothing: NAME=VALUE (null = default)")):
        sub = thresholds_cmds.add_parser(name, help=help_text)
        if name == "set":
            sub.add_argument("pairs", nargs="+", metavar="NAME=VALUE")
        sub.add_argument("--tenant", default=None, help="operator: this tenant, in the store")
        sub.add_argument("--dynamodb-endpoint", default=None,
                         help="with --tenant: store endpoint (default: "
                              "LOOPSENSE_DYNAMODB_ENDPOINT or AWS)")
        sub.add_argument("--api-url", default=None,
                         help="tenant: the API's base URL (default: LOOPSENSE_BASE_URL)")
        sub.add_argument("--api-key", default=None,
                         help="tenant: an API key (default: LOOPSENSE_API_KEY)")
        sub.set_defaults(handler=cmd_thresholds)

    usage = operator_command(commands, "usage", "usage", "a tenant's credits and calls")
    usage.add_argument("tenant")
    usage.add_argument("--period", default=None, help="YYYY-MM (default: this month, UTC)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["mcp-gateway"]:  # the SDK's gateway (its own options, then -- command)
        try:
            from loopsense_sdk.adapters.mcp_gateway import main as gateway
        except ImportError:
            print('loopsense: mcp-gateway needs pip install "loopsense-sdk[mcp]"', file=sys.stderr)
            return 2
        return gateway(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        print(f"loopsense: {exc.strerror}{where}", file=sys.stderr)
        return 2
    except ConfigurationError as exc:  # e.g. a real DynamoDB without LOOPSENSE_*_TABLE
        print(f"loopsense: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
