"""`loopsense serve`: the API on localhost with an embedded (or any) DynamoDB, seeded for dev."""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass
from typing import Any

# A well-known key for the local development tenant only (like LocalStack's "test"): it makes
# the README's curl line work verbatim. Never use it against a real deployment.
DEV_API_KEY = "ls_local_development_key_0001"
DEV_TENANT = "dev"


@dataclass
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 3000
    store_port: int = 8000
    dynamodb_endpoint: str | None = None
    dev_api_key: str = DEV_API_KEY
    dev_plan: str = "team"
    test_skills: bool = False


def _configure_environment(options: ServeOptions, store_endpoint: str) -> None:
    """Settings are read from the environment once, as on Lambda: set them before loading."""
    os.environ["LOOPSENSE_SKILL_INVOKER"] = "inprocess"
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "1")  # no X-Ray daemon locally
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "1")  # no CloudWatch to read EMF
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")  # any region, for a local store
    os.environ["LOOPSENSE_DYNAMODB_ENDPOINT"] = store_endpoint


def seed(options: ServeOptions) -> None:
    from loopsense.platform.auth import KEY_FORMAT
    from loopsense.platform.runtime import accounts
    from loopsense.settings import settings
    from loopsense.store.dynamo import make_client
    from loopsense_local.operator import now_iso
    from loopsense_local.tables import create_tables

    if not KEY_FORMAT.match(options.dev_api_key):
        raise SystemExit("--dev-api-key must look like ls_ followed by 20+ of [A-Za-z0-9_-]")
    create_tables(make_client(settings()), settings())
    store = accounts()
    now = now_iso()
    if store.tenant(DEV_TENANT) is None:
        store.create_tenant(DEV_TENANT, options.dev_plan, now)
    else:
        store.set_tenant_plan(DEV_TENANT, options.dev_plan)
    if store.find_key(options.dev_api_key) is None:
        store.issue_key(DEV_TENANT, ("*",), now, secret=options.dev_api_key)


def _banner(options: ServeOptions, url: str, store_endpoint: str) -> str:
    example = ('{"skillKey": "agent.loop_detect", "input": {"events": [{"action": "search"}, '
               '{"action": "click"}, {"action": "search"}, {"action": "click"}, '
               '{"action": "search"}, {"action": "click"}]}}')
    return "\n".join([
        f"loopsense serving on {url}",
        f"  DynamoDB: {store_endpoint}",
        f"  development tenant '{DEV_TENANT}' on plan '{options.dev_plan}', API key:",
        f"    {options.dev_api_key}",
        "  try:",
        f"    curl -s {url}/v1/execute -H 'Authorization: Bearer {options.dev_api_key}' "
        f"-H 'Content-Type: application/json' -d '{example}'",
        "  operator commands (another shell):",
        f"    export LOOPSENSE_DYNAMODB_ENDPOINT={store_endpoint}",
        "    loopsense usage dev",
        "Ctrl-C stops.",
    ])


def serve(options: ServeOptions) -> int:
    embedded: Any = None
    store_endpoint = options.dynamodb_endpoint or os.environ.get("LOOPSENSE_DYNAMODB_ENDPOINT")
    if store_endpoint is None:
        from loopsense_local.embedded import EmbeddedDynamoDB

        embedded = EmbeddedDynamoDB(options.host, options.store_port).start()
        store_endpoint = embedded.endpoint
    _configure_environment(options, store_endpoint)
    if options.test_skills:
        from loopsense_local import test_skills

        test_skills.install()
    seed(options)

    from loopsense_local.gateway import Gateway, make_http_server
    from loopsense_local.schedules import Scheduler, template_schedules
    from loopsense_local.tables import load_template

    server = make_http_server(Gateway(), options.host, options.port)
    scheduler = Scheduler(template_schedules(load_template())).start()
    url = f"http://{options.host}:{server.server_port}"
    print(_banner(options, url, store_endpoint), flush=True)
    print(f"loopsense: ready {url}", flush=True)

    stopping = threading.Event()

    def stop(signum: int, frame: Any) -> None:
        if not stopping.is_set():
            stopping.set()
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        scheduler.stop()
        if embedded is not None:
            embedded.stop()
        print("loopsense: stopped", flush=True)
    return 0
