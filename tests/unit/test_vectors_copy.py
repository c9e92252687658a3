"""The project's copy of the spec's conformance vectors is the spec's, byte for byte.

Every suite (pytest and both SDKs) reads spec/vectors/ in this repository, so a clone stands
alone; where the spec folder sits beside the repository (../shared/spec, as for the developers
and CI), the copy must not have drifted from it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
OURS = REPO_ROOT / "spec" / "vectors"
SPEC = REPO_ROOT.parent / "shared" / "spec" / "vectors"


@pytest.mark.skipif(not SPEC.is_dir(), reason="no ../shared/spec/vectors beside the clone")
def test_the_vectors_copy_matches_the_spec():
    theirs = {p.name: p.read_bytes() for p in sorted(SPEC.iterdir()) if p.is_file()}
    ours = {p.name: p.read_bytes() for p in sorted(OURS.iterdir()) if p.is_file()}
    assert theirs, "the spec's vectors folder is empty"
    assert ours == theirs
