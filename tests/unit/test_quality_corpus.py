"""The quality corpus (benchmarks/quality/): the committed file is what its seeded generator
makes, and on a few fixed traces of each shape the run monitor, as the runs API applies it,
flags every looping shape and no healthy look-alike (benchmarks/bench_quality.py prints the
figures over the whole corpus; no test holds a figure)."""

from __future__ import annotations

import json

import pytest

from benchmarks import bench_quality
from benchmarks.quality import corpus

TRACES = json.loads(corpus.OUT.read_text())["traces"]
FIXED = [t for t in TRACES if int(t["id"].rsplit("-", 1)[1]) < 3]


def test_the_committed_corpus_is_the_generators():
    assert corpus.OUT.read_text() == corpus.text()
    assert len(TRACES) >= 300
    labels = [t["label"] for t in TRACES]
    assert labels.count("looping") == labels.count("healthy")


@pytest.mark.parametrize("trace", FIXED, ids=[t["id"] for t in FIXED])
def test_each_shape_is_flagged_or_not_as_labelled(trace):
    assert bench_quality.loopsense_flags(trace["steps"]) is (trace["label"] == "looping")
