"""Lambda for agent.semantic_loop: wiring only (see loopsense.platform.skill_call)."""

from loopsense.platform.catalog import CATALOG
from loopsense.platform.skill_call import skill_lambda_handler

SKILL = CATALOG["agent.semantic_loop"]
lambda_handler = skill_lambda_handler(SKILL)
