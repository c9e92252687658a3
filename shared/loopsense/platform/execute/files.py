"""File inputs and outputs (spec/platform.md, File inputs; docs/files.md): POST /v1/files, an
execute ``input`` of ``{"fileRef": ..., ...other params}`` read in place of its inline events,
and an ``output`` too large to inline answered as a fileRef with a pre-signed download URL.

The file holds what would have been inline: the skill's events (its steps for
agent.run_monitor) as one JSON array, or as JSON Lines (one event a line). A ref that names no
file of the caller's tenant (missing, expired, used, or another tenant's: one answer for all, so
nothing tells them apart), a file over FILE_LIMIT_BYTES, or bytes that are neither are the
skill's own input errors, naming ``input.fileRef`` and the limit, never the content. A file is
deleted once its call succeeded (and charged); a failed call leaves it for the retry, and the
bucket's lifecycle expires whatever is left after a day. A file older than that day is refused
as expired even while S3 still holds it (S3 removes expired objects some time after).
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel

from loopsense import jsonio
from loopsense.core.instants import stamp
from loopsense.errors import LoopsenseError, validation_error
from loopsense.platform.access.catalog import Skill
from loopsense.store.files import Files

FILE_LIMIT_BYTES = 2 * 1024 * 1024  # 2 MiB: the spec's 2 MB, as the skills' own limits count
URL_TTL_S = 900  # a pre-signed upload or download URL's life
FILE_LIFE_S = 24 * 3600  # a file's life: template.yaml's lifecycle rule (one day)
# The inline response size (docs/decisions.md, "Outputs too large to inline"): what a Lambda may
# return synchronously, 6 MB, here the router's proxy response to API Gateway; the envelope's
# allowance covers the answer around the output, its headers and the proxy response's fields.
INLINE_RESPONSE_BYTES = 6 * 1024 * 1024
# ... and for a call with an Idempotency-Key, whose response is stored for its replays in one
# DynamoDB item (access/idempotency.py): the item's limit, 400 KB, the record's text counted as
# the proxy response's (the same escaped JSON).
STORED_RESPONSE_BYTES = 400 * 1024
ENVELOPE_BYTES = 16 * 1024
FILE_REF = re.compile(r"file_[0-9a-f]{32}")
REF_FIELD = "fileRef"
PATH = "input.fileRef"


@dataclass(frozen=True)
class FileInput:
    """An input read from its file: what the skill gets, and the file to delete after use."""

    input: dict[str, Any]
    file_id: str
    size: int  # bytes, for the log line


class FileUpload(BaseModel):
    """POST /v1/files: a fileRef, and where to PUT its bytes before ``expiresAt``."""

    fileRef: str
    uploadUrl: str
    method: Literal["PUT"]
    expiresAt: str
    maxBytes: int


def new_upload(files: Files, tenant_id: str, now: datetime) -> dict[str, Any]:
    """POST /v1/files: a fresh fileRef and its pre-signed upload URL (PUT, the raw bytes)."""
    file_id = "file_" + uuid.uuid4().hex
    return FileUpload(fileRef=file_id,
                      uploadUrl=files.upload_url(tenant_id, file_id, URL_TTL_S),
                      method="PUT", expiresAt=stamp(now + timedelta(seconds=URL_TTL_S)),
                      maxBytes=FILE_LIMIT_BYTES).model_dump()


def wants_file(raw_input: Any) -> bool:
    return isinstance(raw_input, dict) and REF_FIELD in raw_input


def read_input(files: Files | None, skill: Skill, tenant_id: str,
               raw_input: dict[str, Any], now: datetime) -> FileInput:
    """``raw_input`` with its fileRef replaced by the file's events, or the skill's input
    error saying what is wrong with the ref or the file."""
    invalid, too_large = _codes(skill)
    ref = raw_input[REF_FIELD]
    if not isinstance(ref, str) or not FILE_REF.fullmatch(ref):
        raise validation_error(PATH, "must be a fileRef that POST /v1/files returned", invalid)
    if skill.items in raw_input:
        raise validation_error("input", f"give {REF_FIELD} or {skill.items}, not both", invalid)
    if files is None:
        raise validation_error(PATH, "file inputs are not enabled on this deployment", invalid)
    stored = files.read(tenant_id, ref, FILE_LIMIT_BYTES)
    if stored is None:
        raise validation_error(PATH, "names no file of this tenant (never uploaded, expired or "
                                     "already used)", invalid)
    if (now - stored.written).total_seconds() > FILE_LIFE_S:  # its own tenant's: names nothing
        raise validation_error(PATH, f"the file expired: a file is kept {FILE_LIFE_S // 3600} "
                                     "hours after its upload", invalid)
    if stored.body is None or len(stored.body) > FILE_LIMIT_BYTES:
        raise validation_error(PATH, f"the file is over {FILE_LIMIT_BYTES} bytes (2 MiB)",
                               too_large)
    items = _parse(stored.body, invalid)
    rest = {k: v for k, v in raw_input.items() if k != REF_FIELD}
    return FileInput({**rest, skill.items: items}, ref, stored.size)


class FileOutput(BaseModel):
    """An execute ``output`` too large to inline: GET ``downloadUrl`` before ``expiresAt`` for
    the output's JSON, ``bytes`` long, exactly what ``output`` would have held."""

    fileRef: str
    downloadUrl: str
    method: Literal["GET"]
    expiresAt: str
    bytes: int


def deliver(files: Files, tenant_id: str, output: Any, now: datetime,
            limit: int = INLINE_RESPONSE_BYTES) -> Any:
    """``output`` itself when the answer carrying it fits ``limit``; otherwise
    written under the tenant's prefix and answered as a FileOutput (the store unreachable is
    PLAN_ELIGIBILITY_UNAVAILABLE, before anything is charged)."""
    text = jsonio.dumps(output)
    if fits_inline(text, limit):
        return output
    body = text.encode()
    # out_, not file_: an output is never a fileRef an execute takes (its use would delete it
    # from under its download URL and the keyed replays)
    file_id = "out_" + uuid.uuid4().hex
    files.write(tenant_id, file_id, body, "application/json")
    url = files.download_url(tenant_id, file_id, URL_TTL_S)
    return FileOutput(fileRef=file_id, downloadUrl=url, method="GET",
                      expiresAt=stamp(now + timedelta(seconds=URL_TTL_S)),
                      bytes=len(body)).model_dump()


def fits_inline(text: str, limit: int = INLINE_RESPONSE_BYTES) -> bool:
    """Whether the answer carrying ``text`` fits ``limit``. In the proxy response the router
    returns, the body is a JSON string, escaped as Lambda's runtime escapes it (ASCII: a
    character takes up to 12 bytes), so most outputs need no measuring."""
    room = limit - ENVELOPE_BYTES
    return len(text) * 12 <= room or len(json.dumps(text)) <= room


def _parse(body: bytes, invalid: str) -> list[Any]:
    """A JSON array, or JSON Lines (one JSON value a line, blank lines skipped)."""
    not_json = validation_error(PATH, "the file is neither a JSON array nor JSON Lines "
                                      "(UTF-8)", invalid)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise not_json from None
    try:
        whole = jsonio.loads(text)
    except LoopsenseError:
        whole = None
    else:
        if isinstance(whole, list):
            return whole
        if not isinstance(whole, dict):
            raise not_json
    lines = []
    for line in text.splitlines():
        if line.strip():
            try:
                lines.append(jsonio.loads(line))
            except LoopsenseError:
                raise not_json from None
    if not lines:
        raise not_json
    return lines


def _codes(skill: Skill) -> tuple[str, str]:
    """The skill's own codes for a bad input and an input over its limit (its catalog entry's
    ..._INVALID and ..._LIMIT_EXCEEDED; VALIDATION_ERROR where it has none)."""
    def code(suffix: str) -> str:
        return next((c for c in sorted(skill.errors) if c.endswith(suffix)), "VALIDATION_ERROR")

    return code("_INVALID"), code("_LIMIT_EXCEEDED")

