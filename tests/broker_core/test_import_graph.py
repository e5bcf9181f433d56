"""The broker's modules import one another without a circle (type-checking imports included)."""

from __future__ import annotations

from tests.support.import_graph import cycles, import_graph


def test_no_import_circle_in_the_broker() -> None:
    graph = import_graph("broker")
    assert graph.get("broker.server")
    assert cycles(graph) == []


def test_the_cycle_finder_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
