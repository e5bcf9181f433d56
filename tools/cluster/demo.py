"""`kraftpy demo`: a local cluster survives the death of the disk under a partition leader.

1. a cluster comes up: a quorum of 3 controllers, 3 brokers with 3 log dirs each (real loop-device filesystems
   when root and loop devices work, plain directories otherwise);
2. a topic of 6 partitions, replication factor 3, takes a continuous acks=all idempotent stream;
3. the log dir holding a leader's replica fails (filesystem shutdown: EIO; with plain directories the
   directory is swapped for a file: ENOTDIR), and the failover shows as it happens;
4. the broker is stopped, the disk healed, the broker started again and caught up;
5. a consumer reads the topic back: every acknowledged message exactly once;
6. the Spark job analyses the controller's metadata log and writes an HTML report.
Everything it started is stopped and every disk removed at the end, also on failure or Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.text import Text

from tools.cluster.errors import ClusterError
from tools.cluster.events import diff_views
from tools.cluster.view import ClusterView

TOPIC = "orders"
PARTITIONS = 6
REPLICATION = 3
DEFAULT_WORK_DIR = Path("work") / "demo"
ANALYSIS_TIMEOUT_S = 900.0


@dataclass
class DemoOptions:
    work_dir: Path
    real_disks: bool | None = None  # None: when it can
    rate: float = 200.0
    steady_s: float = 4.0
    after_s: float = 4.0
    analysis: bool = True
    zookeeper: bool = False  # ZooKeeper mode: a ZooKeeper and ZooKeeper-mode brokers (no metadata log)
    secure: bool = False  # TLS between nodes, SASL_SSL for clients, ACLs (cluster up --secure)
    live: bool | None = None  # None: when stdout is a terminal
    timeout_s: float = 90.0


@dataclass
class DemoResult:
    ok: bool
    mode: str
    verdict: str = ""
    report: str | None = None
    failover: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None


class Display:
    """The live view on a terminal, plain lines elsewhere (CI logs)."""

    def __init__(self, console: Console, live: bool) -> None:
        self.console = console
        self.live_mode = live
        self.events: deque[str] = deque(maxlen=40)
        self.step = ""
        self.producer = ""
        self.view: ClusterView | None = None
        self.t0 = time.monotonic()
        self._live: Live | None = None

    def __enter__(self) -> Display:
        if self.live_mode:
            self._live = Live(self._render(), console=self.console, refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self._render())
            self._live.__exit__(None, None, None)
            self._live = None

    def _stamp(self) -> str:
        return f"{time.monotonic() - self.t0:6.1f}s"

    def say(self, msg: str) -> None:
        self.step = msg
        line = f"{self._stamp()}  {msg}"
        if self._live is not None:
            self.events.append(f"[bold]{line}[/bold]")
            self._live.update(self._render())
        else:
            self.console.print(line, highlight=False, soft_wrap=True)

    def event(self, msg: str) -> None:
        line = f"{self._stamp()}    {msg}"
        if self._live is not None:
            self.events.append(line)
        else:
            self.console.print(line, highlight=False, soft_wrap=True)

    def update(self, view: ClusterView | None = None, producer: str | None = None) -> None:
        if view is not None:
            self.view = view
        if producer is not None:
            self.producer = producer
        if self._live is not None:
            self._live.update(self._render())

    def _render(self) -> Group:
        from tools.cluster.render import dirs_table, nodes_table, partitions_table

        parts: list[Any] = [Text(f"kraftpy demo: {self.step}", style="bold")]
        if self.view is not None:
            parts += [nodes_table(self.view), dirs_table(self.view), partitions_table(self.view, [TOPIC])]
        if self.producer:
            parts.append(Text(f"producer: {self.producer}", style="cyan"))
        if self.events:
            # The events get what the tables leave of the terminal; the oldest give way first.
            used = 4 + sum(len(p.rows) + 4 for p in parts if hasattr(p, "rows"))
            room = max(3, self.console.size.height - used - 2)
            shown = list(self.events)[-room:]
            parts.append(Panel(Text.from_markup("\n".join(shown)), title="events", title_align="left"))
        return Group(*parts)


class Demo:
    def __init__(self, options: DemoOptions, console: Console | None = None) -> None:
        self.o = options
        self.console = console or Console()
        live = options.live if options.live is not None else self.console.is_terminal
        self.d = Display(self.console, live)
        self.cluster: Any = None
        self.producer: Any = None
        self.metadata_dir: Path | None = None
        self.last_view: ClusterView | None = None
        self.mode = ""

    # ---------------------------------------------------------------- helpers

    def _producer_line(self) -> str:
        p = self.producer
        if p is None:
            return ""
        p.tail.poll()
        ago = ""
        if p.tail.last_ack_ms is not None:
            ago = f", last ack {max(0, int(time.time() * 1000) - p.tail.last_ack_ms)} ms ago"
        return f"{p.tail.acked} acknowledged, {p.tail.rate():.0f} msg/s{ago}" + (
            f", {p.tail.failed} failed" if p.tail.failed else ""
        )

    def refresh(self) -> ClusterView:
        view = self.cluster.view(probe=True, usage=True)
        for e in diff_views(self.last_view, view):
            self.d.event(e)
        self.last_view = view
        self.d.update(view, self._producer_line())
        return view

    def wait(
        self, predicate: Callable[[ClusterView], bool], what: str, timeout: float | None = None
    ) -> ClusterView:
        deadline = time.monotonic() + (timeout or self.o.timeout_s)
        while True:
            view = self.refresh()
            if predicate(view):
                return view
            if self.producer is not None and not self.producer.alive and self.producer.tail.done is None:
                tail = self.producer.log_file.read_text(errors="replace").strip().splitlines()[-5:]
                raise ClusterError(
                    f"the producer exited early ({self.producer.log_file}): " + " / ".join(tail)
                )
            if time.monotonic() > deadline:
                from tools.cluster.render import render_text

                raise ClusterError(f"timed out waiting for {what}\n{render_text(view)}")
            time.sleep(0.25)

    def pause(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.refresh()
            time.sleep(0.25)

    # ---------------------------------------------------------------- the story

    def run(self) -> DemoResult:
        from tools.cluster.cluster import LocalCluster
        from tools.cluster.spec import ClusterSpec

        t_start = time.monotonic()
        work, real, why_not = self._prepare()
        result = DemoResult(ok=False, mode=self.mode)
        try:
            with self.d:
                if not real and why_not:
                    self.d.say(f"log dirs are plain directories ({why_not})")
                servers = "a ZooKeeper" if self.o.zookeeper else "3 controllers"
                servers += " (secure: TLS between nodes, SASL_SSL, ACLs)" if self.o.secure else ""
                self.d.say(
                    f"starting a cluster in {work / 'cluster'}: {servers}, 3 brokers x 3 log dirs on {self.mode}"
                )
                self.cluster = LocalCluster.up(
                    work / "cluster",
                    ClusterSpec(
                        brokers=3, dirs=3, real_disks=real, zookeeper=self.o.zookeeper, secure=self.o.secure
                    ),
                    say=self.d.event,
                    timeout=self.o.timeout_s,
                )
                self.refresh()
                self.d.say(
                    f"creating topic {TOPIC}: {PARTITIONS} partitions, replication factor {REPLICATION}"
                )
                self.cluster.create_topic(TOPIC, PARTITIONS, REPLICATION, timeout=self.o.timeout_s)
                self.d.say(f"producing {self.o.rate:.0f} msg/s with acks=all and idempotence")
                self.producer = self.cluster.start_producer(TOPIC, work / "acks.txt", rate=self.o.rate)
                self.wait(lambda v: self._acked() > 0, "the first acknowledged message")
                self.pause(self.o.steady_s)
                result.failover = self._fail_and_recover(work)
                self.d.say("stopping the producer (it waits for every outstanding acknowledgement)")
                acks = self.producer.stop()
                self.d.update(producer=f"{len(acks.acked)} acknowledged, {len(acks.failed)} failed, stopped")
                self.d.say("a consumer reads the whole topic back")
                rows = self.cluster.consume(TOPIC, timeout=self.o.timeout_s)
                from tools.cluster.workload import verify

                verdict = verify(acks, rows)
                if not verdict.ok:
                    # Tell "never stored" from "stored, but the cluster said the topic ended earlier".
                    time.sleep(3)
                    again = verify(acks, self.cluster.consume(TOPIC, timeout=self.o.timeout_s))
                    self.d.event(f"first read: {verdict.describe()}")
                    self.d.event(f"second read 3 s later: {again.describe()}")
                result.verdict = verdict.describe()
                self.d.say(("OK: " if verdict.ok else "FAILED: ") + result.verdict)
                result.ok = verdict.ok
            self._shutdown()
            if self.o.analysis and not self.o.zookeeper:
                result.report = self._analyse(work)
                result.ok = result.ok and result.report is not None and Path(result.report).exists()
        except BaseException as e:
            result.ok = False
            result.error = str(e) if not isinstance(e, KeyboardInterrupt) else "interrupted"
            self._shutdown()
            if isinstance(e, KeyboardInterrupt):
                raise
        result.seconds = time.monotonic() - t_start
        return result

    def _prepare(self) -> tuple[Path, bool, str | None]:
        """The work dir, whether the disks are real (and why not), with an earlier demo's leftovers gone."""
        from tools.cluster.cluster import LocalCluster
        from tools.cluster.disks import real_disks_available

        work = self.o.work_dir.resolve()
        real = self.o.real_disks
        why_not = real_disks_available()
        if real is None:
            real = why_not is None
        elif real and why_not:
            raise ClusterError(why_not)
        self.mode = "real loop-device disks (ext4)" if real else "plain directories"
        stale = LocalCluster(work / "cluster")
        if stale.exists():  # an earlier demo that was killed: clear it first
            stale.down()
        for old in ("acks.txt", "acks.log", "analysis.log"):
            (work / old).unlink(missing_ok=True)
        return work, real, why_not

    def _acked(self) -> int:
        self.producer.tail.poll()
        return int(self.producer.tail.acked)

    def _fail_and_recover(self, work: Path) -> dict[str, Any]:
        view = self.last_view or self.refresh()
        p0 = view.topic(TOPIC)[0]
        victim = p0.leader
        label = p0.directories[p0.replicas.index(victim)]
        index = int(label.split("/d")[1])
        dplan = self.cluster.dir_plan(victim, index)
        dir_id = self.cluster.state.directory_ids.get(dplan.path, "")
        affected = [(p.topic, p.partition) for p in view.topic(TOPIC) if label in p.directories]
        leaders_before = {(p.topic, p.partition): p.leader for p in view.topic(TOPIC)}
        image = self.cluster.image()
        topic_ids = {t.name: str(t.id) for t in image.topics.topics_by_name.values()}
        offset_before = image.offset

        self.d.say(f"failing log dir {label} of broker {victim} (leader of {TOPIC}-0): {dplan.path}")
        fault_ms = int(time.time() * 1000)
        acked_before = self._acked()
        self.d.event(self.cluster.fail_dir(victim, index))
        self.wait(
            lambda v: self._failover_done(v, victim, label) and self._acked() > acked_before + 10,
            "the controller to move leadership off the failed dir and the producer to resume",
        )
        self.d.say("failover done: every partition has a leader on a live dir; production goes on")
        self.pause(self.o.after_s)

        from tools.cluster.timeline import detection_ms, failover_timeline

        if self.o.zookeeper:
            summary = self._zk_timeline(victim, dplan.path, label, fault_ms)
            self._heal_and_restart(victim, index)
            return summary
        tl = failover_timeline(
            self.cluster.active_controller().metadata_dir,
            fault_ms=fault_ms,
            broker_id=victim,
            directory_id=dir_id,
            affected=affected,
            leaders=leaders_before,
            topic_ids=topic_ids,
            from_offset=max(0, offset_before - 5),
        )
        tl.detected_ms = detection_ms(self.cluster.broker(victim).log, dplan.path, fault_ms)
        summary = {
            "broker": victim,
            "dir": label,
            "detected_ms": tl.ms_after_fault(tl.detected_ms),
            "reported_ms": tl.ms_after_fault(tl.reported_ms),
            "leaders_moved_ms": tl.ms_after_fault(tl.leaders_ms),
            "moved": tl.moved,
        }
        self.d.event(
            f"timeline after the fault: broker noticed at +{summary['detected_ms']} ms, controller committed "
            f"the dir offline at +{summary['reported_ms']} ms, last leader moved at +{summary['leaders_moved_ms']} ms"
        )

        self._heal_and_restart(victim, index)
        return summary

    def _zk_timeline(self, victim: int, path: str, label: str, fault_ms: int) -> dict[str, Any]:
        """ZooKeeper mode: the broker's detection and the controller learning the offline replicas,
        from their logs (there is no metadata log to read)."""
        from tools.cluster.timeline import detection_ms, log_events

        detected = detection_ms(self.cluster.broker(victim).log, path, fault_ms)
        learnt = [
            e["ts_ms"]
            for b in self.cluster.brokers
            for e in log_events(b.log, "replicas on offline log dirs")
            if e.get("broker") == victim and int(e["ts_ms"]) >= fault_ms  # type: ignore[call-overload]
        ]
        summary = {
            "broker": victim,
            "dir": label,
            "detected_ms": detected - fault_ms if detected is not None else None,
            "reported_ms": int(min(learnt)) - fault_ms if learnt else None,  # type: ignore[call-overload]
        }
        self.d.event(
            f"timeline after the fault: broker noticed at +{summary['detected_ms']} ms, the controller had its "
            f"KAFKA_STORAGE_ERROR answers (after /log_dir_event_notification) at +{summary['reported_ms']} ms"
        )
        return summary

    def _heal_and_restart(self, victim: int, index: int) -> None:
        self.d.say(f"stopping broker {victim} to heal its disk")
        self.cluster.stop_broker(victim, timeout=20)
        for line in self.cluster.heal_dir(victim, index, timeout=30):
            self.d.event(line)
        self.d.say(f"starting broker {victim} again with the healed dir")
        self.cluster.start_broker(victim, wait=False)
        self.wait(
            lambda v: (
                v.broker(victim).state == "unfenced"
                and all(d.status == "online" for d in v.dirs)
                and all(len(p.isr) == len(p.replicas) and not p.offline for p in v.topic(TOPIC))
            ),
            f"broker {victim} back, every dir online, every replica in sync",
        )
        self.d.say(f"broker {victim} is back and every replica of {TOPIC} is in sync again")

    @staticmethod
    def _failover_done(view: ClusterView, victim: int, label: str) -> bool:
        dir_offline = any(d.label == label and d.status == "offline" for d in view.dirs)
        if not dir_offline:
            return False
        for p in view.topic(TOPIC):
            if p.leader < 0:
                return False
            if label in p.directories and p.leader == victim:
                return False
        return True

    def _shutdown(self) -> None:
        if self.producer is not None:
            with contextlib.suppress(Exception):
                self.producer.kill()
        if self.cluster is not None:
            disks = " and removing its disks" if self.mode.startswith("real") else ""
            self.d.say(f"stopping the cluster (controllers first: the log ends as the story did){disks}")
            if not self.o.zookeeper:
                with contextlib.suppress(Exception):
                    self.metadata_dir = Path(self.cluster.active_controller().metadata_dir)
            with contextlib.suppress(Exception):
                self.cluster.down(say=self.d.event, controller_first=True)
            self.cluster = None

    def _analyse(self, work: Path) -> str | None:
        """`kraftpy analyze` (run_analysis) in its own process: the JVM's chatter goes to a log file,
        and a Spark that cannot start fails this step, not the demo's process."""
        import json
        import sys

        from tools.cluster.launcher import spawn

        # The last active controller's log: every voter holds the committed records, it holds them all.
        meta = self.metadata_dir or work / "cluster" / "controller-3000" / "meta"
        out = work / "analysis"
        log_path = work / "analysis.log"
        self.d.say(f"Spark: analysing the controller's metadata log {meta} (output in {log_path})")
        env = {"SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
        argv = [sys.executable, "-m", "tools.cli.main", "analyze", str(meta), "--out", str(out), "--full"]
        log_path.unlink(missing_ok=True)  # the log of an earlier demo in this work dir is not this one's
        # Its own process group, so a kill reaches the JVM it starts too; it dies if the demo does.
        proc = spawn(argv, log_path, name="analysis", env=env, die_with_parent=True)
        try:
            t0 = time.monotonic()
            while proc.alive:
                time.sleep(2)
                if time.monotonic() - t0 > ANALYSIS_TIMEOUT_S:
                    proc.kill9()
                    self.d.say(f"analysis did not finish within {ANALYSIS_TIMEOUT_S:.0f} s; see {log_path}")
                    return None
        except BaseException:
            proc.kill9()
            raise
        if proc.returncode != 0:
            tail = log_path.read_text(errors="replace").strip().splitlines()[-3:]
            self.d.say(f"analysis failed (exit {proc.returncode}): {' / '.join(tail)}")
            return None
        try:
            summary = json.loads((out / "summary.json").read_text())
        except (OSError, ValueError) as e:
            self.d.say(f"analysis wrote no readable summary.json: {e}")
            return None
        self.d.event(
            f"Spark: {summary.get('records')} records of {len(summary.get('record_types') or {})} types, "
            f"{summary.get('brokers')} brokers, {summary.get('partitions')} partitions"
        )
        for f in summary.get("dir_failures") or []:
            latency = f.get("recovery_latency_ms")
            when = f"{latency} ms" if latency is not None else "never (not recovered)"
            self.d.event(
                f"Spark: dir failure on broker {f.get('broker_id')}: {f.get('affected_partitions')} partitions "
                f"affected, {f.get('leaders_lost')} leaders lost, every one led again after {when}"
            )
        migration = summary.get("migration")
        if migration:
            copies = [c for c in migration.get("copies") or [] if c.get("outcome") == "committed"]
            if copies:
                self.d.event(
                    f"Spark: the copy of ZooKeeper's metadata: {copies[-1].get('records')} records in one "
                    f"transaction, committed at offset {copies[-1].get('end_offset')}"
                )
            self.d.event(f"Spark: {migration.get('verdict')}")
        report = summary.get("report")
        return str(report) if report else None
