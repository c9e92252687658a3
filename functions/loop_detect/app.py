"""Lambda for agent.loop_detect: wiring only (see loopsense.platform.skill_call)."""

from loopsense.platform.catalog import CATALOG
from loopsense.platform.skill_call import skill_lambda_handler

SKILL = CATALOG["agent.loop_detect"]
lambda_handler = skill_lambda_handler(SKILL)
