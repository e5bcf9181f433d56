"""A continuous acks=all, idempotent producer and an exactly-once check of what a consumer reads back.

The producer runs as its own process (`python -m tools.cluster.workload produce ...`) so it keeps
its own event loop however busy the caller is, and so it can run inside a network namespace in
multi-host mode. Each message's value starts with its sequence number; every acknowledgement is
appended to an ack file as `seq partition offset ack_time_ms`, a failed delivery as
`F seq error`. The check then needs only that file and what a consumer reads:

- every acknowledged message is read exactly once, at the offset the cluster acknowledged;
- no message (acknowledged or not) is read twice.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import tools.cluster.launcher as launcher

SEQ_WIDTH = 12
DONE_MARK = "# done"


def encode_value(seq: int, size: int) -> bytes:
    head = f"{seq:0{SEQ_WIDTH}d}|".encode()
    return head + b"x" * max(0, size - len(head))


def decode_seq(value: bytes | None) -> int | None:
    if not value or len(value) < SEQ_WIDTH:
        return None
    try:
        return int(value[:SEQ_WIDTH])
    except ValueError:
        return None


# ---- producing -----------------------------------------------------------------------------------


async def produce(
    bootstrap: str,
    topic: str,
    out: Path,
    *,
    rate: float,
    value_size: int = 100,
    max_in_flight: int = 2000,
    duration_s: float | None = None,
    stop: asyncio.Event | None = None,
    delivery_timeout_ms: int = 120_000,
) -> dict[str, int]:
    """Send `rate` messages/s round-robin over the topic's partitions until `stop` (or `duration_s`),
    then wait for every outstanding delivery report. Returns counts."""
    from tools.client.producer import Producer

    stop = stop or asyncio.Event()
    lines: list[str] = []
    counts = {"sent": 0, "acked": 0, "failed": 0}
    in_flight = 0
    room = asyncio.Event()
    room.set()

    def on_done(seq: int, fut: asyncio.Future) -> None:  # type: ignore[type-arg]
        nonlocal in_flight
        in_flight -= 1
        if in_flight < max_in_flight:
            room.set()
        exc = fut.exception()
        if exc is None:
            md = fut.result()
            lines.append(f"{seq} {md.partition} {md.offset} {int(time.time() * 1000)}\n")
            counts["acked"] += 1
        else:
            code = getattr(getattr(exc, "code", None), "name", type(exc).__name__)
            lines.append(f"F {seq} {code}\n")
            counts["failed"] += 1

    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a", buffering=1) as f:

        async def flusher() -> None:
            while True:
                await asyncio.sleep(0.05)
                if lines:
                    f.write("".join(lines))
                    lines.clear()

        flush_task = asyncio.create_task(flusher())
        async with Producer(
            bootstrap, acks=-1, enable_idempotence=True, linger_ms=2, delivery_timeout_ms=delivery_timeout_ms
        ) as producer:
            await producer.metadata.refresh([topic])
            partitions = producer.metadata.partition_count(topic)
            if not partitions:
                raise RuntimeError(f"topic {topic} not found")
            start = time.monotonic()
            seq = 0
            parent = os.getppid()
            while not stop.is_set():
                if os.getppid() != parent:
                    break  # whoever started us is gone: never outlive it
                now = time.monotonic()
                if duration_s is not None and now - start >= duration_s:
                    break
                due = int((now - start) * rate) + 1
                while seq < due and not stop.is_set():
                    if in_flight >= max_in_flight:
                        room.clear()
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(room.wait(), 0.1)
                        break
                    fut = await producer.send(
                        topic, encode_value(seq, value_size), partition=seq % partitions
                    )
                    in_flight += 1
                    fut.add_done_callback(lambda fu, s=seq: on_done(s, fu))
                    seq += 1
                    counts["sent"] += 1
                await asyncio.sleep(0.005)
            await producer.flush()
        flush_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await flush_task
        f.write("".join(lines))
        f.write(f"{DONE_MARK} {json.dumps(counts)}\n")
    return counts


# ---- reading the ack file ------------------------------------------------------------------------


@dataclass
class AckLog:
    acked: dict[int, tuple[int, int, int]] = field(default_factory=dict)  # seq -> (partition, offset, t_ms)
    failed: dict[int, str] = field(default_factory=dict)
    done: dict[str, int] | None = None


def read_acks(path: Path) -> AckLog:
    log = AckLog()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return log
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]  # the last line is still being written
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if line.startswith(DONE_MARK):
            log.done = json.loads(line[len(DONE_MARK) :])
        elif parts[0] == "F" and len(parts) >= 3:
            log.failed[int(parts[1])] = parts[2]
        elif len(parts) == 4:
            seq, p, off, t = (int(x) for x in parts)
            log.acked[seq] = (p, off, t)
    return log


class AckTail:
    """Follows a growing ack file: counts and recent rate without rereading it all."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pos = 0
        self.acked = 0
        self.failed = 0
        self.last_ack_ms: int | None = None
        self.done: dict[str, int] | None = None
        self._history: list[tuple[float, int]] = []

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n")
        if end < 0:
            return
        self.pos += end + 1
        for line in data[: end + 1].decode().splitlines():
            if line.startswith(DONE_MARK):
                self.done = json.loads(line[len(DONE_MARK) :])
            elif line.startswith("F "):
                self.failed += 1
            elif line:
                self.acked += 1
                self.last_ack_ms = int(line.rsplit(" ", 1)[1])
        now = time.monotonic()
        self._history.append((now, self.acked))
        self._history = [(t, n) for t, n in self._history if now - t <= 3.0]

    def rate(self) -> float:
        if len(self._history) < 2:
            return 0.0
        (t0, n0), (t1, n1) = self._history[0], self._history[-1]
        return (n1 - n0) / (t1 - t0) if t1 > t0 else 0.0


# ---- consuming and checking ----------------------------------------------------------------------


async def consume(bootstrap: str, topic: str, timeout_s: float = 120) -> list[tuple[int, int, int | None]]:
    """(partition, offset, seq) of every record of `topic`, from the beginning to its current end."""
    from tools.client.consumer import consume_all

    records = await consume_all(bootstrap, topic, timeout_s=timeout_s)
    return [(r.partition, r.offset, decode_seq(r.value)) for r in records]


@dataclass
class Verdict:
    acked: int
    consumed: int
    missing: list[int]
    duplicates: list[int]
    misplaced: list[int]  # acknowledged at one offset, read at another
    unreadable: int
    failed_deliveries: int
    # partition -> (highest acknowledged offset, highest offset read): where the two part ways
    ends: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.duplicates or self.misplaced or self.unreadable)

    def describe(self) -> str:
        if self.ok:
            return (
                f"all {self.acked} acknowledged messages read back exactly once "
                f"({self.consumed} read, {self.failed_deliveries} deliveries failed and were not acknowledged)"
            )
        parts = [f"{self.acked} acknowledged, {self.consumed} read"]
        if self.missing:
            parts.append(f"{len(self.missing)} acknowledged but never read (e.g. {self.missing[:5]})")
        if self.duplicates:
            parts.append(f"{len(self.duplicates)} read more than once (e.g. {self.duplicates[:5]})")
        if self.misplaced:
            parts.append(
                f"{len(self.misplaced)} read at another offset than acknowledged (e.g. {self.misplaced[:5]})"
            )
        if self.unreadable:
            parts.append(f"{self.unreadable} records without a sequence number")
        short = {p: e for p, e in sorted(self.ends.items()) if e[1] < e[0]}
        if short:
            parts.append(
                "read less than acknowledged in partitions "
                + ", ".join(f"{p} (acked up to offset {a}, read up to {r})" for p, (a, r) in short.items())
            )
        return "; ".join(parts)


def verify(acks: AckLog, consumed: Sequence[tuple[int, int, int | None]]) -> Verdict:
    seen = Counter(seq for _p, _o, seq in consumed if seq is not None)
    where = {seq: (p, o) for p, o, seq in consumed if seq is not None}
    missing = sorted(seq for seq in acks.acked if seq not in seen)
    duplicates = sorted(seq for seq, n in seen.items() if n > 1)
    misplaced = sorted(seq for seq, (p, o, _t) in acks.acked.items() if seq in where and where[seq] != (p, o))
    ends: dict[int, tuple[int, int]] = {}
    for p, o, _t in acks.acked.values():
        a, r = ends.get(p, (-1, -1))
        ends[p] = (max(a, o), r)
    for p, o, _seq in consumed:
        a, r = ends.get(p, (-1, -1))
        ends[p] = (a, max(r, o))
    return Verdict(
        ends=ends,
        acked=len(acks.acked),
        consumed=len(consumed),
        missing=missing,
        duplicates=duplicates,
        misplaced=misplaced,
        unreadable=sum(1 for *_x, seq in consumed if seq is None),
        failed_deliveries=len(acks.failed),
    )


# ---- topics --------------------------------------------------------------------------------------


async def create_topic(
    bootstrap: str,
    name: str,
    partitions: int,
    replication_factor: int,
    *,
    assignment: dict[int, list[int]] | None = None,
    configs: dict[str, str] | None = None,
) -> str:
    """CreateTopics through the first broker that answers (it forwards to the controller); returns
    the topic id. Raises RuntimeError with Kafka's error name when the cluster refuses."""
    from protocol.errors import Errors
    from protocol.rpc.create_topics import CreateTopicsRequest as Req
    from protocol.transport.client import RpcClient
    from tools.client.security import client_context

    tls = client_context()
    topic = Req.CreatableTopic(
        Name=name,
        NumPartitions=-1 if assignment else partitions,
        ReplicationFactor=-1 if assignment else replication_factor,
        Assignments=[
            Req.CreatableReplicaAssignment(PartitionIndex=p, BrokerIds=b)
            for p, b in sorted((assignment or {}).items())
        ],
        Configs=[Req.CreatableTopicConfig(Name=k, Value=v) for k, v in (configs or {}).items()],
    )
    last: object = None
    for address in bootstrap.split(","):
        async with RpcClient(f"http://{address.strip()}", ssl=tls) as client:
            try:
                resp = await client.call("CreateTopics", Req(Topics=[topic], TimeoutMs=30000))
            except Exception as e:  # that broker is down: ask the next
                last = e
                continue
        result = resp.Topics[0]
        if result.ErrorCode != 0:
            raise RuntimeError(
                f"creating topic {name}: {Errors(result.ErrorCode).name}: {result.ErrorMessage or ''}".rstrip(
                    ": "
                )
            )
        return str(result.TopicId)
    raise RuntimeError(f"creating topic {name}: no broker answered ({last})")


# ---- the producer as a process -------------------------------------------------------------------


class ProducerProcess:
    """`produce` in its own process (inside the cluster's client namespace when it has one)."""

    def __init__(
        self,
        wrap: Sequence[str],
        bootstrap: str,
        topic: str,
        ack_file: Path,
        *,
        rate: float = 300,
        value_size: int = 100,
        log_file: Path | None = None,
    ) -> None:
        self.ack_file = ack_file
        ack_file.unlink(missing_ok=True)  # acks of an earlier run would count as this one's
        self.tail = AckTail(ack_file)
        argv = [
            *wrap,
            sys.executable,
            "-m",
            "tools.cluster.workload",
            "produce",
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--out",
            str(ack_file),
            "--rate",
            str(rate),
            "--value-size",
            str(value_size),
        ]
        self.argv = argv
        log_path = log_file or ack_file.with_suffix(".log")
        from tools.client.security import child_env

        # the command config in use here (a secure cluster's admin certificate) goes with it
        self.popen = launcher.spawn(argv, log_path, name="producer", env=child_env()).popen
        self.log_file = log_path

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 150.0) -> AckLog:
        """Ask it to finish (SIGTERM: stop sending, wait for outstanding acks) and read its ack file."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return read_acks(self.ack_file)

    def kill(self) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)


def consume_in(
    wrap: Sequence[str], bootstrap: str, topic: str, timeout_s: float = 120
) -> list[tuple[int, int, int | None]]:
    """`consume` in a helper process (for a namespace); returns what it read."""
    argv = [
        *wrap,
        sys.executable,
        "-m",
        "tools.cluster.workload",
        "consume",
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
    ]
    from tools.client.security import child_env

    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout_s + 30,
        check=False,
        env={**os.environ, **child_env()},
    )
    if proc.returncode != 0:
        raise RuntimeError(f"consumer failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return [tuple(x) for x in json.loads(proc.stdout)]  # type: ignore[misc]


# ---- command line (for the helper processes) -----------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.cluster.workload")
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("produce")
    pp.add_argument("--bootstrap", required=True)
    pp.add_argument("--topic", required=True)
    pp.add_argument("--out", required=True, type=Path)
    pp.add_argument("--rate", type=float, default=300)
    pp.add_argument("--value-size", type=int, default=100)
    pp.add_argument("--duration", type=float)
    pt = sub.add_parser("create-topic")
    pt.add_argument("--bootstrap", required=True)
    pt.add_argument("--topic", required=True)
    pt.add_argument("--partitions", type=int, default=1)
    pt.add_argument("--replication-factor", type=int, default=1)
    pt.add_argument("--assignment", help="JSON {partition: [broker ids]}")
    pt.add_argument("--config", action="append", default=[], help="NAME=VALUE topic config")
    pc = sub.add_parser("consume")
    pc.add_argument("--bootstrap", required=True)
    pc.add_argument("--topic", required=True)
    pc.add_argument("--timeout", type=float, default=120)
    args = p.parse_args(argv)

    from kraftpy.logging import configure_cli_logging

    configure_cli_logging("WARNING")

    async def run_produce() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        counts = await produce(
            args.bootstrap,
            args.topic,
            args.out,
            rate=args.rate,
            value_size=args.value_size,
            duration_s=args.duration,
            stop=stop,
        )
        print(json.dumps(counts), flush=True)

    if args.cmd == "produce":
        asyncio.run(run_produce())
    elif args.cmd == "create-topic":
        assignment = {int(k): v for k, v in json.loads(args.assignment).items()} if args.assignment else None
        try:
            topic_id = asyncio.run(
                create_topic(
                    args.bootstrap,
                    args.topic,
                    args.partitions,
                    args.replication_factor,
                    assignment=assignment,
                )
            )
        except RuntimeError as e:
            print(str(e), file=sys.stderr)
            return 1
        print(topic_id)
    else:
        rows = asyncio.run(consume(args.bootstrap, args.topic, args.timeout))
        json.dump(rows, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
