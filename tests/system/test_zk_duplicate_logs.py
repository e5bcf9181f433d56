"""ZooKeeper mode: a dir dropped from `log.dirs` and later restored.

While the dir is gone, LeaderAndIsr (IsNew false, no dir offline) makes the broker create its
replicas again in the other dir and fetch them from their leaders; restored, each such partition is
in both dirs. Kafka's LogManager refuses to start ("Duplicate log directories"), and ZooKeeper's
metadata names no dir; here the copy whose leader-epoch history holds the other's is served, the
old one renamed `-stray`, and no acknowledged record is lost.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.system.helpers import more_acks, start_traffic, validate_clients

pytestmark = [pytest.mark.system, pytest.mark.real, pytest.mark.slow]

TOPIC = "restored"
PARTITIONS = 4
WAIT_S = 60.0


def _set_log_dirs(config: Path, dirs: list[str]) -> None:
    lines = [
        f"log.dirs={','.join(dirs)}" if line.startswith("log.dirs=") else line
        for line in config.read_text().splitlines()
    ]
    config.write_text("\n".join(lines) + "\n")


def _partition_dirs(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith(f"{TOPIC}-"))


def test_a_dir_dropped_from_log_dirs_and_restored_in_zookeeper_mode(make_cluster, tmp_path: Path) -> None:
    cluster = make_cluster(brokers=3, dirs=2, zookeeper=True)
    cluster.create_topic(TOPIC, PARTITIONS, 3, configs={"min.insync.replicas": "2"})
    producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt")
    more_acks(producer, 100)
    broker = cluster.broker(1)
    kept, dropped = (Path(cluster.dir_plan(1, i).path) for i in range(2))
    on_dropped = _partition_dirs(dropped)
    assert on_dropped, "new replicas are spread over the dirs: the dropped dir holds some"
    config = Path(broker.config)
    full = next(line for line in config.read_text().splitlines() if line.startswith("log.dirs=")).split(
        "=", 1
    )[1]

    def in_every_isr(v) -> bool:  # type: ignore[no-untyped-def]
        parts = [v.partition(TOPIC, p) for p in range(PARTITIONS)]
        return all(p is not None and 1 in p.isr and 1 not in p.offline for p in parts)

    cluster.stop_node(broker.name)
    _set_log_dirs(config, [str(kept)])
    cluster.start_node(broker.name)
    cluster.wait_until(
        lambda v: in_every_isr(v) and all(name in _partition_dirs(kept) for name in on_dropped),
        WAIT_S,
        "every replica of broker 1 made again in its one dir and back in the ISR",
    )
    more_acks(producer, 100)

    cluster.stop_node(broker.name)
    _set_log_dirs(config, full.split(","))
    cluster.start_node(broker.name)
    cluster.wait_until(
        lambda v: cluster.is_running(broker.name) and in_every_isr(v),
        WAIT_S,
        "broker 1 back with both dirs, every replica online and in the ISR",
    )
    # The copies made while the dir was away are served; the old ones are kept aside, not deleted.
    assert set(on_dropped) <= set(_partition_dirs(kept))
    strays = _partition_dirs(dropped)
    assert len(strays) == len(on_dropped) and all(n.endswith("-stray") for n in strays), strays
    more_acks(producer, 100)
    validate_clients(cluster, TOPIC, producer)
