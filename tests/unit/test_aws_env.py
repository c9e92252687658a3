"""A loopback DynamoDB endpoint gets the fake local credentials where the environment names
none; anything the environment does name is kept (loopsense_local.aws_env)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from loopsense_local.aws_env import FAKE_AWS_ENV, is_loopback, is_loopback_host, use_local_store

NAMES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_PROFILE",
         "LOOPSENSE_DYNAMODB_ENDPOINT")


@pytest.fixture
def clean_env() -> Iterator[pytest.MonkeyPatch]:
    """The environment without NAMES, restored whole afterwards: use_local_store also sets
    variables this test never names (the table names), and none may leak into later tests.
    The test's own patch is undone first: undone after the restore, it deleted the variables
    it had found unset here (AWS_DEFAULT_REGION), and a later test's boto3 had no region."""
    saved = dict(os.environ)
    with pytest.MonkeyPatch.context() as patch:
        for name in NAMES:
            patch.delenv(name, raising=False)
        yield patch
    os.environ.clear()
    os.environ.update(saved)


@pytest.mark.parametrize(("url", "loopback"), [
    ("http://127.0.0.1:8000", True), ("http://localhost:8000", True), ("http://[::1]:8000", True),
    ("http://127.5.0.1", True), ("http://10.0.0.1:8000", False),
    ("https://dynamodb.us-east-1.amazonaws.com", False), ("not a url", False),
])
def test_is_loopback(url: str, loopback: bool) -> None:
    assert is_loopback(url) is loopback


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("localhost", True), ("::1", True), ("0.0.0.0", False), ("::", False),
    ("10.0.0.1", False), ("fe80::1", False),
])
def test_a_listening_address_is_loopback_or_not(host: str, loopback: bool) -> None:
    """``loopsense serve --store-host ::1`` listens on loopback: no warning (an address put in
    ``http://{host}`` unbracketed parsed as no host at all)."""
    assert is_loopback_host(host) is loopback


def test_a_loopback_endpoint_without_credentials_gets_the_fake_ones(clean_env) -> None:
    clean_env.setenv("AWS_ACCESS_KEY_ID", "")  # empty counts as unset, as for boto3
    use_local_store("http://127.0.0.1:8000")
    assert {name: os.environ[name] for name in FAKE_AWS_ENV} == FAKE_AWS_ENV
    assert os.environ["LOOPSENSE_DYNAMODB_ENDPOINT"] == "http://127.0.0.1:8000"


def test_credentials_the_environment_names_are_kept(clean_env) -> None:
    clean_env.setenv("AWS_ACCESS_KEY_ID", "mine")
    clean_env.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    use_local_store("http://localhost:8000")
    assert (os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_DEFAULT_REGION"]) == (
        "mine", "eu-west-1")


@pytest.mark.parametrize("env", [{"AWS_PROFILE": "dev"}, {}])
def test_a_profile_or_a_remote_endpoint_gets_no_fake_credentials(clean_env, env) -> None:
    for name, value in env.items():
        clean_env.setenv(name, value)
    use_local_store("http://127.0.0.1:8000" if env else "https://dynamodb.eu-west-1.amazonaws.com")
    assert "AWS_ACCESS_KEY_ID" not in os.environ
