"""What a charged answer says of its charge (POST /v1/execute, an accepted step batch): its
shape for the OpenAPI document and the SDKs' types."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, with_config
from typing_extensions import TypedDict

from loopsense.validation import ANSWER


@with_config(ANSWER)
class Billing(TypedDict):
    credits: Annotated[int, Field(ge=0)]  # the credits this call was charged
