"""Kafka's Uuid text form, ordering and the reserved directory ids (reference section 4)."""

from __future__ import annotations

import copy
import ctypes
import json
import pickle
import struct
import sys

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


# ---- Uuid as a bytes subclass: the old class's semantics, bytes' C hash and equality ----------------


def _old_key(raw: bytes) -> tuple[int, int]:
    """Kafka's order as the former pure-Python class computed it: signed msb, then signed lsb."""

    def signed(v: int) -> int:
        return v - (1 << 64) if v & (1 << 63) else v

    return signed(int.from_bytes(raw[:8], "big")), signed(int.from_bytes(raw[8:], "big"))


@given(st.binary(min_size=16, max_size=16), st.binary(min_size=16, max_size=16))
def test_order_hash_and_equality_are_the_former_ones(a: bytes, b: bytes) -> None:
    ua, ub = Uuid(a), Uuid(b)
    assert (ua.msb, ua.lsb) == _old_key(a)
    assert Uuid.from_longs(ua.msb, ua.lsb) == ua
    assert hash(ua) == hash(a)  # the former __hash__ was hash(self._bytes)
    assert (ua == ub) is (a == b) and (ua != ub) is (a != b)
    assert Uuid(bytes(a)) == ua and hash(Uuid(bytes(a))) == hash(ua)
    assert (ua < ub) is (_old_key(a) < _old_key(b))
    assert (ua <= ub) is (_old_key(a) <= _old_key(b))
    assert (ua > ub) is (_old_key(a) > _old_key(b))
    assert (ua >= ub) is (_old_key(a) >= _old_key(b))


def test_order_differs_from_bytes_order_where_kafkas_does() -> None:
    negative_msb = Uuid(b"\xff" + bytes(15))
    assert negative_msb < Uuid.ZERO and bytes(negative_msb) > bytes(Uuid.ZERO)
    negative_lsb = Uuid(bytes(8) + b"\x80" + bytes(7))
    assert negative_lsb < Uuid.ZERO and max([Uuid.ONE, negative_lsb, Uuid.ZERO]) is Uuid.ONE


def test_dict_keys_by_uuid_and_by_uuid_and_partition() -> None:
    raws = [bytes([i]) * 16 for i in range(50)]
    by_id = {Uuid(r): i for i, r in enumerate(raws)}
    by_tp = {(Uuid(r), p): (i, p) for i, r in enumerate(raws) for p in range(3)}
    for i, r in enumerate(raws):
        assert by_id[Uuid(r)] == i  # an equal but distinct instance finds the entry
        assert by_tp[(Uuid(r), 2)] == (i, 2)
    assert Uuid.random() not in by_id and "AAAAAAAAAAAAAAAAAAAAAA" not in by_id
    # Deliberately bytes' equality: a Uuid equals its own 16 plain bytes (nothing mixes the two as keys).
    assert Uuid(raws[3]) == raws[3] and by_id[raws[3]] == 3 and Uuid(raws[3]) != raws[4]


def test_hash_and_equality_are_bytes_own_c_slots() -> None:
    assert Uuid.__hash__ is bytes.__hash__
    assert "__eq__" not in vars(Uuid) and "__ne__" not in vars(Uuid)
    if sys.implementation.name != "cpython" or struct.calcsize("P") != 8:
        pytest.skip("reads CPython's 64-bit PyTypeObject layout")
    tp_hash = 15 * 8  # offset of tp_hash in PyTypeObject (after ob_base, tp_name ... tp_as_mapping)

    def slot(t: type) -> int | None:
        return ctypes.c_void_p.from_address(id(t) + tp_hash).value

    class PythonHash(bytes):
        def __hash__(self) -> int:
            return 0

    assert slot(Uuid) == slot(bytes) != slot(PythonHash)


def test_construction_accepts_exactly_16_plain_bytes() -> None:
    for bad in (bytes(15), bytes(17), bytearray(16), memoryview(bytes(16)), Uuid.ONE, "A" * 16, None):
        with pytest.raises(InvalidUuidError):
            Uuid(bad)  # type: ignore[arg-type]


def test_immutable_picklable_and_bytes_property_is_plain_bytes() -> None:
    u = Uuid.random()
    with pytest.raises(AttributeError, match="immutable"):
        u.msb = 1  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        u.anything = 1  # type: ignore[attr-defined]
    assert type(u.bytes) is bytes and u.bytes == bytes(u) and len(u.bytes) == 16
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(u, protocol))
        assert type(back) is Uuid and back == u and str(back) == str(u)
    assert type(copy.copy(u)) is Uuid and copy.deepcopy(u) == u
    assert f"{u}" == str(u) and repr(u) == f"Uuid('{u}')"


def test_wire_and_text_encodings_are_unchanged() -> None:
    """Every place a Uuid leaves the process still writes 16 raw bytes or the 22-character text."""
    import msgpack

    from protocol.metadata_records import TopicRecord
    from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest
    from protocol.transport import codec
    from tools.analytics.decoding import _json_default, _to_json

    u = Uuid(bytes(range(16)))
    text = "AAECAwQFBgcICQoLDA0ODw"
    assert str(u) == text
    req = BrokerHeartbeatRequest(BrokerId=1, OfflineLogDirs=[u])
    packed = req.to_wire(1, "msgpack")["OfflineLogDirs"]
    assert [type(x) for x in packed] == [bytes] and packed == [u.bytes]
    assert codec.encode({"d": packed}, "msgpack") == b"\x81\xa1d\x91\xc4\x10" + bytes(range(16))
    assert req.to_wire(1, "json")["OfflineLogDirs"] == [text]
    assert json.loads(codec.encode(req.to_wire(1, "json"), "json"))["OfflineLogDirs"] == [text]
    assert req.model_dump(mode="json")["OfflineLogDirs"] == [text]
    assert msgpack.unpackb(msgpack.packb(u.bytes)) == bytes(range(16))
    # The Spark job's record JSON: a Uuid is its text, not the base64 of its bytes.
    assert _json_default(u) == text and _json_default(b"\x00\x01") == "AAE="
    rec = TopicRecord(Name="t", TopicId=u)
    assert json.loads(_to_json(rec, 0)) == {"Name": "t", "TopicId": text} == rec.to_json_dict(0)
    # Generated record classes share Uuid.ZERO as the default and encode a Uuid as its 16 bytes.
    assert TopicRecord().TopicId is Uuid.ZERO
    from protocol.framing import ApiMessageAndVersion, decode_record, encode_record

    encoded = encode_record(ApiMessageAndVersion(rec, 0))
    assert bytes(range(16)) in encoded
    assert decode_record(encoded).message.TopicId == u
