"""Lambda for agent.semantic_loop: wiring only (loopsense.platform.skill_call.skill_lambda_handler)."""

from loopsense.platform.catalog import CATALOG
from loopsense.platform.skill_call import skill_lambda_handler

SKILL = CATALOG["agent.semantic_loop"]
lambda_handler = skill_lambda_handler(SKILL)
