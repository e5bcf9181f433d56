"""Where one Python controller stops: the sans-IO controller core at 10,000 brokers and 2,000,000 partitions.

    .venv/bin/python bench/scale.py [--scale 1.0] [--brokers 10000] [--dirs 4] [--partitions 2000000]
                                    [--rf 3] [--heartbeats 200000] [--keep DIR]

No processes and no network: the core (controller/core) is driven the way the controller process
drives it, with the clock passed in. Every operation's records are encoded into batches as the log
sink encodes them, replayed into the core and appended to a real metadata log on disk (flushed
once at the end instead of once per operation). `--scale 0.05` shrinks brokers and partitions alike
for a quick look.

1. Build: brokers register (each with `--dirs` log dirs) and heartbeat until unfenced, CreateTopics
   makes the partitions (topics of 1,000, RF `--rf`), and each broker places its replicas across
   its dirs with AssignReplicasToDirs, as a JBOD broker does at startup.
2. Snapshot and restart: the committed image is built from the log and written as a snapshot, as
   the snapshot generator does; then a new core and image load it as a controller restart does
   (controller/startup.py), in a new process, which is the replay time shown. A process must get
   all its memory from the system, which on a virtual machine is a good part of a restart; the same
   replay in this process, on memory the build freed, is shown beside it.
3. Memory per partition: what the core holds once the snapshot is replayed into it alone, traced
   with tracemalloc (and, beside it, the committed image the process also keeps).
4. On the restarted controller: steady heartbeats from every broker (heartbeats/s the core sustains,
   records none), one log dir failing (the heartbeat reporting it, its PartitionChangeRecords encoded
   and replayed), and one whole broker failing (its session expires; fenced by the session check).
5. Where it stops: from those figures, linearly, the most partitions one controller holds within its
   restart goal, within this machine's memory, and with every broker heartbeating at Kafka's
   interval; the first to run out is named with the next step past it. Memory counts what the
   restart added, not the interpreter's own.

What it tells a user: whether one controller process holds a cluster this size in memory, how long
a restart or failover takes before it can serve, and whether a disk or a broker failing gets its
leaders moved in time. Figures beside their goals; the process's own RPC and fsync costs come on
top (see bench/controller.py for those).
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.core import ControllerConfig, QuorumControllerCore
from controller.core.metadata_version import LATEST_PRODUCTION
from controller.log_sink import MAX_RECORDS_PER_BATCH
from controller.raft_log import write_snapshot
from controller.startup import replay_committed, snapshot_end
from kraftpy.config import KafkaConfig
from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.metalog.log import MetadataLog
from kraftpy.metalog.snapshots import MAX_BATCH_BYTES
from protocol.framing import ApiMessageAndVersion
from protocol.record_batch import build_metadata_batch
from protocol.rpc.assign_replicas_to_dirs import AssignReplicasToDirsRequest as Assign
from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest
from protocol.rpc.broker_registration import BrokerRegistrationRequest as Register
from protocol.rpc.create_topics import CreateTopicsRequest as Create
from protocol.transport.offload import collector_paused
from protocol.uuid import Uuid

GOAL_REPLAY_S = 20.0
GOAL_DIR_FAILURE_MS = 100.0
GOAL_BROKER_FAILURE_MS = 1000.0
GOAL_BYTES_PER_PARTITION = 2048
SESSION_TIMEOUT_MS = 9000
PARTITIONS_PER_TOPIC = 1000
EPOCH = 1


def verdict(value: float, goal: float) -> str:
    return "within" if value <= goal else "OVER"


class Shell:
    """What the controller process does with an operation's result, minus the network: encode the
    records into batches (as the log sink does), replay them at their offsets, append them."""

    def __init__(self, core: QuorumControllerCore, mlog: MetadataLog) -> None:
        self.core = core
        self.log = mlog
        self.next_offset = mlog.log_end_offset
        self.now_ms = 1_000_000

    def encode(self, records: Sequence[ApiMessageAndVersion], base: int) -> list[bytes]:
        out = []
        for lo in range(0, len(records), MAX_RECORDS_PER_BATCH):
            data = build_metadata_batch(
                base + lo, EPOCH, self.now_ms, records[lo : lo + MAX_RECORDS_PER_BATCH]
            )
            if len(data) > MAX_BATCH_BYTES:
                raise RuntimeError(f"a batch of {len(data)} bytes: make the requests smaller")
            out.append(data)
        return out

    def apply(self, result: Any, *, write: bool = True) -> Any:
        records = result.records
        if records:
            base = self.next_offset
            batches = self.encode(records, base)
            self.core.replay_all(records, base)
            self.next_offset += len(records)
            if write:
                for data in batches:
                    self.log.append_raw_batches(data)
        if getattr(result.response, "ErrorCode", 0):
            raise RuntimeError(f"operation failed: {result.response}")
        return result.response


def tidy() -> None:
    """Collect what the last requests left and freeze what lives on: the build runs with the
    collector paused, as the controller runs each operation, without walking the whole state at
    every collection."""
    gc.collect()
    gc.freeze()


def dir_ids(broker_id: int, dirs: int) -> list[Uuid]:
    return sorted(Uuid.from_longs(0x4449520000000000 | broker_id, 1000 + d) for d in range(dirs))


def build(shell: Shell, brokers: int, dirs: int, partitions: int, rf: int) -> dict[int, int]:
    """The cluster, through the core's operations; returns each broker's epoch."""
    core = shell.core
    epochs: dict[int, int] = {}
    t0 = time.perf_counter()
    for b in range(1, brokers + 1):
        req = Register(
            BrokerId=b,
            ClusterId=core.config.cluster_id,
            IncarnationId=Uuid.from_longs(0x494E43, b),
            Listeners=[Register.Listener(Name="PLAINTEXT", Host=f"b{b}", Port=9092, SecurityProtocol=0)],
            Features=[
                Register.Feature(Name="metadata.version", MinSupportedVersion=1, MaxSupportedVersion=22)
            ],
            Rack=f"rack{b % 3}",
            LogDirs=dir_ids(b, dirs),
        )
        epochs[b] = shell.apply(core.register_broker(req, 4, shell.now_ms, shell.next_offset)).BrokerEpoch
    for b, epoch in epochs.items():
        hb = BrokerHeartbeatRequest(BrokerId=b, BrokerEpoch=epoch, CurrentMetadataOffset=shell.next_offset)
        resp = shell.apply(core.process_broker_heartbeat(hb, 1, shell.now_ms, shell.next_offset))
        assert not resp.IsFenced, f"broker {b} still fenced"
    print(f"  {brokers:,} brokers registered and unfenced in {time.perf_counter() - t0:.1f}s")

    t0 = time.perf_counter()
    n_topics = -(-partitions // PARTITIONS_PER_TOPIC)
    per_request = max(1, 5000 // (PARTITIONS_PER_TOPIC * rf) or 1)
    for lo in range(0, n_topics, per_request):
        topics = [
            Create.CreatableTopic(
                Name=f"t{i}",
                NumPartitions=min(PARTITIONS_PER_TOPIC, partitions - i * PARTITIONS_PER_TOPIC),
                ReplicationFactor=rf,
                Assignments=[],
                Configs=[],
            )
            for i in range(lo, min(n_topics, lo + per_request))
        ]
        shell.apply(core.create_topics(Create(Topics=topics, TimeoutMs=60000), 7))
        tidy()
    print(f"  {partitions:,} partitions (RF {rf}) created in {time.perf_counter() - t0:.1f}s")

    # Each broker places its replicas round-robin over its dirs, as a JBOD broker's startup does.
    t0 = time.perf_counter()
    replication = core.m.replication
    unassigned = core.m.replication.replica_directories
    for b, epoch in epochs.items():
        by_dir: list[dict[Uuid, list[int]]] = [{} for _ in range(dirs)]
        i = 0
        for d in list(unassigned(b)):
            for topic_id, pid in replication.partitions_on(b, d):
                by_dir[i % dirs].setdefault(topic_id, []).append(pid)
                i += 1
        # Validated in one call, as the transport validates a request body.
        req = Assign.model_validate(
            {
                "BrokerId": b,
                "BrokerEpoch": epoch,
                "Directories": [
                    {
                        "Id": d,
                        "Topics": [
                            {"TopicId": t, "Partitions": [{"PartitionIndex": p} for p in pids]}
                            for t, pids in placed.items()
                        ],
                    }
                    for d, placed in zip(dir_ids(b, dirs), by_dir, strict=True)
                ],
            }
        )
        shell.apply(core.assign_replicas_to_dirs(req, 0))
        if b % 100 == 0:
            tidy()
    print(f"  {partitions * rf:,} replicas placed in dirs in {time.perf_counter() - t0:.1f}s")
    return epochs


def traced_memory(mlog: MetadataLog, config: ControllerConfig) -> tuple[int, int]:
    """Bytes the core, then a committed image, hold once the snapshot is replayed into each
    (tracemalloc: exact, but it slows allocation, so this is a replay of its own)."""
    out = []
    for what in ("core", "image"):
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        if what == "core":
            held: Any = QuorumControllerCore(config)
            replay_committed(mlog, held, None, snapshot_end(mlog))
        else:
            held = MetadataDelta(MetadataImage.EMPTY)
            with collector_paused():
                mlog.replay_into(held)
            held = held.apply()
        gc.collect()
        out.append(tracemalloc.get_traced_memory()[0] - base)
        tracemalloc.stop()
        del held
    return out[0], out[1]


def heartbeat_rate(shell: Shell, epochs: dict[int, int], total: int, skip: int | None = None) -> float:
    """Heartbeats per second through the core, round-robin over `epochs` (none changes state)."""
    core = shell.core
    reqs = [
        BrokerHeartbeatRequest(BrokerId=b, BrokerEpoch=e, CurrentMetadataOffset=shell.next_offset)
        for b, e in epochs.items()
        if b != skip
    ]
    done = 0
    t0 = time.perf_counter()
    while done < total:
        for req in reqs[: total - done]:
            result = core.process_broker_heartbeat(req, 1, shell.now_ms, shell.next_offset)
            if result.records or result.response.IsFenced:
                raise RuntimeError(f"heartbeat of broker {req.BrokerId} changed state: {result.response}")
        done += min(len(reqs), total - done)
    return done / (time.perf_counter() - t0)


def restart(
    meta: Path, config: ControllerConfig
) -> tuple[MetadataLog, QuorumControllerCore, MetadataDelta, int, float]:
    """What a controller does on restart (controller/startup.py): open the log and replay its latest
    snapshot into a new core and the committed image beside it. Returns those, the records
    replayed and the seconds it took."""
    t0 = time.perf_counter()
    mlog = MetadataLog.open(meta)
    core = QuorumControllerCore(config)
    delta = MetadataDelta(MetadataImage.EMPTY)
    replayed = replay_committed(mlog, core, delta, snapshot_end(mlog))
    return mlog, core, delta, replayed, time.perf_counter() - t0


def controller_config(partitions: int) -> ControllerConfig:
    return ControllerConfig(
        node_id=3000,
        cluster_id="kraftpy-scale-bench",
        broker_session_timeout_ms=SESSION_TIMEOUT_MS,
        max_partitions=partitions,
        random_seed=1,
    )


def own_peak_rss() -> int:
    """This process's peak resident bytes since it started its program. Not getrusage's
    ru_maxrss: Linux carries that over from the process that forked this one (the bench, holding
    gigabytes by then)."""
    found = _own_status_bytes("VmHWM:")
    return found if found is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def own_rss() -> int:
    """This process's resident bytes now."""
    return _own_status_bytes("VmRSS:") or 0


def _own_status_bytes(field: str) -> int | None:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) * 1024
    return None


def usable_memory() -> int:
    """The machine's memory, or its cgroup's limit where that is lower."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
    except OSError:
        return memory
    return min(memory, int(limit)) if limit.isdigit() else memory


def restart_in_a_new_process(meta: Path, partitions: int) -> tuple[int, float, int, int]:
    """restart() in a process of its own, which must take all its memory from the system as a
    restarted controller does: (records, seconds, peak resident bytes, resident bytes before the
    replay: the interpreter and its imports)."""
    out = subprocess.run(
        [sys.executable, __file__, "--restart-only", str(meta), "--partitions", str(partitions)],
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.search(r"^restarted (\d+) ([0-9.]+) (\d+) (\d+)$", out.stdout, re.MULTILINE)
    if out.returncode != 0 or found is None:
        raise RuntimeError(
            f"the restart process failed ({out.returncode}): {out.stdout[-2000:]} {out.stderr[-2000:]}"
        )
    return int(found[1]), float(found[2]), int(found[3]), int(found[4])


class Limit(NamedTuple):
    """How large a cluster one controller holds before one of its resources runs out."""

    resource: str
    partitions: int
    """The most partitions (at this run's partitions per broker) within the bound."""
    reason: str
    next_step: str


HEARTBEAT_INTERVAL_MS: int = KafkaConfig.model_fields["broker_heartbeat_interval_ms"].default


def where_it_stops(
    partitions: int,
    brokers: int,
    restart_s: float,
    state_bytes: int,
    heartbeats_per_s: float,
    memory_bytes: int,
) -> list[Limit]:
    """Each limit, the binding one first, extrapolated linearly from one run: a restart and its
    memory grow with the partitions, heartbeats with the brokers (the run's partitions per broker
    kept). `state_bytes`: what the restart added to resident memory at its peak."""
    per_broker = partitions / brokers
    # A tiny run may time its restart as 0.000 s, or add no page of memory.
    restart_per = max(restart_s, 1e-3) / partitions
    bytes_per = max(state_bytes, 1) / partitions
    brokers_served = heartbeats_per_s * HEARTBEAT_INTERVAL_MS / 1000
    limits = [
        Limit(
            "restart",
            int(GOAL_REPLAY_S / restart_per),
            f"a restart within {GOAL_REPLAY_S:.0f} s at {restart_per * 1e6:.1f} us per partition",
            "a restart is not a failover: in a three-voter quorum the standbys replay every record as it commits, "
            "so the leadership moves to a voter already holding the state (bench/controller_failover.py), and a "
            "restart only keeps one voter out of the quorum for longer. The replay builds Python objects one "
            "partition at a time on one core; past this size it needs a compiled decoder and replica index.",
        ),
        Limit(
            "memory",
            int(memory_bytes / bytes_per),
            f"at most: {memory_bytes / 2**30:.0f} GiB, the machine's or its cgroup's, at the {bytes_per:,.0f} "
            "bytes per partition the restart added at its peak; writing a snapshot holds its records on top",
            "a machine with more memory, or fewer objects per partition in the core and the image it keeps.",
        ),
        Limit(
            "heartbeats",
            int(brokers_served * per_broker),
            f"at most: {brokers_served:,.0f} brokers heartbeating every {HEARTBEAT_INTERVAL_MS} ms at "
            f"{per_broker:,.0f} partitions per broker, counting the core alone on one core (the RPC "
            "layer's own cost: bench/controller.py)",
            "a longer broker.heartbeat.interval.ms, then a cheaper RPC layer (it costs more than the core).",
        ),
    ]
    return sorted(limits, key=lambda limit: limit.partitions)


def print_where_it_stops(limits: list[Limit]) -> None:
    print("where one controller stops (linear from this run):")
    for limit in limits:
        print(f"  {limit.resource}: {limit.partitions:,} partitions ({limit.reason})")
    first = limits[0]
    next_step = f"first to run out: {first.resource}. Next step: {first.next_step}"
    print(textwrap.fill(next_step, width=110, initial_indent="  ", subsequent_indent="    "))


def timed_apply(shell: Shell, op: Any) -> tuple[Any, int, float, float]:
    """(response, records, seconds in the operation, seconds encoding and replaying its records)."""
    t0 = time.perf_counter()
    result = op()
    t1 = time.perf_counter()
    shell.apply(result, write=False)
    return result.response, len(result.records), t1 - t0, time.perf_counter() - t1


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=float, default=1.0, help="multiply brokers and partitions by this")
    p.add_argument("--brokers", type=int, default=10_000)
    p.add_argument("--dirs", type=int, default=4, help="log dirs per broker")
    p.add_argument("--partitions", type=int, default=2_000_000)
    p.add_argument("--rf", type=int, default=3, help="replication factor")
    p.add_argument("--heartbeats", type=int, default=200_000, help="heartbeats for the rate")
    p.add_argument("--no-memory", action="store_true", help="skip the (slow) tracemalloc replays")
    p.add_argument("--keep", metavar="DIR", help="write the metadata log in DIR and keep it")
    p.add_argument("--restart-only", metavar="META", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.restart_only:
        before = own_rss()
        mlog, _, _, replayed, seconds = restart(Path(args.restart_only), controller_config(args.partitions))
        mlog.close()
        print(f"restarted {replayed} {seconds:.3f} {own_peak_rss()} {before}")
        return
    brokers = max(args.rf, round(args.brokers * args.scale))
    partitions = max(1, round(args.partitions * args.scale))

    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kraftpy-bench-scale-"))
    config = controller_config(partitions)
    print(
        f"scale {args.scale}: {brokers:,} brokers x {args.dirs} dirs, {partitions:,} partitions, RF {args.rf}"
    )
    try:
        # ---- 1. build -------------------------------------------------------------------------------
        mlog = MetadataLog.open(workdir / "meta")
        core = QuorumControllerCore(config)
        shell = Shell(core, mlog)
        shell.apply(core.bootstrap_records([], LATEST_PRODUCTION))
        t0 = time.perf_counter()
        with collector_paused():
            epochs = build(shell, brokers, args.dirs, partitions, args.rf)
        build_s = time.perf_counter() - t0
        mlog.flush()
        print(
            f"build: {shell.next_offset:,} records in {build_s:.1f}s; log {mlog.size_in_bytes / 1e6:,.0f} MB"
        )
        end_offset = shell.next_offset
        del core, shell
        gc.collect()

        # ---- 2. snapshot, restart --------------------------------------------------------------------
        t0 = time.perf_counter()
        with collector_paused():
            image = mlog.load_image()
            records = image.write()
        sid = write_snapshot(mlog, records, end_offset, image.provenance.last_contained_log_time_ms)
        snapshot_records = len(records)
        del image, records
        gc.collect()
        print(
            f"snapshot: {snapshot_records:,} records, {mlog.snapshot_size(sid) / 1e6:,.0f} MB, "
            f"written in {time.perf_counter() - t0:.1f}s (image built from the log, then written)"
        )
        mlog.close()

        replayed, replay_s, child_peak, child_base = restart_in_a_new_process(workdir / "meta", partitions)
        print(
            f"restart (a new process, as a controller restarts): {replayed:,} snapshot records replayed into "
            f"the core and the committed image in {replay_s:.1f}s (goal <= {GOAL_REPLAY_S:.0f} s: "
            f"{verdict(replay_s, GOAL_REPLAY_S)}); peak resident memory {child_peak / 1e9:.1f} GB"
        )
        # The rest runs on a restart in this process: memory the build freed is reused here, so
        # this replay may be quicker than a real restart and is only shown beside it.
        mlog, core, delta, again, again_s = restart(workdir / "meta", config)
        print(f"  the same replay in this process: {again:,} records in {again_s:.1f}s")
        del delta
        gc.collect()

        # ---- 3. memory -------------------------------------------------------------------------------
        if not args.no_memory:
            core_bytes, image_bytes = traced_memory(mlog, config)
            per_partition = core_bytes / partitions
            print(
                f"memory: the core holds {core_bytes / 1e6:,.0f} MB, {per_partition:,.0f} bytes per partition "
                f"(goal <= {GOAL_BYTES_PER_PARTITION:,}: {verdict(per_partition, GOAL_BYTES_PER_PARTITION)}); "
                f"the committed image the process keeps beside it {image_bytes / partitions:,.0f} more"
            )

        # ---- 4. heartbeats and failures on the restarted controller -------------------------------
        shell = Shell(core, mlog)
        shell.now_ms += 10_000
        core.activate(shell.now_ms)
        rate = heartbeat_rate(shell, epochs, min(args.heartbeats, max(len(epochs), args.heartbeats)))
        print(
            f"heartbeats: the core sustains {rate:,.0f} heartbeats/s "
            f"({1e6 / rate:.1f} us each; the RPC layer comes on top)"
        )
        t0 = time.perf_counter()
        core.next_session_expiry_ms()
        core.maybe_fence_one_stale_broker(shell.now_ms)
        check_ms = (time.perf_counter() - t0) * 1000
        print(f"session check (next expiry + stale broker): {check_ms:.2f} ms per run, at most 4 runs/s")

        victim_dir_broker = 1
        lost = dir_ids(victim_dir_broker, args.dirs)[0]
        on_dir = len(core.m.replication.partitions_on(victim_dir_broker, lost))
        led = sum(
            1
            for tp in core.m.replication.partitions_on(victim_dir_broker, lost)
            if core.m.replication.partition(tp).leader == victim_dir_broker
        )
        hb = BrokerHeartbeatRequest(
            BrokerId=victim_dir_broker,
            BrokerEpoch=epochs[victim_dir_broker],
            CurrentMetadataOffset=shell.next_offset,
            OfflineLogDirs=[lost],
        )
        _, n, op_s, apply_s = timed_apply(
            shell, lambda: core.process_broker_heartbeat(hb, 1, shell.now_ms, shell.next_offset)
        )
        dir_ms = (op_s + apply_s) * 1000
        print(
            f"one dir failure: {on_dir:,} replicas in the dir ({led:,} leaders), {n:,} records: "
            f"{dir_ms:.1f} ms (operation {op_s * 1000:.1f} + encode and replay {apply_s * 1000:.1f}) "
            f"(goal <= {GOAL_DIR_FAILURE_MS:.0f} ms: {verdict(dir_ms, GOAL_DIR_FAILURE_MS)})"
        )

        # Every broker but one keeps heartbeating; the session check then fences the silent one.
        victim = 2
        shell.now_ms += SESSION_TIMEOUT_MS // 2
        heartbeat_rate(shell, epochs, len(epochs) - 1, victim)
        shell.now_ms += SESSION_TIMEOUT_MS // 2 + 1
        isr_member = len(core.m.replication.partitions_with_isr_member(victim))
        fenced, n, op_s, apply_s = timed_apply(shell, lambda: core.maybe_fence_one_stale_broker(shell.now_ms))
        assert fenced == victim, f"expected broker {victim} fenced, got {fenced}"
        broker_ms = (op_s + apply_s) * 1000
        print(
            f"one broker failure: broker {victim} in {isr_member:,} ISRs fenced, {n:,} records: "
            f"{broker_ms:.1f} ms (operation {op_s * 1000:.1f} + encode and replay {apply_s * 1000:.1f}) "
            f"(goal <= {GOAL_BROKER_FAILURE_MS:.0f} ms: {verdict(broker_ms, GOAL_BROKER_FAILURE_MS)})"
        )
        mlog.close()
        print(f"peak resident memory of this run: {own_peak_rss() / 1e9:.1f} GB")
        print_where_it_stops(
            where_it_stops(partitions, brokers, replay_s, child_peak - child_base, rate, usable_memory())
        )
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
