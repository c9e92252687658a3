"""Lambda for agent.loops: wiring only (see loopsense.platform.execute.skill_handler)."""

from loopsense.platform.access.catalog import CATALOG
from loopsense.platform.execute.skill_handler import skill_lambda_handler

SKILL = CATALOG["agent.loops"]
lambda_handler = skill_lambda_handler(SKILL)
