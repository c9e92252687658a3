"""Lambda for agent.semantic_loop: wiring only (see loopsense.platform.execute.skill_handler)."""

from loopsense.platform.access.catalog import CATALOG
from loopsense.platform.execute.skill_handler import skill_lambda_handler

SKILL = CATALOG["agent.semantic_loop"]
lambda_handler = skill_lambda_handler(SKILL)
