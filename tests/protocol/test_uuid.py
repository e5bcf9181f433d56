"""Kafka's Uuid text form, ordering and the reserved directory ids (reference section 4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.uuid import (
    LOST,
    MIGRATING,
    UNASSIGNED,
    InvalidUuidError,
    Uuid,
    describe_directory,
    random_directory_id,
)


def test_reserved_ids_are_shipped_kafkas() -> None:
    assert str(MIGRATING) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert str(UNASSIGNED) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert str(LOST) == "AAAAAAAAAAAAAAAAAAAAAg"
    assert UNASSIGNED == Uuid.METADATA_TOPIC_ID
    assert all(Uuid.from_longs(0, n).is_reserved() for n in range(100))
    assert not Uuid.from_longs(0, 100).is_reserved()
    assert not Uuid.from_longs(1, 0).is_reserved()


def test_random_ids_are_never_reserved_nor_dash_leading() -> None:
    for _ in range(2000):
        u = Uuid.random()
        text = str(u)
        assert len(text) == 22 and not text.startswith("-") and not u.is_reserved()


def test_random_directory_id_avoids_taken() -> None:
    taken = {Uuid.random() for _ in range(5)}
    assert random_directory_id(taken) not in taken


@given(st.binary(min_size=16, max_size=16))
def test_text_round_trip(raw: bytes) -> None:
    u = Uuid(raw)
    assert Uuid.from_string(str(u)) == u
    assert Uuid.from_string(str(u) + "==") == u


@pytest.mark.parametrize(
    "text",
    ["", "AAAA", "not a uuid at all!!!!!", "AAAAAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAA+/", "A" * 21],
)
def test_bad_text_is_a_clear_error(text: str) -> None:
    with pytest.raises(InvalidUuidError, match=r"not a Uuid|longer than 24"):
        Uuid.from_string(text)


def test_ordering_is_signed_msb_then_lsb() -> None:
    negative = Uuid.from_longs(-1, 0)
    zero = Uuid.from_longs(0, 5)
    positive = Uuid.from_longs(1, -7)
    assert sorted([positive, zero, negative]) == [negative, zero, positive]
    assert Uuid.from_longs(0, -1) < Uuid.from_longs(0, 1)


def test_reserved_directories_are_described_by_name() -> None:
    a = Uuid.random()
    assert describe_directory(LOST) == "LOST" and describe_directory(a) == str(a)
