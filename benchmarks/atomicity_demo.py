"""Are moto's conditional writes atomic under concurrent requests? And are the embedded store's?

Run from the repository root:

    .venv/bin/python benchmarks/atomicity_demo.py                 # 100 trials a variant, ~2 min
    .venv/bin/python benchmarks/atomicity_demo.py --trials 20     # quicker

Each trial is one fresh counter item and ``--threads`` threads, released together by a barrier,
each making the same conditional write once, the shape of the credit meter's charge:

    UpdateItem  ADD used :1  IF attribute_not_exists(used) OR used <= :max   (:max = quota - 1)

DynamoDB makes that write atomic, so at most ``--quota`` of them succeed and ``used`` ends at
``min(threads, quota)``. A trial is a **violation** when more than ``quota`` writes succeed
(over quota), or the final ``used`` differs from the number of successes (a lost or phantom
update).

Variants, in this order:

1. plain moto over HTTP: a ``moto.server.ThreadedMotoServer`` on a free port, no lock
   (what `loopsense serve --dynamodb-endpoint` against a bare moto server would get);
2. plain moto in-process: ``mock_aws`` without loopsense's lock;
3. embedded over HTTP: ``loopsense_local.embedded.EmbeddedDynamoDB``'s endpoint (loopsense's own
   engine, one lock for every operation);
4. embedded in-process: the same engine through its in-process client (the server's own path).

The race is non-deterministic (it depends on where the interpreter switches threads), so this
is a demonstration with counts, not a test; tests/integration/test_embedded_atomicity.py proves
the embedded store deterministically. ``--switch-interval`` lowers ``sys.setswitchinterval`` to
make thread switches (and so the race) more frequent; the default is Python's own 5 ms.

Measured 2026-11-29 (Python 3.11.7, 2 CPUs, moto 5.2.5, defaults: 100 trials, 24 threads,
quota 5), trials with a violation: plain moto over HTTP 1 (another run: 4), plain moto
in-process 80 (up to 20 successes against quota 5, 45 lost updates). The embedded store was
then moto under one lock (0 and 0); it is now loopsense's own engine, also 0 and 0 (see
docs/benchmarks.md). Without the lock, moto's TransactWriteItems (the real charge) also
crashes under concurrency ("RuntimeError: dictionary changed size during iteration").
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "shared") not in sys.path:
    sys.path.insert(0, str(ROOT / "shared"))  # loopsense without installing

TABLE = "atomicity-demo"
REGION = "us-east-1"


@dataclass
class Outcome:
    name: str
    trials: int = 0
    over_quota: int = 0  # trials in which more than quota writes succeeded
    lost_updates: int = 0  # trials in which final `used` != number of successes
    violations: int = 0  # trials with either
    errored: int = 0  # trials in which a request failed outright (moto crashed, say)
    first_error: str | None = None
    max_successes: int = 0
    seconds: float = 0.0


def _env() -> None:
    from loopsense_local.embedded import FAKE_AWS_ENV

    os.environ.update(FAKE_AWS_ENV)
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
        os.environ.pop(name, None)


def _client(endpoint: str | None) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("dynamodb", region_name=REGION, endpoint_url=endpoint,
                        config=Config(retries={"max_attempts": 1, "mode": "standard"},
                                      max_pool_connections=4))


def _create_table(client: Any) -> None:
    if TABLE in client.list_tables()["TableNames"]:
        return
    client.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}])


def _conditional_add(client: Any, item_id: str, quota: int) -> bool:
    from botocore.exceptions import ClientError

    try:
        client.update_item(
            TableName=TABLE, Key={"id": {"S": item_id}},
            UpdateExpression="ADD used :one",
            ConditionExpression="attribute_not_exists(used) OR used <= :max",
            ExpressionAttributeValues={":one": {"N": "1"}, ":max": {"N": str(quota - 1)}},
        )
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        return False
    return True


def _attempt(client: Any, item_id: str, quota: int, barrier: threading.Barrier,
             results: list[bool], errors: list[BaseException]) -> None:
    """One thread's single write, released with the others; list.append is thread-safe."""
    try:
        barrier.wait()
        results.append(_conditional_add(client, item_id, quota))
    except BaseException as exc:  # noqa: BLE001 - reported by the caller
        errors.append(exc)


def run_variant(name: str, make_client: Callable[[], Any], trials: int, threads: int,
                quota: int) -> Outcome:
    clients = [make_client() for _ in range(threads)]  # one each: no shared connection pool
    _create_table(clients[0])
    outcome = Outcome(name)
    started = time.perf_counter()
    for trial in range(trials):
        item_id = f"{name}#{trial}"
        barrier = threading.Barrier(threads)
        results: list[bool] = []
        errors: list[BaseException] = []
        workers = [threading.Thread(target=_attempt,
                                    args=(c, item_id, quota, barrier, results, errors))
                   for c in clients]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        item = clients[0].get_item(TableName=TABLE, Key={"id": {"S": item_id}},
                                   ConsistentRead=True).get("Item", {})
        used = int(item["used"]["N"]) if "used" in item else 0
        successes = sum(results)
        outcome.trials += 1
        outcome.max_successes = max(outcome.max_successes, successes)
        over = successes > quota or used > quota
        # A failed request may or may not have written: only error-free trials can show a lost
        # update for certain.
        lost = not errors and used != successes
        outcome.errored += bool(errors)
        if errors and outcome.first_error is None:
            outcome.first_error = repr(errors[0])[:160]
        outcome.over_quota += over
        outcome.lost_updates += lost
        outcome.violations += over or lost
    outcome.seconds = time.perf_counter() - started
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--threads", type=int, default=24)
    parser.add_argument("--quota", type=int, default=5)
    parser.add_argument("--switch-interval", type=float, default=None,
                        help="seconds for sys.setswitchinterval (default: leave at 0.005)")
    args = parser.parse_args(argv)
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    _env()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per moto request

    from moto import mock_aws
    from moto.server import ThreadedMotoServer

    from loopsense_local.embedded import EmbeddedDynamoDB

    print(f"python {platform.python_version()} on {platform.platform()}, "
          f"{os.cpu_count()} CPUs, switch interval {sys.getswitchinterval()} s")
    print(f"{args.trials} trials a variant; each: {args.threads} threads make the same "
          f"conditional ADD once against quota {args.quota}")
    outcomes: list[Outcome] = []

    moto_server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto_server.start()
    host, port = moto_server.get_host_and_port()
    try:
        outcomes.append(run_variant("plain moto, HTTP, no lock",
                                    lambda: _client(f"http://{host}:{port}"),
                                    args.trials, args.threads, args.quota))
    finally:
        moto_server.stop()

    with mock_aws():
        outcomes.append(run_variant("plain moto, in-process, no lock", lambda: _client(None),
                                    args.trials, args.threads, args.quota))

    embedded = EmbeddedDynamoDB("127.0.0.1", 0).start()
    try:
        outcomes.append(run_variant("embedded engine, HTTP",
                                    lambda: _client(embedded.endpoint),
                                    args.trials, args.threads, args.quota))
        outcomes.append(run_variant("embedded engine, in-process", embedded.client,
                                    args.trials, args.threads, args.quota))
    finally:
        embedded.stop()

    print()
    print(f"{'variant':<36} {'trials':>6} {'violations':>10} {'over quota':>10} "
          f"{'lost upd.':>9} {'errored':>7} {'max ok':>6} {'secs':>6}")
    for o in outcomes:
        print(f"{o.name:<36} {o.trials:>6} {o.violations:>10} {o.over_quota:>10} "
              f"{o.lost_updates:>9} {o.errored:>7} {o.max_successes:>6} {o.seconds:>6.1f}")
    print()
    print(f"(max ok: the most writes that succeeded in one trial; the quota is {args.quota}. "
          "errored: trials with a request that failed outright)")
    for o in outcomes:
        if o.first_error:
            print(f"first error, {o.name}: {o.first_error}")
    embedded_violations = sum(o.violations + o.errored for o in outcomes
                            if o.name.startswith("embedded"))
    if embedded_violations:
        print("FAIL: the embedded store let conditional writes race")
        return 1
    print("embedded store: no violations")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
