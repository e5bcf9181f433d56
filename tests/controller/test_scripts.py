"""Runs every script in tests/controller/testdata (see tests/controller/scripted.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.controller.scripted import TESTDATA, rewrite, rewrite_requested, run_file

SCRIPTS = sorted(TESTDATA.glob("*.txt"))


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_script(path: Path) -> None:
    if rewrite_requested():
        rewrite(path)
    stanzas, outputs = run_file(path)
    for stanza, out in zip(stanzas, outputs, strict=True):
        assert out == stanza.expected, (
            f"{path.name}:{stanza.line}: {stanza.command}\n--- expected\n{stanza.expected}\n--- got\n{out}"
        )


def test_scripts_exist() -> None:
    assert len(SCRIPTS) >= 4
