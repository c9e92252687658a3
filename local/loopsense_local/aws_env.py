"""AWS settings for a DynamoDB on this machine: one rule for `loopsense serve` and the operator
commands, so a loopback endpoint (the embedded store, DynamoDB Local) works without an AWS
account."""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlparse

# Credentials and region for boto3 clients of a local endpoint; no AWS account is touched.
FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "loopsense-local",
    "AWS_SECRET_ACCESS_KEY": "loopsense-local",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def is_loopback(url: str) -> bool:
    return is_loopback_host(urlparse(url).hostname or "")


def is_loopback_host(host: str) -> bool:
    """A host name or address (IPv6 bare, as a listening address is given: ``::1``)."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def use_local_store(endpoint: str | None) -> None:
    """Point this process's store at ``endpoint``; for a loopback one, name its tables as a
    local store names them, and fill in the fake credentials and region where the environment
    names none (the local store takes any)."""
    if not endpoint:
        return
    os.environ["LOOPSENSE_DYNAMODB_ENDPOINT"] = endpoint
    if not is_loopback(endpoint):
        return
    from loopsense_local.tables import use_local_tables

    use_local_tables()  # unless the environment names them
    if not os.environ.get("AWS_PROFILE"):
        for name, value in FAKE_AWS_ENV.items():
            if not os.environ.get(name):  # unset or empty: boto3 would find none
                os.environ[name] = value
