"""Client-side pieces without a cluster: key partitioning, batch bytes, reading fetched batches,
per-record futures, and the CLI's parsing of Kafka-style flags."""

from __future__ import annotations

import asyncio
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import Errors
from protocol.record_batch import Record, RecordBatch, build_control_batch, decode_batch, encode_batch
from tools.cli.errors import UserError
from tools.cli.topics import parse_assignment
from tools.client.cli_support import producer_overrides
from tools.client.errors import ClientError
from tools.client.partitioner import murmur2, partition_for_key
from tools.client.producer import BatchResult, RecordFuture, _Batch, increment_sequence
from tools.client.records import ProducerRecord, build_batch, next_offset_after, read_fetched, read_records


def test_murmur2_matches_kafka() -> None:
    # Kafka's UtilsTest.testMurmur2 vectors.
    cases = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        b"abc": 479470107,
    }
    for key, expected in cases.items():
        assert murmur2(key) == expected
    assert partition_for_key(b"foobar", 3) == (-790332482 & 0x7FFFFFFF) % 3


records_strategy = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=40)),
        st.one_of(st.none(), st.binary(max_size=20000)),
        st.integers(min_value=0, max_value=10**9),
        st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=2),
    ),
    min_size=1,
    max_size=20,
)


@settings(max_examples=60, deadline=None)
@given(
    records_strategy,
    st.integers(min_value=-1, max_value=2**40),
    st.integers(min_value=-1, max_value=2**31 - 1),
)
def test_batches_are_the_codec_bytes(raw: list, producer_id: int, sequence: int) -> None:  # type: ignore[type-arg]
    base = 1_700_000_000_000
    recs = [ProducerRecord(k, v, base + dt, h) for k, v, dt, h in raw]
    data = build_batch(recs, producer_id=producer_id, producer_epoch=0, base_sequence=sequence)
    expected = encode_batch(
        RecordBatch(
            last_offset_delta=len(recs) - 1,
            base_timestamp=recs[0].timestamp_ms,
            max_timestamp=max(r.timestamp_ms for r in recs),
            producer_id=producer_id,
            producer_epoch=0,
            base_sequence=sequence,
            records=[
                Record(
                    timestamp_delta=r.timestamp_ms - recs[0].timestamp_ms,
                    offset_delta=i,
                    key=r.key,
                    value=r.value,
                    headers=r.headers,
                )
                for i, r in enumerate(recs)
            ],
        )
    )
    assert data == expected
    decoded = decode_batch(data)  # CRC checked
    assert [r.value for r in decoded.records] == [r.value for r in recs]


def _at(data: bytes, base_offset: int) -> bytes:
    batch = decode_batch(data)
    batch.base_offset = base_offset
    return encode_batch(batch)


def test_reading_skips_below_the_position_and_control_batches() -> None:
    first = _at(build_batch([ProducerRecord(b"k", b"%d" % i, 10 + i) for i in range(3)]), 10)
    control = build_control_batch(13, 0, 0, [_leader_change()])
    second = _at(build_batch([ProducerRecord(None, b"x", 20)]), 14)
    data = first + control + second
    got = list(read_records("t", 0, data, 11))
    assert [(r.offset, r.value) for r in got] == [(11, b"1"), (12, b"2"), (14, b"x")]
    assert got[0].key == b"k" and got[0].timestamp_ms == 11
    assert next_offset_after(data, 11) == 15
    assert next_offset_after(b"", 7) == 7


def _leader_change():  # type: ignore[no-untyped-def]
    from protocol.control_records import LeaderChangeMessage

    return LeaderChangeMessage(LeaderId=1)


def test_sequences_wrap_like_the_broker() -> None:
    assert increment_sequence(5, 3) == 8
    assert increment_sequence(2**31 - 2, 3) == 1


async def test_record_futures_share_one_batch_answer() -> None:
    batch = _Batch("t", 2, time.monotonic())
    batch.records = [ProducerRecord(None, b"a", 1), ProducerRecord(None, b"b", 2)]
    first, second = RecordFuture(batch, 0), RecordFuture(batch, 1)
    seen: list[int] = []
    second.add_done_callback(lambda f: seen.append(f.result().offset))
    assert not first.done()
    with pytest.raises(asyncio.InvalidStateError):
        first.result()
    waiter = asyncio.ensure_future(_await(first))
    await asyncio.sleep(0)
    batch.result.finish(40, None)
    assert (await waiter).offset == 40
    assert seen == [41]
    assert second.result().timestamp_ms == 2 and second.exception() is None

    failed = _Batch("t", 0, time.monotonic(), records=[ProducerRecord(None, b"c", 3)], result=BatchResult())
    failed.result.finish(-1, ClientError(Errors.REQUEST_TIMED_OUT, "gave up"))
    f = RecordFuture(failed, 0)
    assert f.exception() is not None and f.exception().code is Errors.REQUEST_TIMED_OUT  # type: ignore[union-attr]
    with pytest.raises(ClientError):
        await f


async def _await(f: RecordFuture):  # type: ignore[no-untyped-def]
    return await f


def test_producer_properties_use_kafka_names() -> None:
    assert producer_overrides({"acks": "all", "linger.ms": "7", "batch.size": "1024"}) == {
        "acks": -1,
        "linger_ms": 7,
        "batch_size": 1024,
    }
    assert producer_overrides({"acks": "1"}) == {"acks": 1, "enable_idempotence": False}
    for bad in ({"acks": "2"}, {"linger.ms": "soon"}, {"compression.type": "zstd"}):
        with pytest.raises(UserError):
            producer_overrides(bad)


def test_replica_assignment_flag() -> None:
    assert parse_assignment("1:2:3,2:3:1") == {0: [1, 2, 3], 1: [2, 3, 1]}
    for bad in ("1:1", "1:2,3", "a:b", "1:2,"):
        with pytest.raises(UserError):
            parse_assignment(bad)


def test_perf_payloads_are_printable_capitals_of_the_record_size() -> None:
    # kafka-producer-perf-test sends capital letters, so a console consumer shows text, not noise.
    from tools.client.perf import _letters

    for size in (0, 1, 100, 1000):
        payload = _letters(size)
        assert len(payload) == size
        assert size == 0 or (payload.isalpha() and payload.isupper())


def test_a_corrupt_batch_stops_reading_after_the_good_ones_before_it() -> None:
    first = _at(build_batch([ProducerRecord(None, b"%d" % i, 10 + i) for i in range(3)]), 10)
    bad = bytearray(_at(build_batch([ProducerRecord(None, b"bad", 20)]), 13))
    bad[-1] ^= 0x01  # a flipped bit inside the record: the CRC no longer matches
    third = _at(build_batch([ProducerRecord(None, b"after", 30)]), 14)
    got = read_fetched("t", 0, first + bytes(bad) + third, 11)
    assert [(r.offset, r.value) for r in got.records] == [(11, b"1"), (12, b"2")]
    assert got.next_offset == 13 and got.corrupt is not None and "offset 13 of t-0" in got.corrupt
    # A batch cut short at the end of a response is the fetch size limit, not corruption.
    clean = read_fetched("t", 0, first + third[:-5], 10)
    assert len(clean.records) == 3 and clean.next_offset == 13 and clean.corrupt is None


async def test_the_consumer_hands_out_the_good_records_then_reports_the_corrupt_batch() -> None:
    from protocol.errors import Errors
    from protocol.rpc.broker_fetch import FetchResponse
    from tools.client.consumer import Consumer
    from tools.client.errors import ClientError

    good = _at(build_batch([ProducerRecord(None, b"ok", 10)]), 0)
    bad = bytearray(_at(build_batch([ProducerRecord(None, b"bad", 20)]), 1))
    bad[-1] ^= 0x01
    consumer = Consumer("127.0.0.1:1")
    consumer._assigned = [("t", 0)]
    consumer._positions[("t", 0)] = 0

    async def fetch_once(_wait_ms: int) -> None:
        pd = FetchResponse.PartitionData(PartitionIndex=0, HighWatermark=2, Records=good + bytes(bad))
        consumer._take("t", pd)

    consumer._fetch_once = fetch_once  # type: ignore[method-assign]
    first = await consumer.poll(100)
    assert [r.value for r in first] == [b"ok"]
    with pytest.raises(ClientError) as e:
        await consumer.poll(100)
    assert e.value.code is Errors.CORRUPT_MESSAGE and "offset 1 of t-0" in str(e.value)
    assert consumer.position(("t", 0)) == 1
    consumer.seek(("t", 0), 2)  # step past it: no error pending
    assert consumer._corrupt is None
    await consumer.close()


def test_kafka_action_flags_are_taken_as_the_action() -> None:
    from tools.cli.main import kafka_style

    assert kafka_style(["topics", "--bootstrap-server", "h:1", "--describe", "--topic", "t"]) == [
        "topics", "describe", "--bootstrap-server", "h:1", "--topic", "t",
    ]  # fmt: skip
    assert kafka_style(["topics", "--create", "--topic", "t"])[:2] == ["topics", "create"]
    assert kafka_style(["log-dirs", "--describe", "--bootstrap-server", "h:1"])[:2] == [
        "log-dirs",
        "describe",
    ]
    # The word form, other commands and no action at all are left alone.
    assert kafka_style(["topics", "list", "--bootstrap-server", "h:1"]) == [
        "topics",
        "list",
        "--bootstrap-server",
        "h:1",
    ]
    assert kafka_style(["cluster", "--describe"]) == ["cluster", "--describe"]
    assert kafka_style(["topics", "--topic", "t"]) == ["topics", "--topic", "t"]
    with pytest.raises(ValueError, match="not --describe and --list"):
        kafka_style(["topics", "--describe", "--list"])
