"""File inputs (spec/platform.md, File inputs; docs/files.md): POST /v1/files, and an execute
``input`` of ``{"fileRef": ..., ...other params}`` read in place of its inline events.

The file holds what would have been inline: the skill's events (its steps for
agent.run_monitor) as one JSON array, or as JSON Lines (one event a line). A ref that names no
file of the caller's tenant (missing, expired, used, or another tenant's: one answer for all, so
nothing tells them apart), a file over FILE_LIMIT_BYTES, or bytes that are neither are the
skill's own input errors, naming ``input.fileRef`` and the limit, never the content. A file is
deleted once its call succeeded (and charged); a failed call leaves it for the retry, and the
bucket's lifecycle expires whatever is left after a day.
"""

from __future__ import annotations

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
UPLOAD_URL_TTL_S = 900  # the pre-signed upload URL's life
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
                      uploadUrl=files.upload_url(tenant_id, file_id, UPLOAD_URL_TTL_S),
                      method="PUT", expiresAt=stamp(now + timedelta(seconds=UPLOAD_URL_TTL_S)),
                      maxBytes=FILE_LIMIT_BYTES).model_dump()


def wants_file(raw_input: Any) -> bool:
    return isinstance(raw_input, dict) and REF_FIELD in raw_input


def read_input(files: Files | None, skill: Skill, tenant_id: str,
               raw_input: dict[str, Any]) -> FileInput:
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
    if stored.body is None or len(stored.body) > FILE_LIMIT_BYTES:
        raise validation_error(PATH, f"the file is over {FILE_LIMIT_BYTES} bytes (2 MiB)",
                               too_large)
    items = _parse(stored.body, invalid)
    rest = {k: v for k, v in raw_input.items() if k != REF_FIELD}
    return FileInput({**rest, skill.items: items}, ref, stored.size)


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

