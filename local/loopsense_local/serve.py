"""`loopsense serve`: the API on localhost with an embedded (or any) DynamoDB, seeded for dev."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

from loopsense_local.aws_env import is_loopback_host, use_local_store
from loopsense_local.limits import Limits

# A well-known key for the local development tenant only (like LocalStack's "test"): it makes
# the README's curl line work verbatim. Never use it against a real deployment.
DEV_API_KEY = "ls_local_development_key_0001"
DEV_TENANT = "dev"


@dataclass
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 3000
    store_host: str = "127.0.0.1"  # the embedded store takes any credentials: loopback only
    store_port: int = 8000
    dynamodb_endpoint: str | None = None
    dev_api_key: str = DEV_API_KEY
    dev_plan: str = "team"
    test_skills: bool = False
    data_dir: str | None = ".loopsense"  # None: the embedded store in memory only
    ttl_sweep_s: float = 30.0
    limits: Limits = field(default_factory=Limits)


def _configure_environment(options: ServeOptions, store_endpoint: str) -> None:
    """Settings are read from the environment once, as on Lambda: set them before loading."""
    os.environ["LOOPSENSE_SKILL_INVOKER"] = "inprocess"
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "1")  # no X-Ray daemon locally
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "1")  # no CloudWatch to read EMF
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")  # any region, for a local store
    from loopsense_local.tables import use_local_tables  # the settings: not for the CLI's parser

    use_local_store(store_endpoint)
    use_local_tables()  # the server creates its tables: their local names, unless set


def seed(options: ServeOptions) -> None:
    from loopsense.platform.http.auth import KEY_FORMAT
    from loopsense.platform.wiring import accounts
    from loopsense.settings import settings
    from loopsense.store.dynamo import make_client
    from loopsense_local.operator import now_iso
    from loopsense_local.tables import create_tables

    if not KEY_FORMAT.match(options.dev_api_key):
        raise SystemExit("--dev-api-key must look like ls_ followed by 20+ of [A-Za-z0-9_-]")
    create_tables(make_client(settings()), settings())
    store = accounts()
    public = store.find_key(DEV_API_KEY)
    if not is_loopback_host(options.host) and public is not None and public.status == "active":
        raise SystemExit("loopsense serve: this store still accepts the fixed development key; "
                         f"revoke it first (loopsense keys revoke {public.tenant_id} "
                         f"{public.key_id}), or serve on a loopback --host")
    now = now_iso()
    if store.tenant(DEV_TENANT) is None:
        store.create_tenant(DEV_TENANT, options.dev_plan, now)
    else:
        store.set_tenant_plan(DEV_TENANT, options.dev_plan)
    if store.find_key(options.dev_api_key) is None:
        store.issue_key(DEV_TENANT, ("*",), now, secret=options.dev_api_key)


def _start_files(options: ServeOptions) -> Any:
    """The file inputs' bucket: the embedded S3 (loopsense_local/s3.py) unless
    LOOPSENSE_S3_ENDPOINT names another; None when it does."""
    from loopsense_local.s3 import BUCKET, EmbeddedS3

    os.environ.setdefault("LOOPSENSE_FILES_BUCKET", BUCKET)
    if os.environ.get("LOOPSENSE_S3_ENDPOINT"):
        return None
    files = EmbeddedS3(options.store_host, 0, options.data_dir).start()
    os.environ["LOOPSENSE_S3_ENDPOINT"] = files.endpoint
    return files


def _banner(options: ServeOptions, url: str, store_endpoint: str, embedded: bool) -> str:
    example = ('{"skillKey": "agent.loop_detect", "input": {"events": [{"action": "search"}, '
               '{"action": "click"}, {"action": "search"}, {"action": "click"}, '
               '{"action": "search"}, {"action": "click"}]}}')
    return "\n".join([
        f"loopsense serving on {url}",
        f"  DynamoDB: {store_endpoint}",
        f"  S3 (file inputs): {os.environ.get('LOOPSENSE_S3_ENDPOINT')}",
        *([f"  data: {_where(options)}"] if embedded else []),
        f"  dashboard: {url}/ (sign in with an API key)",
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


def _where(options: ServeOptions) -> str:
    if options.data_dir is None:
        return "in memory only (--in-memory): gone when the server stops"
    return f"{os.path.abspath(options.data_dir)} (delete it to start afresh)"


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def serve(options: ServeOptions) -> int:
    # Beyond loopback, whoever reaches the port could use the key the README prints.
    if not is_loopback_host(options.host) and options.dev_api_key == DEV_API_KEY:
        raise SystemExit("loopsense serve: the fixed development key is public (README); on a "
                         "non-loopback --host give --dev-api-key ls_... of your own")
    embedded: Any = None
    store_endpoint = options.dynamodb_endpoint or os.environ.get("LOOPSENSE_DYNAMODB_ENDPOINT")
    if store_endpoint is None:
        from loopsense_local.dynamodb.storage import StoreLocked
        from loopsense_local.embedded import EmbeddedDynamoDB

        if not is_loopback_host(options.store_host):
            print(f"loopsense: WARNING: the embedded DynamoDB listens on {options.store_host} and "
                  "takes any credentials: whoever reaches that address reads and changes "
                  "every tenant and key", file=sys.stderr, flush=True)
        try:
            embedded = EmbeddedDynamoDB(options.store_host, options.store_port, options.data_dir,
                                        options.ttl_sweep_s).start()
        except StoreLocked as error:
            raise SystemExit(f"loopsense serve: {error}") from None
        store_endpoint = embedded.endpoint
    files = _start_files(options)
    _configure_environment(options, store_endpoint)
    if options.test_skills:
        from loopsense_local import test_skills

        test_skills.install()
    seed(options)

    from loopsense_local.gateway import Gateway
    from loopsense_local.http_server import HttpServer
    from loopsense_local.schedules import Scheduler, template_schedules
    from loopsense_local.tables import load_template

    server = HttpServer(Gateway(), options.host, options.port, options.limits)
    # The template's schedules (the telemetry sweeper), run in process as EventBridge would.
    scheduler = Scheduler(template_schedules(load_template())).start()
    url = f"http://{_url_host(options.host)}:{server.port}"
    print(_banner(options, url, store_endpoint, embedded is not None), flush=True)
    print(f"loopsense: ready {url}", flush=True)
    try:
        server.run()  # until SIGINT or SIGTERM
    finally:
        scheduler.stop()
        if embedded is not None:
            embedded.stop()
        if files is not None:
            files.stop()
        print("loopsense: stopped", flush=True)
    return 0
