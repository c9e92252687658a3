"""loopsense SDK for Python: ``Client.execute``, typed errors, safe retries, and the semantic_loop
canonical form computed locally. Standard library only.

    from loopsense_sdk import Client

    client = Client()  # LOOPSENSE_API_KEY, LOOPSENSE_BASE_URL
    answer = client.execute("agent.loop_detect", {"events": [...]})
    answer["output"]["loopDetected"]
"""

from __future__ import annotations

__version__ = "0.1.0"

from loopsense_sdk.canonical import (  # noqa: E402 - after __version__, which client.py reads
    CanonicalError,
    canonical_hash,
    canonicalize,
    semantic_signature,
)
from loopsense_sdk.client import (  # noqa: E402
    DEFAULT_BASE_URL,
    Client,
    HttpRequest,
    HttpResponse,
    Transport,
    checkpoint,
)
from loopsense_sdk.errors import (  # noqa: E402
    APIConnectionError,
    AuthenticationError,
    ConflictError,
    ErrorDetail,
    EventLimitExceededError,
    ExecutionTimeoutError,
    IdempotencyInProgressError,
    IdempotencyKeyReusedError,
    InternalError,
    LoopsenseError,
    NotFoundError,
    PermissionDeniedError,
    QuotaExceededError,
    RateLimitError,
    RequestTimeoutError,
    SkillNotAccessibleError,
    SkillNotAvailableForPlanError,
    SkillNotFoundError,
    TenantRateLimitedError,
    UnavailableError,
    ValidationError,
)
from loopsense_sdk.telemetry import Telemetry  # noqa: E402
from loopsense_sdk.types import (  # noqa: E402
    Billing,
    ExecuteResponse,
    LoopDetectEvent,
    LoopDetectInput,
    LoopDetectOutput,
    LoopDetectSpan,
    LoopsFinding,
    LoopsInput,
    LoopsOutput,
    LoopsStats,
    LoopsThresholds,
    SemanticLoopGroup,
    SemanticLoopInput,
    SemanticLoopOutput,
    SemanticLoopThresholds,
    SkillKey,
    TelemetryEvent,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "APIConnectionError",
    "AuthenticationError",
    "Billing",
    "CanonicalError",
    "Client",
    "ConflictError",
    "ErrorDetail",
    "EventLimitExceededError",
    "ExecuteResponse",
    "ExecutionTimeoutError",
    "HttpRequest",
    "HttpResponse",
    "IdempotencyInProgressError",
    "IdempotencyKeyReusedError",
    "InternalError",
    "LoopDetectEvent",
    "LoopDetectInput",
    "LoopDetectOutput",
    "LoopDetectSpan",
    "LoopsFinding",
    "LoopsInput",
    "LoopsOutput",
    "LoopsStats",
    "LoopsThresholds",
    "LoopsenseError",
    "NotFoundError",
    "PermissionDeniedError",
    "QuotaExceededError",
    "RateLimitError",
    "RequestTimeoutError",
    "SemanticLoopGroup",
    "SemanticLoopInput",
    "SemanticLoopOutput",
    "SemanticLoopThresholds",
    "SkillKey",
    "SkillNotAccessibleError",
    "SkillNotAvailableForPlanError",
    "SkillNotFoundError",
    "Telemetry",
    "TelemetryEvent",
    "TenantRateLimitedError",
    "Transport",
    "UnavailableError",
    "ValidationError",
    "canonical_hash",
    "canonicalize",
    "checkpoint",
    "semantic_signature",
    "__version__",
]
