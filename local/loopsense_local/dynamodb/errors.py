"""DynamoDB's errors as the engine raises them; the in-process client and the HTTP endpoint
turn one into what boto3 would see (a ClientError with the same code and fields)."""

from __future__ import annotations

from typing import Any


class DynamoDBError(Exception):
    def __init__(self, code: str, message: str, fields: dict[str, Any] | None = None,
                 status: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status
        self.fields = fields or {}  # error fields beyond the code and message (Item, ...)


def validation(message: str) -> DynamoDBError:
    return DynamoDBError("ValidationException", message)


def condition_failed(old: dict[str, Any] | None, return_old: bool) -> DynamoDBError:
    fields = {"Item": old} if return_old and old is not None else {}
    return DynamoDBError("ConditionalCheckFailedException", "The conditional request failed",
                         fields)


def no_table() -> DynamoDBError:
    return DynamoDBError("ResourceNotFoundException", "Requested resource not found")
