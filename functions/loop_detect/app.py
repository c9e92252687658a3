"""Lambda for agent.loop_detect: wiring only (see loopsense.platform.execute.skill_handler)."""

from loopsense.platform.access.catalog import CATALOG
from loopsense.platform.execute.skill_handler import skill_lambda_handler

SKILL = CATALOG["agent.loop_detect"]
lambda_handler = skill_lambda_handler(SKILL)
