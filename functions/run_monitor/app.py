"""Lambda for agent.run_monitor: wiring only (see loopsense.platform.skill_call)."""

from loopsense.platform.catalog import CATALOG
from loopsense.platform.skill_call import skill_lambda_handler

SKILL = CATALOG["agent.run_monitor"]
lambda_handler = skill_lambda_handler(SKILL)
