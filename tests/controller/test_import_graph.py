"""The controller core's modules import one another without a circle."""

from __future__ import annotations

from tests.support.import_graph import cycles, import_graph


def test_no_import_circle_in_the_controller_core() -> None:
    graph = import_graph("controller.core")
    # The old circle: context built the managers and producer_ids read them back through it.
    assert "controller.core.context" not in graph["controller.core.producer_ids"]
    assert cycles(graph) == []


def test_the_cycle_finder_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
