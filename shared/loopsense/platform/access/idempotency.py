"""Idempotency-Key handling on Powertools' DynamoDB idempotency.

A completed call with the same tenant and key is answered from the stored response, byte for
byte, without running or charging again. Only successes are stored: an error deletes the
in-progress record so the caller may retry with the same key (a 429 or 503 must not stick).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)

from loopsense.errors import LoopsenseError, validation_error
from loopsense.store.dynamo import unavailable

KEY_HEADER = "Idempotency-Key"
KEY_FORMAT = re.compile(r"^[\x21-\x7e]{1,128}$")  # printable ASCII, no spaces
REPLAY_WINDOW_S = 24 * 3600
# A crashed first request must not block its key for 24 h: its in-progress record expires after
# this, which is longer than any skill's time budget.
IN_PROGRESS_EXPIRY_MS = 60_000


def check_key(value: str | None) -> str | None:
    if value is None:
        return None
    if not KEY_FORMAT.match(value):
        raise validation_error(KEY_HEADER, "must be 1..128 printable ASCII characters")
    return value


class _Deadline:
    """The part of a Lambda context Powertools reads to expire a stuck in-progress record."""

    def __init__(self, remaining_ms: int) -> None:
        self._remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self._remaining_ms


class Idempotency:
    def __init__(self, client: Any, table: str) -> None:
        config = IdempotencyConfig(
            event_key_jmespath="[tenant, key]",
            payload_validation_jmespath="body",
            expires_after_seconds=REPLAY_WINDOW_S,
            lambda_context=_Deadline(IN_PROGRESS_EXPIRY_MS),  # type: ignore[arg-type]
        )

        # Only ``request`` is hashed into the record's key; ``call`` does the work.
        @idempotent_function(data_keyword_argument="request", config=config,
                             persistence_store=DynamoDBPersistenceLayer(table_name=table,
                                                                        boto3_client=client))
        def guarded(request: dict[str, str], call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
            return call()

        self._guarded = guarded

    def run(self, tenant_id: str, key: str, body: bytes,
            call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        request = {"tenant": tenant_id, "key": key, "body": hashlib.sha256(body).hexdigest()}
        try:
            return self._guarded(request=request, call=call)
        except IdempotencyAlreadyInProgressError:
            raise LoopsenseError("IDEMPOTENCY_IN_PROGRESS",
                                 "a request with this Idempotency-Key is still running") from None
        except IdempotencyValidationError:
            raise LoopsenseError("IDEMPOTENCY_KEY_REUSED",
                                 "this Idempotency-Key was used with a different body") from None
        except IdempotencyPersistenceLayerError:
            raise unavailable() from None
