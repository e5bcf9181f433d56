"""What the ZooKeeper-mode controller reads from and writes to ZooKeeper, as the core's values.

Reading skips, with a warning, any znode that does not decode (malformed JSON, an unknown version):
one bad znode must not stop the controller from managing everything else. Writing turns the core's
writes into one multi-op, led by a check of `/controller_epoch` at the version this controller
wrote, so a controller that lost the election cannot write at all.
"""

from __future__ import annotations

from collections.abc import Iterable

import structlog

from controller.zk.core import (
    DeleteLogDirEventWrite,
    DeleteTopicRequestWrite,
    DeleteTopicWrite,
    PartitionStateWrite,
    ZkControllerCore,
    ZkSnapshot,
    ZkWrite,
)
from controller.zk.model import Endpoint, LeaderAndIsr, LiveBroker, TopicAssignment, TopicPartition
from kraftpy.zookeeper import CheckOp, CreateOp, DeleteOp, SetOp, ZkClient, ZnodeStat
from protocol import znodes

log = structlog.get_logger("controller.zk")


async def read_snapshot(zk: ZkClient) -> ZkSnapshot:
    live = await read_live_brokers(zk, await zk.get_children(znodes.BROKER_IDS) or [])
    topics, states = await read_topics(zk, await zk.get_children(znodes.TOPICS) or [])
    deletions = await zk.get_children(znodes.DELETE_TOPICS) or []
    events = await zk.get_children(znodes.LOG_DIR_EVENT_NOTIFICATION) or []
    return ZkSnapshot(live, topics, states, sorted(deletions), sorted(events))


async def read_live_brokers(zk: ZkClient, children: Iterable[str]) -> dict[int, LiveBroker]:
    out: dict[int, LiveBroker] = {}
    for child in children:
        try:
            broker_id = int(child)
        except ValueError:
            log.warning("ignoring a znode that is not a broker id", path=f"{znodes.BROKER_IDS}/{child}")
            continue
        found = await zk.get(znodes.broker_path(broker_id))
        if found is None:
            continue  # gone between the listing and the read
        data, stat = found
        try:
            info = znodes.BrokerIdZnode.from_bytes(data)
        except znodes.ZnodeDecodeError as e:
            log.warning("ignoring an unreadable broker registration", broker=broker_id, error=str(e))
            continue
        out[broker_id] = LiveBroker(broker_id, stat.czxid, _endpoints(info), info.rack)
    return out


def _endpoints(info: znodes.BrokerIdZnode) -> tuple[Endpoint, ...]:
    out = []
    for text in info.endpoints:
        name, _, rest = text.partition("://")
        host, _, port = rest.rpartition(":")
        try:
            out.append(
                Endpoint(
                    name,
                    host.strip("[]"),
                    int(port),
                    info.listener_security_protocol_map.get(name, "PLAINTEXT"),
                )
            )
        except ValueError:
            log.warning("ignoring an unreadable endpoint", endpoint=text)
    return tuple(out)


async def read_topics(
    zk: ZkClient, names: Iterable[str]
) -> tuple[dict[str, TopicAssignment], dict[TopicPartition, LeaderAndIsr]]:
    """The named topics' assignments and their partitions' states, read in two pipelined rounds."""
    ordered = sorted(names)
    topics: dict[str, TopicAssignment] = {}
    for name, found in zip(ordered, await zk.get_many([znodes.topic_path(n) for n in ordered]), strict=True):
        assignment = parse_topic(name, found)
        if assignment is not None:
            topics[name] = assignment
    tps = [(name, p) for name, a in topics.items() for p in a.partitions]
    states: dict[TopicPartition, LeaderAndIsr] = {}
    found_states = await zk.get_many([znodes.partition_state_path(*tp) for tp in tps])
    for tp, found in zip(tps, found_states, strict=True):
        st = parse_partition_state(tp, found)
        if st is not None:
            states[tp] = st
    return topics, states


async def read_topic(zk: ZkClient, name: str) -> TopicAssignment | None:
    return parse_topic(name, await zk.get(znodes.topic_path(name)))


async def read_partition_state(zk: ZkClient, tp: TopicPartition) -> LeaderAndIsr | None:
    return parse_partition_state(tp, await zk.get(znodes.partition_state_path(*tp)))


def parse_topic(name: str, found: tuple[bytes, ZnodeStat] | None) -> TopicAssignment | None:
    if found is None:
        return None
    try:
        topic = znodes.TopicZnode.from_bytes(found[0])
    except znodes.ZnodeDecodeError as e:
        log.warning("ignoring an unreadable topic znode", topic=name, error=str(e))
        return None
    if topic.topic_id is None:
        log.warning("ignoring a topic znode without a topic id", topic=name)
        return None
    return TopicAssignment(topic.topic_id, {int(p): tuple(r) for p, r in topic.partitions.items()})


def parse_partition_state(tp: TopicPartition, found: tuple[bytes, ZnodeStat] | None) -> LeaderAndIsr | None:
    if found is None:
        return None
    data, stat = found
    try:
        st = znodes.PartitionStateZnode.from_bytes(data)
    except znodes.ZnodeDecodeError as e:
        log.warning("ignoring an unreadable partition state", partition=f"{tp[0]}-{tp[1]}", error=str(e))
        return None
    return LeaderAndIsr(
        st.leader, st.leader_epoch, tuple(st.isr), st.controller_epoch, stat.version, st.leader_recovery_state
    )


async def read_log_dir_events(zk: ZkClient, children: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name in sorted(children):
        found = await zk.get(f"{znodes.LOG_DIR_EVENT_NOTIFICATION}/{name}")
        if found is None:
            continue
        try:
            out[name] = znodes.LogDirEventZnode.from_bytes(found[0]).broker
        except znodes.ZnodeDecodeError as e:
            log.warning("ignoring an unreadable log dir event", name=name, error=str(e))
    return out


async def write(zk: ZkClient, epoch_zk_version: int, writes: list[ZkWrite], core: ZkControllerCore) -> None:
    ops: list[CheckOp | CreateOp | SetOp | DeleteOp] = [CheckOp(znodes.CONTROLLER_EPOCH, epoch_zk_version)]
    parents: set[str] = set()

    async def parent(path: str) -> None:
        # Each missing parent once, however many of its partitions this write creates.
        if path not in parents:
            parents.add(path)
            if await zk.exists(path) is None:
                ops.append(CreateOp(path, b""))

    for w in writes:
        if isinstance(w, PartitionStateWrite):
            st = w.state
            data = znodes.PartitionStateZnode(
                leader=st.leader,
                leader_epoch=st.leader_epoch,
                controller_epoch=st.controller_epoch,
                isr=list(st.isr),
                leader_recovery_state=st.leader_recovery_state,
            ).to_bytes()
            topic, p = w.tp
            if w.expected_version is None:
                await parent(znodes.partitions_path(topic))
                await parent(znodes.partition_path(topic, p))
                ops.append(CreateOp(znodes.partition_state_path(topic, p), data))
            else:
                ops.append(SetOp(znodes.partition_state_path(topic, p), data, version=w.expected_version))
        elif isinstance(w, DeleteTopicWrite):
            ops += await delete_tree_ops(zk, znodes.topic_path(w.topic))
            ops += await delete_tree_ops(zk, znodes.topic_config_path(w.topic))
            ops += await delete_tree_ops(zk, znodes.delete_topic_path(w.topic))
        elif isinstance(w, DeleteTopicRequestWrite):
            ops += await delete_tree_ops(zk, znodes.delete_topic_path(w.topic))
        elif isinstance(w, DeleteLogDirEventWrite):
            ops += await delete_tree_ops(zk, f"{znodes.LOG_DIR_EVENT_NOTIFICATION}/{w.name}")
    await zk.multi(ops)


async def delete_tree_ops(zk: ZkClient, path: str) -> list[DeleteOp]:
    """Deletes of `path` and everything under it, children first; nothing when it is gone."""
    children = await zk.get_children(path)
    if children is None:
        return []
    ops: list[DeleteOp] = []
    for child in sorted(children):
        ops += await delete_tree_ops(zk, f"{path}/{child}")
    ops.append(DeleteOp(path))
    return ops


async def reload_partition_states(zk: ZkClient, core: ZkControllerCore, writes: list[ZkWrite]) -> None:
    for w in writes:
        if isinstance(w, PartitionStateWrite):
            st = await read_partition_state(zk, w.tp)
            if st is not None:
                core.states[w.tp] = st


def broker_url(broker: LiveBroker, listener: str | None) -> str | None:
    ep = broker.endpoint(listener) or broker.endpoint()
    return f"http://{ep.host}:{ep.port}" if ep is not None else None
