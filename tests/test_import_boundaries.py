"""Import boundaries of the folder tree: protocol/ stands alone, benchmarks do not lean on tests."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OURS = {"kraftpy", "controller", "broker", "tools", "tests", "bench", "protocol"}


def imported_packages(folder: str) -> dict[str, set[str]]:
    """{file: top-level packages of ours it imports}, inline imports included."""
    out: dict[str, set[str]] = {}
    for path in sorted((REPO / folder).rglob("*.py")):
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
        out[str(path.relative_to(REPO))] = found & OURS
    return out


def test_protocol_imports_nothing_of_ours() -> None:
    offenders = {
        f: sorted(p - {"protocol"}) for f, p in imported_packages("protocol").items() if p - {"protocol"}
    }
    assert offenders == {}


def test_benchmarks_import_no_tests() -> None:
    offenders = {f: sorted(p) for f, p in imported_packages("bench").items() if "tests" in p}
    assert offenders == {}


def test_servers_and_shared_core_import_no_tools() -> None:
    """Servers and the shared core stand below the operator tools; the core below the servers too."""
    below = {"controller": {"tools"}, "broker": {"tools"}, "kraftpy": {"tools", "controller", "broker"}}
    offenders = {
        f: sorted(p & banned)
        for folder, banned in below.items()
        for f, p in imported_packages(folder).items()
        if p & banned
    }
    assert offenders == {}


def test_no_import_circles() -> None:
    from tests.support.import_graph import cycles, import_graph

    assert cycles(import_graph("protocol", "kraftpy", "controller", "broker", "tools")) == []
