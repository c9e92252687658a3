"""Lambda for agent.loops: wiring only (see loopsense.platform.skill_call)."""

from loopsense.platform.catalog import CATALOG
from loopsense.platform.skill_call import skill_lambda_handler

SKILL = CATALOG["agent.loops"]
lambda_handler = skill_lambda_handler(SKILL)
