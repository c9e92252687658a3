"""The files' bucket: each tenant's objects under its own prefix: inputs uploaded with a short-lived
pre-signed URL and read once by the router, outputs too large to inline written by the router
and fetched with a pre-signed download URL (docs/files.md).

The key is ``tenants/<tenant id>/<file id>``, built from the caller's own tenant: another
tenant's file id names nothing here, exactly as a missing one does. A store that cannot be
reached is PLAN_ELIGIBILITY_UNAVAILABLE, as for DynamoDB (nothing is charged).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from loopsense.errors import LoopsenseError
from loopsense.observability import logger
from loopsense.settings import Settings
from loopsense.store.dynamo import STORE_DOWN_RETRY_AFTER

MISSING = frozenset({"NoSuchKey", "404", "NotFound"})


def make_s3_client(settings: Settings) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=settings.store_timeout_s,
                    read_timeout=max(settings.store_timeout_s, 5.0),
                    retries={"max_attempts": 2, "mode": "standard"}, signature_version="s3v4",
                    s3={"addressing_style": "path" if settings.s3_endpoint else "auto"})
    return boto3.client("s3", endpoint_url=settings.s3_endpoint, region_name=settings.region,
                        config=config)


def files_unavailable() -> LoopsenseError:
    return LoopsenseError("PLAN_ELIGIBILITY_UNAVAILABLE", "the file store could not be reached",
                          retry_after=STORE_DOWN_RETRY_AFTER)


@dataclass
class Stored:
    size: int
    body: bytes | None  # None: larger than the limit asked for, not read
    written: datetime  # when it was uploaded (S3's LastModified)


class Files:
    def __init__(self, client: Any, bucket: str) -> None:
        self.client = client
        self.bucket = bucket

    @staticmethod
    def key(tenant_id: str, file_id: str) -> str:
        return f"tenants/{tenant_id}/{file_id}"

    def upload_url(self, tenant_id: str, file_id: str, expires_s: int) -> str:
        """A pre-signed PUT of the file: only that key, only until ``expires_s`` from now."""
        url: str = self.client.generate_presigned_url(
            "put_object", Params={"Bucket": self.bucket, "Key": self.key(tenant_id, file_id)},
            ExpiresIn=expires_s, HttpMethod="PUT")
        return url

    def download_url(self, tenant_id: str, file_id: str, expires_s: int) -> str:
        """A pre-signed GET of the file: only that key, only until ``expires_s`` from now."""
        url: str = self.client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": self.key(tenant_id, file_id)},
            ExpiresIn=expires_s, HttpMethod="GET")
        return url

    def write(self, tenant_id: str, file_id: str, body: bytes, content_type: str) -> None:
        try:
            self.client.put_object(Bucket=self.bucket, Key=self.key(tenant_id, file_id),
                                   Body=body, ContentType=content_type)
        except (ClientError, BotoCoreError):
            raise files_unavailable() from None

    def read(self, tenant_id: str, file_id: str, limit: int) -> Stored | None:
        """The object (None: there is none), its body only when it is at most ``limit`` bytes."""
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self.key(tenant_id, file_id))
            size, written = int(answer["ContentLength"]), answer["LastModified"]
            if size > limit:
                answer["Body"].close()
                return Stored(size, None, written)
            return Stored(size, answer["Body"].read(limit + 1), written)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code", "") in MISSING:
                return None
            raise files_unavailable() from None
        except BotoCoreError:
            raise files_unavailable() from None

    def discard(self, tenant_id: str, file_id: str) -> None:
        """Delete the object, if the store lets us: it is called after the charge, so a failure
        must not turn a paid call into an error; the bucket's lifecycle expires it anyway."""
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self.key(tenant_id, file_id))
        except (ClientError, BotoCoreError) as exc:
            logger.warning("file not deleted", extra={"exception": type(exc).__name__})
