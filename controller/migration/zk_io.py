"""The migration's ZooKeeper I/O: read the metadata, claim the controller, write changes behind a fence.

Every write after the claim is one multi-op led by `check /controller_epoch` (the version this
controller's claim left) and `/migration` (checked, or set with the new log offset in the last
multi of a write): a ZooKeeper controller elected meanwhile, or another KRaft controller writing,
makes the whole multi fail, and `MigrationFencedError` ends this controller's writes (Kafka's
retryMigrationRequestsUntilConnected treats a BADVERSION on /migration as fatal).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import structlog

from controller.migration.zk_metadata import DeleteTree, Upsert, ZkChange, ZkMetadata
from controller.zk import zk_state
from kraftpy.zookeeper import (
    CheckOp,
    CreateOp,
    DeleteOp,
    SetOp,
    ZkBadVersionError,
    ZkClient,
    ZkNodeExistsError,
    ZnodeStat,
)
from kraftpy.zookeeper.client import Op
from protocol import znodes

log = structlog.get_logger(__name__)

# ZooKeeper refuses a request over jute.maxbuffer (1 MiB by default): keep each multi well below.
OPS_PER_MULTI = 200


class MigrationFencedError(Exception):
    """Another controller moved /controller_epoch or /migration: this one must stop writing."""


@dataclass
class MigrationLeadership:
    """What this controller holds in ZooKeeper: its claim and the znode versions that fence its writes."""

    kraft_controller_id: int
    kraft_epoch: int
    zk_controller_epoch: int = -1
    controller_epoch_version: int = -1
    migration: znodes.MigrationZnode | None = None
    migration_version: int = -1


# ---- reading ------------------------------------------------------------------------------------


async def read_zk_metadata(zk: ZkClient) -> tuple[ZkMetadata, list[str]]:
    """ZooKeeper's topics, partition states, topic configs and producer id block; and the topics
    waiting in /admin/delete_topics, which the copy leaves out."""
    deleting = sorted(await zk.get_children(znodes.DELETE_TOPICS) or [])
    names = [n for n in await zk.get_children(znodes.TOPICS) or [] if n not in deleting]
    topics, states = await zk_state.read_topics(zk, names)
    found_configs = await zk.get_many([znodes.topic_config_path(n) for n in topics])
    configs = {name: _topic_config(name, found) for name, found in zip(topics, found_configs, strict=True)}
    next_id = None
    found = await zk.get(znodes.LATEST_PRODUCER_ID_BLOCK)
    if found is not None and found[0]:
        try:
            next_id = znodes.ProducerIdBlockZnode.from_bytes(found[0]).block_end + 1
        except znodes.ZnodeDecodeError as e:
            log.warning("ignoring an unreadable producer id block", error=str(e))
    return ZkMetadata(topics, states, configs, next_id), deleting


def _topic_config(name: str, found: tuple[bytes, ZnodeStat] | None) -> dict[str, str]:
    if found is None or not found[0]:
        return {}
    try:
        return znodes.EntityConfigZnode.from_bytes(found[0]).config
    except znodes.ZnodeDecodeError as e:
        log.warning("ignoring an unreadable topic config", topic=name, error=str(e))
        return {}


async def zk_broker_ids(zk: ZkClient, metadata: ZkMetadata | None = None) -> set[int]:
    """Brokers ZooKeeper knows: registered under /brokers/ids, and named in an assignment."""
    ids = {int(c) for c in await zk.get_children(znodes.BROKER_IDS) or [] if c.isdigit()}
    if metadata is not None:
        for assignment in metadata.topics.values():
            for replicas in assignment.partitions.values():
                ids.update(replicas)
    return ids


async def recover_migration_state(zk: ZkClient, lead: MigrationLeadership) -> znodes.MigrationZnode:
    """/migration as it is, created with Kafka's initial values when absent."""
    for _ in range(3):
        found = await zk.get(znodes.MIGRATION)
        if found is not None:
            lead.migration = znodes.MigrationZnode.from_bytes(found[0])
            lead.migration_version = found[1].version
            return lead.migration
        try:
            await zk.create(znodes.MIGRATION, znodes.MigrationZnode().to_bytes())
        except ZkNodeExistsError:
            continue
        lead.migration, lead.migration_version = znodes.MigrationZnode(), 0
        return lead.migration
    raise RuntimeError("/migration keeps appearing and disappearing")


# ---- the claim --------------------------------------------------------------------------------------


async def claim_controller(zk: ZkClient, lead: MigrationLeadership, now_ms: int | None = None) -> int | None:
    """Kafka's tryRegisterKRaftControllerAsActiveController: one multi bumping /controller_epoch
    and replacing /controller with a persistent znode naming this KRaft controller. None when
    /controller holds an equal or newer KRaft claim, or the multi lost a race (try again)."""
    current = await zk.get(znodes.CONTROLLER)
    ops: list[Op] = []
    if current is not None:
        data, stat = current
        try:
            holder = znodes.ControllerZnode.from_bytes(data)
        except znodes.ZnodeDecodeError:
            holder = None
        if holder is not None and holder.kraftControllerEpoch >= lead.kraft_epoch:
            log.info(
                "/controller holds an equal or newer KRaft claim",
                holder=holder.brokerid,
                holder_epoch=holder.kraftControllerEpoch,
                our_epoch=lead.kraft_epoch,
            )
            return None
        ops.append(DeleteOp(znodes.CONTROLLER, version=stat.version))
    epoch_found = await zk.get(znodes.CONTROLLER_EPOCH)
    if epoch_found is None:
        new_epoch = 1
        ops.insert(0, CreateOp(znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(new_epoch)))
        new_version = 0
    else:
        new_epoch = znodes.decode_controller_epoch(epoch_found[0]) + 1
        ops.insert(
            0,
            SetOp(znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(new_epoch), epoch_found[1].version),
        )
        new_version = epoch_found[1].version + 1
    stamp = now_ms if now_ms is not None else int(time.time() * 1000)
    ops.append(
        CreateOp(
            znodes.CONTROLLER,
            znodes.ControllerZnode(
                brokerid=lead.kraft_controller_id, timestamp=str(stamp), kraftControllerEpoch=lead.kraft_epoch
            ).to_bytes(),
        )
    )
    try:
        await zk.multi(ops)
    except (ZkBadVersionError, ZkNodeExistsError) as e:
        log.info("lost a race claiming /controller; will retry", error=str(e))
        return None
    lead.zk_controller_epoch, lead.controller_epoch_version = new_epoch, new_version
    # Kafka then writes /migration unconditionally, naming this controller, to learn its version.
    claimed = znodes.MigrationZnode(
        lead.kraft_controller_id,
        lead.kraft_epoch,
        lead.migration.kraft_metadata_offset if lead.migration else -1,
        lead.migration.kraft_metadata_epoch if lead.migration else -1,
    )
    stat = await zk.set(znodes.MIGRATION, claimed.to_bytes(), version=-1)
    lead.migration, lead.migration_version = claimed, stat.version
    log.info(
        "claimed ZooKeeper controller leadership", zk_controller_epoch=new_epoch, kraft_epoch=lead.kraft_epoch
    )
    return new_epoch


# ---- writing ---------------------------------------------------------------------------------------


async def write_changes(
    zk: ZkClient, lead: MigrationLeadership, changes: list[ZkChange], offset: int, offset_epoch: int
) -> int:
    """Make `changes` in multis fenced by the claim; the last one records `offset` in /migration.
    Returns the number of ZooKeeper operations written."""
    ops = await _expand(zk, changes)
    assert lead.migration is not None
    updated = znodes.MigrationZnode(lead.kraft_controller_id, lead.kraft_epoch, offset, offset_epoch)
    chunks = [ops[i : i + OPS_PER_MULTI] for i in range(0, len(ops), OPS_PER_MULTI)] or [[]]
    for i, chunk in enumerate(chunks):
        last = i == len(chunks) - 1
        fence: list[Op] = [CheckOp(znodes.CONTROLLER_EPOCH, lead.controller_epoch_version)]
        if last:
            fence.append(SetOp(znodes.MIGRATION, updated.to_bytes(), lead.migration_version))
        else:
            fence.append(CheckOp(znodes.MIGRATION, lead.migration_version))
        try:
            await zk.multi(fence + chunk)
        except ZkBadVersionError as e:
            if e.index in (0, 1):
                raise MigrationFencedError(
                    f"{'/controller_epoch' if e.index == 0 else '/migration'} changed under this controller"
                ) from e
            raise
    lead.migration = updated
    lead.migration_version += 1
    return len(ops)


async def _expand(zk: ZkClient, changes: list[ZkChange]) -> list[Op]:
    ops: list[Op] = []
    created: set[str] = set()
    deleted: set[str] = set()
    for change in changes:
        if isinstance(change, DeleteTree):
            for op in await zk_state.delete_tree_ops(zk, change.path):
                if op.path not in deleted:
                    deleted.add(op.path)
                    ops.append(op)
            continue
        assert isinstance(change, Upsert)
        path = change.path
        exists = path not in deleted and (path in created or await zk.exists(path) is not None)
        if exists:
            ops.append(SetOp(path, change.data))
            continue
        parts = path.split("/")
        for i in range(2, len(parts)):
            parent = "/".join(parts[:i])
            if parent in created:
                continue
            if parent in deleted or await zk.exists(parent) is None:
                ops.append(CreateOp(parent, b""))
            created.add(parent)
        ops.append(CreateOp(path, change.data))
        created.add(path)
    return ops
