"""kraftpy.heap: when the objects alive are frozen out of the collector's passes."""

from __future__ import annotations

import gc

import pytest

from kraftpy import heap
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import NoOpRecord, PartitionChangeRecord
from protocol.uuid import Uuid


@pytest.fixture
def freezes(monkeypatch: pytest.MonkeyPatch) -> list[None]:
    """Each gc.freeze() heap asks for, counted instead of done (other tests' objects stay as they are)."""
    calls: list[None] = []
    monkeypatch.setattr(heap, "_loaded_since_freeze", 0)
    monkeypatch.setattr(heap.gc, "freeze", lambda: calls.append(None))
    return calls


def test_changes_are_frozen_once_they_add_up_to_large(freezes: list[None]) -> None:
    """A broker reports 100,000 replicas in requests of about 2,000: the controller's state must not
    stay in the collector's walked generations because no single change was large."""
    heap.after_load(heap.LARGE // 2)
    heap.after_load(heap.LARGE // 2 - 1)
    assert freezes == []
    heap.after_load(1)
    assert len(freezes) == 1
    assert heap._loaded_since_freeze == 0


def test_an_idle_controllers_noop_records_never_add_up_to_a_freeze(freezes: list[None]) -> None:
    """A NoOpRecord every 500 ms, forever: each freeze would keep the cyclic garbage of its moment."""
    noop = [ApiMessageAndVersion(NoOpRecord(), 0)]
    for _ in range(3 * heap.LARGE):
        heap.after_load(heap.lasting(noop))
    assert freezes == []


def test_every_record_but_a_lone_noop_counts() -> None:
    change = ApiMessageAndVersion(PartitionChangeRecord(PartitionId=0, TopicId=Uuid.random()), 0)
    noop = ApiMessageAndVersion(NoOpRecord(), 0)
    assert heap.lasting([noop]) == 0
    assert heap.lasting([change]) == 1
    assert heap.lasting([change, noop]) == 2
    assert heap.lasting([]) == 0


def test_a_real_freeze_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_loaded_since_freeze", 0)
    kept = [[i] for i in range(1000)]  # tracked objects, so the freeze has something to move
    before = gc.get_freeze_count()
    heap.after_load(heap.LARGE)
    assert gc.get_freeze_count() > before
    del kept
