"""The playbooks: one markdown file per agent.loops sub-signature and one for agent.semantic_loop,
shipped as package data (and in the Lambda layer, which is shared/ itself). Served by
GET /v1/playbooks/{name} (platform/playbooks/routes.py), rendered in a failure group's detail, and
printed by `loopsense playbook NAME`.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from loopsense.errors import LoopsenseError
from loopsense.platform.access.catalog import playbook_names

NAMES = playbook_names()  # as the catalog's skills declare them


def not_found() -> LoopsenseError:
    return LoopsenseError("PLAYBOOK_NOT_FOUND", "no playbook has this name")


@cache
def markdown(name: str) -> str:
    """The playbook's markdown; PLAYBOOK_NOT_FOUND for any other name (only the catalog's
    names ever reach the file system; a failed lookup is not cached)."""
    if name not in NAMES:
        raise not_found()
    return (resources.files(__name__) / f"{name}.md").read_text(encoding="utf-8")


def playbook(name: str) -> dict[str, str]:
    """``{"name", "title", "markdown"}``: the answer of GET /v1/playbooks/{name}."""
    text = markdown(name)
    title = text.splitlines()[0].lstrip("#").strip()
    return {"name": name, "title": title, "markdown": text}
