"""`kraftpy demo --story migration`: a ZooKeeper-mode JBOD cluster moves to KRaft under load (KIP-866, KIP-858).

1. a ZooKeeper-mode cluster comes up: a ZooKeeper, 3 brokers with 3 log dirs each; a 6-partition RF=3
   topic takes a continuous acks=all idempotent stream;
2. three KRaft controllers join in migration mode and wait (PRE_MIGRATION);
3. the brokers are rolled into migration mode: they give their dirs a directory.id and register with
   the controllers, which then copy ZooKeeper's metadata into the log in one transaction (MIGRATION)
   and start writing every change back to ZooKeeper (dual write);
4. midway, the disk under a leader dies: a broker in migration mode halts on any dir failure
   (KIP-858), the KRaft controller moves leadership, and the broker comes back with the disk healed;
5. the brokers are rolled into KRaft mode: each places its MIGRATING replicas in their real directories;
6. the controllers are rolled without the migration configs (POST_MIGRATION);
7. a consumer reads every acknowledged message back exactly once, and the Spark job reports the
   migration from the controllers' metadata log.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tools.cluster.demo import PARTITIONS, REPLICATION, TOPIC, Demo, DemoResult
from tools.cluster.errors import ClusterError
from tools.cluster.view import ClusterView

CONTROLLERS = 3


class MigrationDemo(Demo):
    def run(self) -> DemoResult:
        from tools.cluster.cluster import LocalCluster
        from tools.cluster.migrate import plan
        from tools.cluster.migrate.runner import Migration
        from tools.cluster.spec import ClusterSpec
        from tools.cluster.workload import verify

        t_start = time.monotonic()
        work, real, _why_not = self._prepare()
        result = DemoResult(ok=False, mode=self.mode)
        try:
            with self.d:
                self.d.say(
                    f"starting a ZooKeeper-mode cluster in {work / 'cluster'}: a ZooKeeper, 3 brokers x 3 log dirs "
                    f"on {self.mode}"
                )
                self.cluster = LocalCluster.up(
                    work / "cluster",
                    ClusterSpec(brokers=3, dirs=3, real_disks=real, zookeeper=True),
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

                migration = Migration(self.cluster, say=self.d.event, timeout=max(self.o.timeout_s, 120.0))
                self._step(
                    migration,
                    plan.ADD_CONTROLLERS,
                    f"adding {CONTROLLERS} KRaft controllers with zookeeper.metadata.migration.enable=true",
                )
                self._step(
                    migration,
                    plan.ROLL_BROKERS_MIGRATION,
                    "rolling the brokers into migration mode: directory.id on every dir, registered with KRaft",
                )
                self._step(
                    migration,
                    plan.WAIT_MIGRATION,
                    "waiting for the controllers to copy ZooKeeper's metadata (one transaction) and dual-write",
                )
                self._report_controller("copy committed")
                result.failover = self._dir_failure_during_migration()
                self._step(
                    migration,
                    plan.ROLL_BROKERS_KRAFT,
                    "rolling the brokers into KRaft mode: each places its MIGRATING replicas in real directories",
                )
                self._step(
                    migration,
                    plan.FINALIZE,
                    "rolling the controllers without the migration configs (finalize)",
                )
                self._report_controller("finalized")
                self.d.say("stopping the producer (it waits for every outstanding acknowledgement)")
                acks = self.producer.stop()
                self.d.update(producer=f"{len(acks.acked)} acknowledged, {len(acks.failed)} failed, stopped")
                self.d.say("a consumer reads the whole topic back")
                verdict = verify(acks, self.cluster.consume(TOPIC, timeout=self.o.timeout_s))
                result.verdict = verdict.describe()
                self.d.say(("OK: " if verdict.ok else "FAILED: ") + result.verdict)
                result.ok = verdict.ok
            self._shutdown()
            if self.o.analysis:
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

    def _step(self, migration: Any, step: str, what: str) -> None:
        from tools.cluster.migrate.plan import MigrationError

        self.d.say(f"migration step {step}: {what}")
        started = time.monotonic()
        try:
            migration.run(step)
        except MigrationError as e:
            raise ClusterError(f"migration step {step}: {e}") from None
        self.refresh()
        self.d.event(f"step {step} took {time.monotonic() - started:.1f} s; {self._producer_line()}")

    def _report_controller(self, what: str) -> None:
        from tools.cluster.migrate.runner import Migration

        node, status = Migration(self.cluster).active_status()
        name = node.name if node is not None else "no active controller"
        self.d.event(f"{what}: {name} reports {status.describe()}")

    def _dir_failure_during_migration(self) -> dict[str, Any]:
        view = self.refresh()
        # Not a broker's first dir: once it runs in KRaft mode that one holds its metadata log, without
        # which it cannot start (as in Kafka). Replicas of a ZooKeeper broker are MIGRATING in the
        # metadata, so where one lives is read on disk.
        index = 1
        led = next(
            p
            for p in view.topic(TOPIC)
            if (Path(self.cluster.dir_plan(p.leader, index).path) / f"{TOPIC}-{p.partition}").is_dir()
        )
        victim = led.leader
        label = f"b{victim}/d{index}"
        acked_before = self._acked()
        self.d.say(
            f"failing log dir {label} of broker {victim} (leader of {TOPIC}-{led.partition}) while it runs "
            "in migration mode"
        )
        fault_ms = int(time.time() * 1000)
        self.d.event(self.cluster.fail_dir(victim, index))

        def halted() -> bool:
            return self.cluster.process_state(f"broker-{victim}")[1] != "running"

        def moved(v: ClusterView) -> bool:
            # The process must be gone too: leaderships also move off a broker that is only fenced.
            return (
                halted()
                and all(p.leader >= 0 and p.leader != victim for p in v.topic(TOPIC))
                and self._acked() > acked_before + 10
            )

        self.wait(moved, f"broker {victim} to halt and the KRaft controller to move its leaderships")
        self.d.say(
            f"broker {victim} halted (a migrating broker shuts down on any dir failure); every partition has a "
            "new leader, production goes on"
        )
        summary = {"broker": victim, "dir": label, "halted": halted(), "fault_ms": fault_ms}
        self._heal_and_restart(victim, index)
        return summary
