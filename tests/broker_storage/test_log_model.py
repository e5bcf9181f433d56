"""A partition log against a list of batches: appends, truncation, roll, retention and reopening."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from broker.storage import LogConfig, PartitionLog
from protocol.record_batch import iter_batches
from tests.broker_storage.batches import value_batch

CONFIG = LogConfig(segment_bytes=1_500, index_interval_bytes=200, retention_ms=-1, retention_bytes=3_000)


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="kraftpy-log-model-"))
        self.path = self.tmp / "t-0"
        self.log = PartitionLog.open(self.path, config=CONFIG)
        self.batches: list[tuple[int, int, bytes]] = []  # base offset, last offset, first value
        self.leo = 0
        self.tag = 0

    def teardown(self) -> None:
        self.log.close_handles()
        shutil.rmtree(self.tmp)

    @rule(n=st.integers(1, 6), size=st.sampled_from([20, 150]), epoch=st.integers(0, 3))
    def append(self, n: int, size: int, epoch: int) -> None:
        self.tag += 1
        batch = value_batch(n, size=size, tag=self.tag)
        epoch = max(epoch, self.log.latest_epoch or 0)
        r = self.log.append_as_leader(batch, epoch)
        assert r.first_offset == self.leo
        self.batches.append((self.leo, self.leo + n - 1, f"{self.tag}:0:".encode()))
        self.leo += n

    @precondition(lambda self: self.batches)
    @rule(data=st.data())
    def truncate_at_a_batch(self, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from([b[0] for b in self.batches] + [self.leo]))
        self.log.truncate_to(target)
        self.batches = [b for b in self.batches if b[0] < target]
        self.leo = target

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule()
    def retention(self) -> None:
        self.log.delete_old_segments(high_watermark=self.leo)
        start = self.log.log_start_offset
        assert start <= self.leo
        assert start == self.leo or any(b[0] == start for b in self.batches), "log start at a batch boundary"
        self.batches = [b for b in self.batches if b[0] >= start]

    @rule(flushed=st.booleans())
    def reopen(self, flushed: bool) -> None:
        start = self.log.log_start_offset
        self.log.close()
        point = self.leo if flushed else 0
        self.log = PartitionLog.open(self.path, config=CONFIG, log_start_offset=start, recovery_point=point)
        assert self.log.recovery_report is None

    @rule(data=st.data())
    def crash_with_torn_tail(self, data: st.DataObject) -> None:
        start = self.log.log_start_offset
        self.log.close_handles()  # no flush: what a crash leaves, minus the page cache we keep
        seg = max(self.path.glob("*.log"))
        raw = seg.read_bytes()
        cut = data.draw(st.integers(0, len(raw)))
        seg.write_bytes(raw[:cut])
        kept_end, whole = 0, []
        for b in iter_batches(raw):
            if kept_end + b.size > cut:
                break
            kept_end += b.size
            whole.append(b.base_offset)
        base = int(seg.stem)
        self.batches = [b for b in self.batches if b[0] < base or b[0] in whole]
        self.leo = self.batches[-1][1] + 1 if self.batches and self.batches[-1][0] >= base else base
        self.log = PartitionLog.open(self.path, config=CONFIG, log_start_offset=start)
        assert (self.log.recovery_report is not None) == (cut != kept_end)

    @invariant()
    def log_matches_model(self) -> None:
        log = self.log
        assert log.log_end_offset == self.leo
        got = []
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            r = log.read(offset, 700)
            assert r.records, f"no progress at {offset}"
            got += [
                (b.base_offset, b.last_offset, b.records[0].value or b"") for b in iter_batches(r.records)
            ]
            offset = r.next_offset
        assert [(g[0], g[1]) for g in got] == [(b[0], b[1]) for b in self.batches]
        for (_, _, value), (_, _, prefix) in zip(got, self.batches, strict=True):
            assert value.startswith(prefix)


TestLogModel = LogMachine.TestCase
TestLogModel.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
