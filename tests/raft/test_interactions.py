"""Runs the scripted interactions in testdata/ (see interaction.py); RAFT_REWRITE=1 regenerates them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.raft.interaction import run_file

TESTDATA = Path(__file__).parent / "testdata"


@pytest.mark.parametrize("path", sorted(TESTDATA.glob("*.txt")), ids=lambda p: p.stem)
def test_interaction(path: Path) -> None:
    mismatches = run_file(path, rewrite=os.environ.get("RAFT_REWRITE") == "1")
    assert not mismatches, "\n\n".join(f"{c}\nexpected:\n{e}actual:\n{a}" for c, e, a in mismatches)
