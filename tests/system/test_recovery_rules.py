"""What a broker does with the logs it finds at startup when they do not add up (issue 17).

- A replica whose `partition.metadata` is lost keeps its acknowledged records (field bug 20). The
  partition has one replica, so that replica is its whole ISR. Kafka moves such a log aside as a
  stray at startup and leads with an empty one; here the broker adopts it, because the metadata
  places a partition of that name on it, and writes the file again.
- A dir dropped from `log.dirs` and later restored: its replicas were made again in the other dir
  meanwhile, so each is in both. Kafka refuses to start ("Duplicate log directories"); here the copy
  in the dir the metadata assigns is kept and the other moved aside.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftpy.log.partition_metadata import read_partition_metadata
from kraftpy.storage import read_meta_properties
from protocol.uuid import Uuid
from tests.system.helpers import more_acks, start_traffic, validate_clients
from tools.cluster.workload import verify

pytestmark = [pytest.mark.system, pytest.mark.real]

TOPIC = "lonely"
WAIT_S = 60.0


def test_the_only_in_sync_replica_loses_its_partition_metadata(make_cluster, tmp_path: Path) -> None:
    cluster = make_cluster(brokers=1, dirs=2)
    cluster.create_topic(TOPIC, 1, 1)
    producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt")
    more_acks(producer, 300)
    acks = producer.stop()
    assert acks.done is not None and len(acks.acked) >= 300

    broker = cluster.broker(1)
    cluster.stop_node(broker.name)
    holders = [
        Path(cluster.dir_plan(1, i).path) / f"{TOPIC}-0"
        for i in range(2)
        if (Path(cluster.dir_plan(1, i).path) / f"{TOPIC}-0").is_dir()
    ]
    assert len(holders) == 1, holders
    held = holders[0]
    topic_id = read_partition_metadata(held)
    (held / "partition.metadata").unlink()

    cluster.start_node(broker.name)
    cluster.wait_until(lambda v: v.partition(TOPIC, 0).leader == 1, WAIT_S, "broker 1 leading again")
    verdict = verify(acks, cluster.consume(TOPIC))
    assert verdict.ok, verdict.describe()
    assert read_partition_metadata(held) == topic_id
    assert not any(p.name.endswith("-stray") for p in held.parent.iterdir())


def _set_log_dirs(config: Path, dirs: list[str]) -> None:
    lines = [
        f"log.dirs={','.join(dirs)}" if line.startswith("log.dirs=") else line
        for line in config.read_text().splitlines()
    ]
    config.write_text("\n".join(lines) + "\n")


def test_a_dir_dropped_from_log_dirs_and_restored(make_cluster, tmp_path: Path) -> None:
    cluster = make_cluster(brokers=3, dirs=2)
    cluster.create_topic(TOPIC, 4, 3, configs={"min.insync.replicas": "2"})
    producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt")
    broker = cluster.broker(1)
    kept, dropped = (Path(cluster.dir_plan(1, i).path) for i in range(2))
    kept_id = read_meta_properties(kept).directory_id
    on_dropped = sorted(p.name for p in dropped.iterdir() if p.name.startswith(f"{TOPIC}-"))
    assert on_dropped, "choose_dir spreads the replicas: the dropped dir holds some"
    config = Path(broker.config)
    full = next(line for line in config.read_text().splitlines() if line.startswith("log.dirs=")).split("=", 1)[1]

    def all_in(dir_id: Uuid | None) -> bool:
        image = cluster.image()
        if image is None:
            return False
        topic = image.topics.get_topic(TOPIC)
        return all(
            part.directories[part.replicas.index(1)] == dir_id and 1 in part.isr for part in topic.partitions.values()
        )

    cluster.stop_node(broker.name)
    _set_log_dirs(config, [str(kept)])
    cluster.start_node(broker.name)
    cluster.wait_until(lambda v: all_in(kept_id), WAIT_S, "every replica of broker 1 made again in its one dir")
    more_acks(producer, 50)

    cluster.stop_node(broker.name)
    _set_log_dirs(config, full.split(","))
    cluster.start_node(broker.name)
    cluster.wait_until(
        lambda v: cluster.is_running(broker.name) and all_in(kept_id),
        WAIT_S,
        "broker 1 back with both dirs, each replica where the metadata has it",
    )
    names = sorted(p.name for p in dropped.iterdir() if p.name.startswith(f"{TOPIC}-"))
    assert len(names) == len(on_dropped) and all(n.endswith("-stray") for n in names), names
    more_acks(producer, 50)
    validate_clients(cluster, TOPIC, producer)
