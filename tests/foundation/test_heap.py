"""kraftpy.heap: when the objects alive are frozen out of the collector's passes."""

from __future__ import annotations

import gc

import pytest

from kraftpy import heap


def test_changes_are_frozen_once_they_add_up_to_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker reports 100,000 replicas in requests of about 2,000: the controller's state must not
    keep them all in the collector's walked generations because no single change was large."""
    monkeypatch.setattr(heap, "_loaded_since_freeze", 0)
    kept = [[i] for i in range(1000)]  # tracked objects, so a freeze has something to move
    before = gc.get_freeze_count()
    heap.after_change(heap.LARGE // 2)
    heap.after_change(heap.LARGE // 2 - heap.MEDIUM)
    assert gc.get_freeze_count() == before
    heap.after_change(heap.MEDIUM)
    assert gc.get_freeze_count() > before
    assert heap._loaded_since_freeze == 0
    del kept


def test_a_small_change_alone_freezes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_loaded_since_freeze", 0)
    kept = [[i] for i in range(1000)]
    before = gc.get_freeze_count()
    heap.after_change(10)
    assert gc.get_freeze_count() == before
    del kept


def test_an_idle_controllers_small_writes_never_add_up_to_a_freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    """A NoOpRecord every 500 ms, forever: each freeze would keep the cyclic garbage of its moment."""
    monkeypatch.setattr(heap, "_loaded_since_freeze", 0)
    kept = [[i] for i in range(1000)]
    before = gc.get_freeze_count()
    for _ in range(3 * heap.LARGE):
        heap.after_change(1)
    assert gc.get_freeze_count() == before
    del kept
