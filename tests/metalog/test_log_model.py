"""MetadataLog against a list of batches: appends, rolls, flushes, reopenings, truncations, snapshots."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kraftpy.metalog import MetadataLog, MetadataLogConfig
from protocol.record_batch import iter_batches
from tests.metalog.helpers import mv, noops

CONFIG = MetadataLogConfig(segment_bytes=400, retention_bytes=-1, retention_ms=-1)


class LogModel(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="metalog-model-"))
        self.log = MetadataLog.open(self.tmp, CONFIG)
        self.log.append([mv()], 0, 0)
        self.batches: list[tuple[int, int, int]] = [(0, 1, 0)]  # base offset, records, epoch
        self.epoch = 0
        self.start_offset = 0

    def end(self) -> int:
        base, n, _ = self.batches[-1] if self.batches else (self.start_offset, 0, 0)
        return base + n

    @rule(n=st.integers(1, 6), new_epoch=st.booleans())
    def append(self, n: int, new_epoch: bool) -> None:
        if new_epoch:
            self.epoch += 1
        base, last = self.log.append(noops(n), self.epoch, 1000 + self.end())
        assert (base, last) == (self.end(), self.end() + n - 1)
        self.batches.append((base, n, self.epoch))

    @rule()
    def flush(self) -> None:
        assert self.log.flush() == self.end()

    @rule()
    def reopen(self) -> None:
        self.log.close()
        self.log = MetadataLog.open(self.tmp, CONFIG)
        assert self.log.recovery.clean

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        latest = self.log.latest_snapshot()
        lowest = max(self.log.log_start_offset, latest.offset if latest else 0)
        target = data.draw(st.integers(lowest, self.end()))
        self.log.truncate_to(target)
        # a batch holding `target` goes whole
        self.batches = [b for b in self.batches if b[0] + b[1] <= target]
        if self.batches:
            self.epoch = max(self.epoch, self.batches[-1][2])

    @precondition(lambda self: self.batches and self.end() > self.log.log_start_offset)
    @rule()
    def snapshot_and_clean(self) -> None:
        image = self.log.load_image()
        epoch = self.batches[-1][2]
        sid = self.log.write_snapshot(image.write(), self.end(), epoch, 0)
        self.log.delete_before_snapshot(sid)
        self.start_offset = self.log.log_start_offset
        assert self.start_offset == sid.offset

    @rule(data=st.data())
    def read(self, data: st.DataObject) -> None:
        if self.end() == self.log.log_start_offset:
            return
        offset = data.draw(st.integers(self.log.log_start_offset, self.end() - 1))
        got = list(iter_batches(self.log.read(offset, data.draw(st.integers(1, 3000)))))
        assert got
        assert got[0].base_offset <= offset <= got[0].last_offset
        expected = [b for b in self.batches if b[0] + b[1] > offset][: len(got)]
        assert [(b.base_offset, len(b.records), b.partition_leader_epoch) for b in got] == expected

    @invariant()
    def offsets_agree(self) -> None:
        if hasattr(self, "log"):
            assert self.log.log_end_offset == self.end()
            if self.batches and self.end() > self.log.log_start_offset:
                assert self.log.end_offset_for_epoch(self.batches[-1][2]).offset == self.end()

    def teardown(self) -> None:
        if hasattr(self, "log"):
            self.log.close()
            shutil.rmtree(self.tmp, ignore_errors=True)


TestLogModel = LogModel.TestCase
TestLogModel.settings = settings(max_examples=30, stateful_step_count=30, deadline=None)
