"""The image and the metadata model import one another without a circle, and the model never
imports the image (the controller uses the model without the image)."""

from __future__ import annotations

from tests.support.import_graph import cycles, import_graph


def test_no_import_circle_in_the_image_or_the_metadata_model() -> None:
    graph = import_graph("kraftpy.image", "kraftpy.metadata")
    # The old circle: the image wrote itself through writer, which read the image back.
    assert "kraftpy.image.image" not in graph["kraftpy.image.writer"]
    assert cycles(graph) == []


def test_the_metadata_model_does_not_import_the_image() -> None:
    graph = import_graph("kraftpy.image", "kraftpy.metadata")
    for module, deps in graph.items():
        if module.startswith("kraftpy.metadata"):
            assert not {d for d in deps if d.startswith("kraftpy.image")}, module
