"""Idempotency-Key handling: the header's rule, POST /v1/execute's records (Powertools'
DynamoDB idempotency), and the one replay helper of the stateful routes.

Execute: a completed call with the same tenant and key is answered from the stored response,
byte for byte, without running or charging again. Only successes are stored: an error deletes
the in-progress record so the caller may retry with the same key (a 429 or 503 must not stick).
The response is stored by the charge's own transaction (``Completion``: Powertools' record
completed as its ``save_success`` would, which then writes nothing more), so a keyed execute is
four requests, and a charged call cannot lose its stored response.

The runs API and recover keep their keys in the item they write (an agent, a run's memory
head), in the same transaction as the change: ``remember`` adds one to the list of the last
RECENT_KEYS, ``replay`` finds one within REPLAY_WINDOW_S. Telemetry keeps one item per key
(its batch's seq). A key sent again with another body is IDEMPOTENCY_KEY_REUSED everywhere
(``key_reused``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.shared.json_encoder import Encoder
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
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord

from loopsense.errors import LoopsenseError, validation_error
from loopsense.store.dynamo import unavailable
from loopsense.validation import PRINTABLE_ID

KEY_HEADER = "Idempotency-Key"
KEY_FORMAT = PRINTABLE_ID
REPLAY_WINDOW_S = 24 * 3600
# A crashed first request must not block its key for 24 h: its in-progress record expires after
# this, which is longer than any skill's time budget.
IN_PROGRESS_EXPIRY_MS = 60_000
RECENT_KEYS = 16  # keys remembered per item by the stateful routes


def digest(text: bytes | str) -> str:
    """SHA-256 (hex) of a key or a body: what is stored of them."""
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def key_reused(what: str = "body") -> LoopsenseError:
    return LoopsenseError("IDEMPOTENCY_KEY_REUSED",
                          f"this Idempotency-Key was used with a different {what}")


# One remembered key: [key digest, body digest, epoch second, what the call made].
Recent = list[Any]


def replay(recent: list[Recent], key: str, body_digest: str, epoch: int) -> Any | None:
    """What the call with this key made (within REPLAY_WINDOW_S), None if it is not among
    ``recent``; IDEMPOTENCY_KEY_REUSED if it came with another body."""
    for stored_key, stored_body, at, made in recent:
        if stored_key != key or epoch - at > REPLAY_WINDOW_S:
            continue
        if stored_body != body_digest:
            raise key_reused()
        return made
    return None


def remember(recent: list[Recent], key: str, body_digest: str, epoch: int,
             made: Any) -> list[Recent]:
    """``recent`` with this key's call added (replacing an older one): the last RECENT_KEYS."""
    return [*[r for r in recent if r[0] != key], [key, body_digest, epoch, made]][-RECENT_KEYS:]


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


class _Persistence(DynamoDBPersistenceLayer):
    """Powertools' DynamoDB layer, but a response the charge's transaction already stored
    (``completion``) is not written a second time when Powertools saves it."""

    def __init__(self, table: str, client: Any) -> None:
        super().__init__(table_name=table, boto3_client=client)
        self._stored: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def completion(self, request: dict[str, str], response: dict[str, Any]
                   ) -> tuple[dict[str, Any], Callable[[], None]]:
        """The transaction action that completes ``request``'s record with ``response``
        (what ``save_success`` writes), and what to call once that transaction committed."""
        key = self._get_hashed_idempotency_key(request) or ""
        data = json.dumps(response, cls=Encoder, sort_keys=True)
        action = {"Update": {
            "TableName": self.table_name, "Key": self._get_key(key),
            "UpdateExpression": "SET #data = :data, #expiry = :expiry, #status = :status, "
                                "#validation = :validation",
            "ExpressionAttributeNames": {"#data": self.data_attr, "#expiry": self.expiry_attr,
                                         "#status": self.status_attr,
                                         "#validation": self.validation_key_attr},
            "ExpressionAttributeValues": {
                ":data": {"S": data}, ":expiry": {"N": str(self._get_expiry_timestamp())},
                ":status": {"S": "COMPLETED"},
                ":validation": {"S": self._get_hashed_payload(request)}}}}

        def committed() -> None:
            with self._lock:
                self._stored.add((key, data))

        return action, committed

    def _update_record(self, data_record: DataRecord) -> None:
        with self._lock:
            stored = (data_record.idempotency_key, data_record.response_data or "")
            if stored in self._stored:
                self._stored.discard(stored)
                return
        super()._update_record(data_record)


# What a keyed call hands its work: the response -> the transaction action storing it, and what
# to call once that transaction committed.
Complete = Callable[[dict[str, Any]], tuple[dict[str, Any], Callable[[], None]]]


class Idempotency:
    def __init__(self, client: Any, table: str) -> None:
        config = IdempotencyConfig(
            event_key_jmespath="[tenant, key]",
            payload_validation_jmespath="body",
            expires_after_seconds=REPLAY_WINDOW_S,
            lambda_context=_Deadline(IN_PROGRESS_EXPIRY_MS),  # type: ignore[arg-type]
        )
        self._store = _Persistence(table, client)

        # Only ``request`` is hashed into the record's key; ``call`` does the work.
        @idempotent_function(data_keyword_argument="request", config=config,
                             persistence_store=self._store)
        def guarded(request: dict[str, str], call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
            return call()

        self._guarded = guarded

    def run(self, tenant_id: str, key: str, body: bytes,
            call: Callable[[Complete], dict[str, Any]]) -> dict[str, Any]:
        """``call(complete)`` once per (tenant, key, body) within REPLAY_WINDOW_S: its response
        stored (by ``complete``'s action in the caller's own transaction, or after it by
        Powertools), a repeat answered from it."""
        request = {"tenant": tenant_id, "key": key, "body": hashlib.sha256(body).hexdigest()}
        made: list[dict[str, Any]] = []
        refused: list[Exception] = []

        def recorded() -> dict[str, Any]:
            try:
                made.append(call(lambda response: self._store.completion(request, response)))
            except Exception as error:
                refused.append(error)
                raise
            return made[-1]

        try:
            return self._guarded(request=request, call=recorded)
        except IdempotencyAlreadyInProgressError:
            raise LoopsenseError("IDEMPOTENCY_IN_PROGRESS",
                                 "a request with this Idempotency-Key is still running") from None
        except IdempotencyValidationError:
            raise key_reused() from None
        except IdempotencyPersistenceLayerError:
            if made:  # done and charged, only not stored for replays: deliver it (its key stays
                return made[0]  # in progress until IN_PROGRESS_EXPIRY_MS, then replays the charge)
            if refused:  # refused, only its key not released (it frees itself at the same expiry)
                raise refused[0] from None
            raise unavailable() from None
