"""A playbook as the API answers it (GET /v1/playbooks/{name}, and inside a failure group's
detail): its shape for the OpenAPI document and the SDKs' types."""

from __future__ import annotations

from pydantic import with_config
from typing_extensions import TypedDict

from loopsense.validation import ANSWER


@with_config(ANSWER)
class Playbook(TypedDict):
    name: str
    title: str  # the markdown's first heading
    markdown: str
