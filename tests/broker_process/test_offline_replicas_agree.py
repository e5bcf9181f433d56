"""The controller and every live broker answer Metadata with the same OfflineReplicas.

A local cluster on plain directories, three brokers with two dirs each: broker 3 is stopped
before a topic is created with replicas on it (they stay UNASSIGNED, never placed), and broker
1's first dir fails. Every partition's OfflineReplicas must then be the same whoever answers.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from protocol.rpc.metadata import MetadataRequest, MetadataResponse
from protocol.transport import RpcClient
from protocol.uuid import UNASSIGNED
from tools.cluster.cluster import LocalCluster
from tools.cluster.spec import ClusterSpec

pytestmark = [pytest.mark.slow]

TOPIC = "spread"
ASSIGNMENT = {0: [1, 3], 1: [3, 1], 2: [2, 3], 3: [3, 2], 4: [1, 2], 5: [2, 1]}

Answer = dict[int, tuple[list[int], list[int], list[str]]]


async def _metadata(url: str) -> MetadataResponse:
    async with RpcClient(url, timeout=10) as client:
        resp = await client.call("Metadata", MetadataRequest(Topics=None))
    assert isinstance(resp, MetadataResponse)
    return resp


def _answer(url: str) -> Answer:
    resp = asyncio.run(_metadata(url))
    (topic,) = [t for t in resp.Topics if t.Name == TOPIC]
    return {
        p.PartitionIndex: (
            sorted(p.OfflineReplicas),
            list(p.ReplicaNodes),
            [str(d) for d in p.ReplicaDirectories],
        )
        for p in topic.Partitions
    }


def test_controller_and_brokers_agree_on_offline_replicas(tmp_path: Path) -> None:
    cluster = LocalCluster.up(tmp_path / "cluster", ClusterSpec(brokers=3, dirs=2), timeout=120)
    try:
        cluster.stop_broker(3)
        cluster.wait_until(lambda v: v.broker(3).state == "fenced", 60, "broker 3 fenced")
        cluster.create_topic(TOPIC, 0, 0, assignment=ASSIGNMENT, timeout=60)
        # Fail the dir that holds broker 1's replica of partition 0, once the broker has placed it.
        view = cluster.wait_until(
            lambda v: (p := v.partition(TOPIC, 0)) is not None and p.directories[0].startswith("b1/d"),
            60,
            "broker 1 placing its replica of partition 0",
        )
        placed = view.partition(TOPIC, 0)
        assert placed is not None
        cluster.fail_dir(1, int(placed.directories[0].removeprefix("b1/d")))
        cluster.wait_until(lambda v: v.broker(1).online_dirs == 1, 60, "broker 1 reporting its failed dir")

        urls = {"controller": cluster.wait_leader().url} | {
            f"broker {b.node_id}": b.url for b in cluster.brokers if b.node_id != 3
        }
        deadline = time.monotonic() + 30
        while True:
            answers = {name: _answer(url) for name, url in urls.items()}
            if len({repr(a) for a in answers.values()}) == 1:
                break
            assert time.monotonic() < deadline, answers
            time.sleep(0.5)
    finally:
        cluster.down()

    answer = answers["controller"]
    for pid, (offline, replicas, dirs) in answer.items():
        assert replicas == ASSIGNMENT[pid]
        # Broker 3 is stopped: its replicas were never placed, and they are offline everywhere.
        if 3 in replicas:
            assert dirs[replicas.index(3)] == str(UNASSIGNED) and 3 in offline, (pid, answer)
        assert 2 not in offline, (pid, answer)
    # Broker 1's replica of partition 0 sat in the dir that failed.
    assert 1 in answer[0][0], answer
