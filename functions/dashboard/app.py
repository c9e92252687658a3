"""GET / and GET /ui/{proxy+}: the dashboard's files from site/ (platform.dashboard).
Wiring only."""

from pathlib import Path
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import lambda_entry
from loopsense.platform.dashboard.files import handle, load_site

SITE = load_site(Path(__file__).parent / "site")  # cold start: read once


@lambda_entry
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, SITE)
