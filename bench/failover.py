"""Failover of a leader's log dir, step by step: 3 brokers x 3 real-filesystem dirs, a 30-partition RF=3
topic under continuous acks=all production, Kafka's default 2000 ms broker heartbeat (KRaft) or
ZooKeeper session (ZooKeeper mode).

    .venv/bin/python bench/failover.py [--mode kraft|zk|both] [--trials 20] [--rate 1000] [--work-dir DIR] [--fs ext4]
                                       [--broker-config KEY=VALUE]... [--controller-config KEY=VALUE]...

The settings are Kafka's defaults unless `--broker-config` / `--controller-config` change one, to see
what it buys (printed with the cluster line): for instance the active controller gathers its appends
for `controller.quorum.append.linger.ms` (25 ms) before they go to the quorum, and that wait is part of
every report and propagation below.

Each trial fails (filesystem shutdown: EIO) the dir that holds the most partition leaders, measures,
then stops that broker, heals the disk, starts it again and waits until every replica is back in
sync. Per trial, from the moment of the fault:
- detection:   the broker marks the dir offline (its "log dir failed" log line);
- report:      KRaft: the controller writes the change (timestamp of the batch holding the
               BrokerRegistrationChangeRecord without that dir; its PartitionChangeRecords are in it),
               before it lingers and goes to the quorum;
               ZooKeeper mode: the controller has the broker's KAFKA_STORAGE_ERROR answers (its
               "replicas on offline log dirs" log line);
- committed:   KRaft only: the broker's heartbeat reporting the dir is answered, which the controller
               does once that batch is committed to the quorum (the broker's log line);
- propagation: every live broker's metadata holds the new leaders (KRaft: each broker's /healthz
               metadata_offset reaches the last of those PartitionChangeRecords; ZooKeeper mode: each
               broker's Metadata answer shows them; both polled every few ms);
- stall:       the producer's longest gap, over the partitions that lost their leader, between the last
               acknowledgement before the fault and the first one after it; the worst one is split
               into steps from the producer's trace of its failed attempts and retries
               ($KRAFTPY_PRODUCE_TRACE): the last ack -> the fault -> the first error answer -> the
               resend that succeeded -> its acknowledgement.
Prints p50 and p99 of each (with 20 trials p99 is the worst trial); `--mode both` runs ZooKeeper mode
after KRaft mode on the same kind of disks with the same settings and prints them side by side.
Needs root and loop devices (and Debian's zookeeper package for ZooKeeper mode).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.cluster.cluster import LocalCluster
from tools.cluster.probe import METADATA_SCHEME, fetch
from tools.cluster.spec import ClusterSpec
from tools.cluster.timeline import acknowledged_ms, detection_ms, failover_timeline
from tools.cluster.view import ClusterView
from tools.cluster.workload import read_acks

TOPIC = "bench-failover"
FAULT_TIMES: list[int] = []


def _time_the_ioctl() -> None:
    """Record the moment the shutdown ioctl is called (the disk "dies" during that call, which takes a
    few ms), rather than the start of `fail_dir`, which also reads and writes the disk tool's state."""
    from tools.disk import faults

    original = faults.shutdown_filesystem

    def timed(*args: object, **kwargs: object) -> None:
        FAULT_TIMES.append(int(time.time() * 1000))
        original(*args, **kwargs)  # type: ignore[arg-type]

    faults.shutdown_filesystem = timed  # type: ignore[assignment]


PARTITIONS = 30
METRICS = ("detection", "report", "committed", "propagation", "stall")


class OffsetPoller:
    """Samples each broker's /healthz metadata_offset every few ms from a thread per broker."""

    def __init__(self, urls: dict[int, str], interval_s: float = 0.003) -> None:
        self.urls = urls
        self.interval = interval_s
        self.samples: dict[int, list[tuple[int, int]]] = {b: [] for b in urls}
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(b,), daemon=True) for b in urls]

    def _run(self, broker: int) -> None:
        url = f"{self.urls[broker]}/healthz"
        while not self._stop.is_set():
            r = fetch(url, timeout=0.5)
            body = r.get("body")
            if isinstance(body, dict) and isinstance(body.get("metadata_offset"), int):
                self.samples[broker].append((int(time.time() * 1000), body["metadata_offset"]))
            time.sleep(self.interval)

    def __enter__(self) -> OffsetPoller:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(2)

    def reached(self, broker: int, offset: int) -> int | None:
        for t, o in self.samples[broker]:
            if o >= offset:
                return t
        return None


class LeaderPoller:
    """ZooKeeper mode: samples each broker's Metadata answer every few ms from a thread per broker and
    records when it first shows none of `partitions` led by `victim`."""

    def __init__(
        self, urls: dict[int, str], victim: int, partitions: set[int], interval_s: float = 0.005
    ) -> None:
        self.urls = urls
        self.victim = victim
        self.partitions = partitions
        self.interval = interval_s
        self.moved: dict[int, int] = {}
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(b,), daemon=True) for b in urls]

    def _run(self, broker: int) -> None:
        url = METADATA_SCHEME + self.urls[broker]
        while not self._stop.is_set() and broker not in self.moved:
            body = fetch(url, timeout=0.5).get("body")
            if isinstance(body, dict):
                leaders = {
                    p["PartitionIndex"]: p["LeaderId"]
                    for t in body.get("Topics") or []
                    if t.get("Name") == TOPIC
                    for p in t.get("Partitions") or []
                }
                if leaders and all(leaders.get(p, -1) not in (-1, self.victim) for p in self.partitions):
                    self.moved[broker] = int(time.time() * 1000)
            time.sleep(self.interval)

    def __enter__(self) -> LeaderPoller:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(2)


def zk_report_ms(cluster: LocalCluster, victim: int, fault_ms: int) -> int | None:
    """When the ZooKeeper-mode controller learnt which of `victim`'s replicas are offline."""
    from tools.cluster.timeline import log_events

    times = []
    for b in cluster.brokers:
        for e in log_events(b.log, "replicas on offline log dirs"):
            if e.get("broker") == victim and e["ts_ms"] >= fault_ms:
                times.append(e["ts_ms"])
    return min(times) if times else None


def pick_victim(view: ClusterView) -> tuple[int, int, str]:
    """The (broker, dir index, label) holding the most partition leaders."""
    counts: dict[str, int] = {}
    for p in view.topic(TOPIC):
        if p.leader >= 0:
            label = p.directories[p.replicas.index(p.leader)]
            counts[label] = counts.get(label, 0) + 1
    label = max(sorted(counts), key=lambda k: counts[k])
    broker, index = label[1:].split("/d")
    return int(broker), int(index), label


def producer_stall(ack_file: Path, partitions: set[int], fault_ms: int) -> int | None:
    acks = read_acks(ack_file)
    before: dict[int, int] = {}
    after: dict[int, int] = {}
    for p, _off, t in acks.acked.values():
        if p not in partitions:
            continue
        if t <= fault_ms:
            before[p] = max(before.get(p, 0), t)
        else:
            after[p] = min(after.get(p, 1 << 62), t)
    gaps = [after[p] - before[p] for p in partitions if p in before and p in after]
    return max(gaps) if gaps else None


@dataclass
class Attempt:
    sent_ms: int
    answered_ms: int
    partition: int
    attempt: int
    url: str
    error: str
    hint: str


def read_trace(path: Path, topic: str) -> list[Attempt]:
    """The producer's failed attempts and retries ($KRAFTPY_PRODUCE_TRACE, tools.client.producer)."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        f = line.split()
        if len(f) == 8 and f[2] == topic:
            out.append(Attempt(int(f[0]), int(f[1]), int(f[3]), int(f[4]), f[5], f[6], f[7]))
    return out


STEPS = ("before", "error", "retry", "ack")
STEP_LABELS = {
    "before": "last ack before the fault -> the fault",
    "error": "fault -> the producer's first error answer",
    "retry": "first error answer -> the resend that succeeded",
    "ack": "that resend -> its acknowledgement",
}


def stall_steps(
    ack_file: Path, trace: list[Attempt], partitions: set[int], fault_ms: int
) -> tuple[dict[str, int], str] | None:
    """The worst stalled partition's stall split into STEPS, and a line saying what the producer did."""
    acks = read_acks(ack_file)
    before: dict[int, int] = {}
    for p, _off, t in acks.acked.values():
        if p in partitions and t <= fault_ms:
            before[p] = max(before.get(p, 0), t)
    worst: tuple[int, dict[str, int], str] | None = None
    for p in partitions:
        tries = sorted(
            (a for a in trace if a.partition == p and a.answered_ms > fault_ms), key=lambda a: a.sent_ms
        )
        errors = [a for a in tries if a.error not in ("NONE", "DUPLICATE_SEQUENCE_NUMBER")]
        done = [a for a in tries if a.error in ("NONE", "DUPLICATE_SEQUENCE_NUMBER")]
        if p not in before or not errors or not done:
            continue
        ok = done[0]
        first = errors[0]
        steps = {
            "before": fault_ms - before[p],
            "error": first.answered_ms - fault_ms,
            "retry": ok.sent_ms - first.answered_ms,
            "ack": ok.answered_ms - ok.sent_ms,
        }
        said = ", ".join(
            f"{a.error}{' hint ' + a.hint if a.hint != '-' else ''}" for a in errors if a.sent_ms < ok.sent_ms
        )
        what = f"partition {p}: {said}; then {ok.url.split('//')[-1]}"
        total = ok.answered_ms - before[p]
        if worst is None or total > worst[0]:
            worst = (total, steps, what)
    return None if worst is None else (worst[1], worst[2])


def in_sync(view: ClusterView) -> bool:
    parts = view.topic(TOPIC)
    return bool(parts) and all(
        p.leader >= 0 and len(p.isr) == len(p.replicas) and not p.offline for p in parts
    )


def zk_trial(cluster: LocalCluster, ack_file: Path, n: int) -> dict[str, int | None]:
    view = cluster.wait_until(in_sync, 120, "every replica in sync before the trial")
    victim, index, label = pick_victim(view)
    lost = {p.partition for p in view.topic(TOPIC) if p.leader == victim and label in p.directories}
    affected = [p for p in view.topic(TOPIC) if label in p.directories]
    urls = {b.node_id: b.url for b in cluster.brokers}
    dplan = cluster.dir_plan(victim, index)
    with LeaderPoller(urls, victim, lost) as poller:
        time.sleep(0.3)
        FAULT_TIMES.clear()
        cluster.fail_dir(victim, index)
        fault_ms = FAULT_TIMES[-1]
        deadline = time.monotonic() + 60
        while len(poller.moved) < len(urls) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.5)  # let the producer's retries land
    detected = detection_ms(cluster.broker(victim).log, dplan.path, fault_ms)
    report = zk_report_ms(cluster, victim, fault_ms)
    result = {
        "detection": detected - fault_ms if detected is not None else None,
        "report": report - fault_ms if report is not None else None,
        "committed": None,  # no quorum: the controller writes to ZooKeeper
        "propagation": max(poller.moved.values()) - fault_ms if len(poller.moved) == len(urls) else None,
        "stall": producer_stall(ack_file, lost, fault_ms),
    }
    _print_trial(n, victim, label, len(lost), len(affected), result, ack_file, lost, fault_ms)
    cluster.stop_broker(victim, timeout=20)
    cluster.heal_dir(victim, index, timeout=30)
    cluster.start_broker(victim)
    return result


def trial(cluster: LocalCluster, ack_file: Path, n: int) -> dict[str, int | None]:
    view = cluster.wait_until(in_sync, 120, "every replica in sync before the trial")
    victim, index, label = pick_victim(view)
    affected = [(p.topic, p.partition) for p in view.topic(TOPIC) if label in p.directories]
    leaders = {(p.topic, p.partition): p.leader for p in view.topic(TOPIC)}
    lost = {p.partition for p in view.topic(TOPIC) if p.leader == victim and label in p.directories}
    image = cluster.image()
    topic_ids = {t.name: str(t.id) for t in image.topics.topics_by_name.values()}
    urls = {b.node_id: b.url for b in cluster.brokers}
    dplan = cluster.dir_plan(victim, index)
    dir_id = cluster.state.directory_ids[dplan.path]

    with OffsetPoller(urls) as poller:
        time.sleep(0.3)
        FAULT_TIMES.clear()
        cluster.fail_dir(victim, index)
        fault_ms = FAULT_TIMES[-1]
        cluster.wait_until(
            lambda v: all(p.leader not in (-1, victim) or label not in p.directories for p in v.topic(TOPIC)),
            60,
            "leaders off the failed dir",
            interval=0.05,
        )
        tl = failover_timeline(
            cluster.active_controller().metadata_dir,
            fault_ms=fault_ms,
            broker_id=victim,
            directory_id=dir_id,
            affected=affected,
            leaders=leaders,
            topic_ids=topic_ids,
            from_offset=max(0, image.offset - 5),
        )
        target = tl.last_change_offset
        deadline = time.monotonic() + 10
        while target is not None and time.monotonic() < deadline:
            if all(poller.reached(b, target) is not None for b in urls):
                break
            time.sleep(0.05)
        time.sleep(1.5)  # let the producer's retries land
    tl.detected_ms = detection_ms(cluster.broker(victim).log, dplan.path, fault_ms)
    reached = [poller.reached(b, target) for b in urls] if target is not None else []
    propagation = max(reached) - fault_ms if reached and all(r is not None for r in reached) else None  # type: ignore[operator]
    where = ", ".join(
        f"broker {b} {r - fault_ms} ms" for b, r in zip(urls, reached, strict=False) if r is not None
    )
    result = {
        "detection": tl.ms_after_fault(tl.detected_ms),
        "report": tl.ms_after_fault(tl.reported_ms),
        "committed": tl.ms_after_fault(acknowledged_ms(cluster.broker(victim).log, fault_ms)),
        "propagation": propagation,
        "stall": producer_stall(ack_file, lost, fault_ms),
    }
    _print_trial(n, victim, label, len(lost), len(affected), result, ack_file, lost, fault_ms)
    print(f"          new leaders in each broker's metadata: {where}", flush=True)
    cluster.stop_broker(victim, timeout=20)
    cluster.heal_dir(victim, index, timeout=30)
    cluster.start_broker(victim)
    return result


def _print_trial(
    n: int,
    victim: int,
    label: str,
    lost: int,
    affected: int,
    result: dict[str, int | None],
    ack_file: Path,
    partitions: set[int],
    fault_ms: int,
) -> None:
    print(
        f"trial {n:2d}: broker {victim} dir {label} ({lost} leaders, {affected} replicas): "
        + ", ".join(f"{k} {v if v is not None else '-'} ms" for k, v in result.items()),
        flush=True,
    )
    split = stall_steps(ack_file, read_trace(ack_file.with_name(TRACE_NAME), TOPIC), partitions, fault_ms)
    if split is not None:
        steps, what = split
        result.update(steps)
        print("          worst stall: " + ", ".join(f"{k} {v} ms" for k, v in steps.items()) + f" ({what})")


TRACE_NAME = "produce-trace.txt"


def percentile(values: list[int], q: float) -> float:
    s = sorted(values)
    if len(s) == 1:
        return float(s[0])
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


LABELS = {
    "detection": "detection (broker marks dir offline)",
    "report": "report (controller knows the offline replicas)",
    "committed": "committed (the broker's heartbeat answered)",
    "propagation": "propagation (every live broker has new leaders)",
    "stall": "producer stall (last ack before -> first after)",
}
GOALS_P99_MS = {"propagation": 150, "stall": 200}
"""KRaft mode's goals at p99: every broker on the new leaders, and the acks=all producer's stall."""


def run_mode(mode: str, args: argparse.Namespace, work: Path) -> list[dict[str, int | None]]:
    zk = mode == "zk"
    # Kafka's timing: KRaft heartbeat 2000 ms, session 9000 ms; ZooKeeper session 18000 ms; probes 1000 ms.
    spec = ClusterSpec(
        brokers=3,
        dirs=3,
        real_disks=True,
        fs=(args.fs,),
        broker_config={"min.insync.replicas": "2", **args.broker_config},
        controller_config={} if zk else args.controller_config,
        zookeeper=zk,
    )
    what = (
        "ZooKeeper mode, zookeeper.session.timeout.ms=18000"
        if zk
        else "KRaft, broker.heartbeat.interval.ms=2000"
    )
    changed = {**args.broker_config, **({} if zk else args.controller_config)}
    if changed:
        what += ", " + ", ".join(f"{k}={v}" for k, v in changed.items())
    print(f"[{mode}] cluster in {work}: 3 brokers x 3 {args.fs} loop-device dirs, {what}", flush=True)
    cluster = LocalCluster.up(work / "cluster", spec, timeout=180)
    results: list[dict[str, int | None]] = []
    producer = None
    try:
        cluster.create_topic(TOPIC, PARTITIONS, 3, timeout=60)
        from tools.client.producer import TRACE_ENV

        os.environ[TRACE_ENV] = str(work / TRACE_NAME)  # the producer process's attempts, for stall_steps
        producer = cluster.start_producer(TOPIC, work / "acks.txt", rate=args.rate, value_size=100)
        while producer.tail.acked < 100:
            producer.tail.poll()
            time.sleep(0.1)
        print(
            f"[{mode}] {PARTITIONS}-partition RF=3 topic under {args.rate:.0f} msg/s acks=all, idempotent",
            flush=True,
        )
        one = zk_trial if zk else trial
        for n in range(1, args.trials + 1):
            results.append(one(cluster, work / "acks.txt", n))
        acks = producer.stop()
        print(f"[{mode}] producer: {len(acks.acked)} acknowledged, {len(acks.failed)} failed", flush=True)
    finally:
        if producer is not None:
            producer.kill()
        cluster.down()
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=("kraft", "zk", "both"), default="kraft")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--rate", type=float, default=1000.0, help="messages per second (1000)")
    ap.add_argument("--work-dir", type=Path, help="default: a temporary dir")
    ap.add_argument("--fs", default="ext4", choices=("ext4", "xfs"))
    for role in ("broker", "controller"):
        ap.add_argument(
            f"--{role}-config",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help=f"a {role} property other than Kafka's default (repeatable), e.g. "
            + (
                "replica.fetch.backoff.ms=100" if role == "broker" else "controller.quorum.append.linger.ms=0"
            ),
        )
    args = ap.parse_args()
    from tools.cli.errors import UserError
    from tools.client.cli_support import properties

    try:
        args.broker_config = properties(args.broker_config, "--broker-config")
        args.controller_config = properties(args.controller_config, "--controller-config")
    except UserError as e:
        ap.error(str(e))
    if os.geteuid() != 0:
        print("bench/failover.py needs root (loop-device filesystems)", file=sys.stderr)
        return 2
    from kraftpy.logging import configure_cli_logging

    configure_cli_logging("ERROR")
    _time_the_ioctl()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="kraftpy-bench-failover-"))
    modes = ["kraft", "zk"] if args.mode == "both" else [args.mode]
    runs: dict[str, list[dict[str, int | None]]] = {}
    try:
        for mode in modes:
            runs[mode] = run_mode(mode, args, work / mode)
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)  # a temporary dir: nothing in it is kept

    from rich.console import Console
    from rich.table import Table

    names = {"kraft": "KRaft", "zk": "ZooKeeper"}
    table = Table(
        title="dir failover (ms after the fault): "
        + ", ".join(f"{names[m]} {len(r)} trials" for m, r in runs.items())
    )
    table.add_column("step")
    for m in runs:
        for col in ("p50", "p99", "max", "n"):
            table.add_column(f"{names[m]} {col}", justify="right")
    table.add_column("goal (p99)", justify="right")
    labels = {**LABELS, **{k: f"  stall step: {v}" for k, v in STEP_LABELS.items()}}
    for metric in (*METRICS, *STEPS):
        row = [labels[metric]]
        for results in runs.values():
            vals = [int(v) for r in results if (v := r.get(metric)) is not None]
            if vals:
                row += [
                    f"{percentile(vals, 0.5):.0f}",
                    f"{percentile(vals, 0.99):.0f}",
                    str(max(vals)),
                    str(len(vals)),
                ]
            else:
                row += ["-", "-", "-", "0"]
        goal = GOALS_P99_MS.get(metric)
        row.append(f"<= {goal}" if goal is not None else "")
        table.add_row(*row)
    Console(width=160).print(table)
    for mode, results in runs.items():
        if results:
            found = {m: [v for r in results if (v := r.get(m)) is not None] for m in METRICS}
            means = {m: statistics.fmean(vs) for m, vs in found.items() if vs}
            print(f"{names[mode]} means: " + ", ".join(f"{m} {v:.0f} ms" for m, v in means.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
