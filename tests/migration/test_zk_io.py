"""The migration's ZooKeeper I/O against a real ZooKeeper: the claim, fenced writes, and a
round trip from ZooKeeper to records and back that leaves ZooKeeper as it was."""

from __future__ import annotations

import pytest

from controller.migration import zk_io
from controller.migration.zk_metadata import (
    ZkMetadata,
    begin_migration,
    end_migration,
    migration_records,
    zk_writes,
)
from controller.zk.model import LeaderAndIsr, TopicAssignment
from kraftpy.zookeeper import ZkClient
from protocol import znodes
from protocol.uuid import Uuid
from tests.migration.images import build, pre_migration, zk_broker
from tests.support.zk_server import ZkServer

pytestmark = [pytest.mark.real]

TOPIC_ID = Uuid.random()


async def _client(zk_server: ZkServer) -> ZkClient:
    c = ZkClient(zk_server.connect)
    await c.start()
    return c


async def _zk_mode_cluster(zk: ZkClient) -> None:
    """What a ZooKeeper-mode cluster leaves: a controller, its epoch, a topic, a config, a block."""
    await zk.create(znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(4))
    await zk.create(znodes.CONTROLLER, znodes.ControllerZnode(1, "1").to_bytes(), ephemeral=True)
    topic = znodes.TopicZnode({0: [1, 2], 1: [2, 1]}, TOPIC_ID)
    await zk.create(znodes.topic_path("orders"), topic.to_bytes(), makepath=True)
    for p, (leader, isr) in {0: (1, [1, 2]), 1: (2, [2])}.items():
        state = znodes.PartitionStateZnode(leader, 3, 4, isr)
        await zk.create(znodes.partition_state_path("orders", p), state.to_bytes(), makepath=True)
    await zk.set(
        znodes.partition_state_path("orders", 0), znodes.PartitionStateZnode(1, 4, 4, [1, 2]).to_bytes()
    )
    await zk.create(
        znodes.topic_config_path("orders"),
        znodes.EntityConfigZnode({"retention.ms": "60000"}).to_bytes(),
        makepath=True,
    )
    await zk.create(znodes.topic_path("doomed"), znodes.TopicZnode({0: [1]}, Uuid.random()).to_bytes())
    await zk.create(znodes.delete_topic_path("doomed"), b"", makepath=True)
    await zk.create(znodes.LATEST_PRODUCER_ID_BLOCK, znodes.ProducerIdBlockZnode(1, 0, 999).to_bytes())


async def test_read_copy_and_write_back_round_trip(zk_server: ZkServer) -> None:
    zk = await _client(zk_server)
    try:
        await _zk_mode_cluster(zk)
        metadata, deleting = await zk_io.read_zk_metadata(zk)
        assert deleting == ["doomed"]
        assert set(metadata.topics) == {"orders"}
        assert metadata.states[("orders", 0)] == LeaderAndIsr(1, 4, (1, 2), 4, zk_version=1)
        assert metadata.topic_configs["orders"] == {"retention.ms": "60000"}
        assert metadata.next_producer_id == 1000
        assert await zk_io.zk_broker_ids(zk, metadata) == {1, 2}

        base = build([zk_broker(1), zk_broker(2)], pre_migration())
        image = build([begin_migration(), *migration_records(metadata), *end_migration()], base)
        assert image.partition("orders", 0).partition_epoch == 1  # type: ignore[union-attr]
        assert zk_writes(metadata, ZkMetadata.of_image(image, 5)) == []
    finally:
        await zk.close()


async def test_the_claim_bumps_the_epoch_and_fences_older_claims(zk_server: ZkServer) -> None:
    zk = await _client(zk_server)
    try:
        await _zk_mode_cluster(zk)
        lead = zk_io.MigrationLeadership(3000, kraft_epoch=7)
        assert not (await zk_io.recover_migration_state(zk, lead)).initial_migration_done
        assert await zk_io.claim_controller(zk, lead, now_ms=123) == 5
        data, stat = await zk.get(znodes.CONTROLLER)  # type: ignore[misc]
        assert data == b'{"version":2,"brokerid":3000,"timestamp":"123","kraftControllerEpoch":7}'
        assert stat.ephemeral_owner == 0, "a KRaft controller's /controller is persistent"
        assert znodes.decode_controller_epoch((await zk.get(znodes.CONTROLLER_EPOCH))[0]) == 5  # type: ignore[index]
        migration = znodes.MigrationZnode.from_bytes((await zk.get(znodes.MIGRATION))[0])  # type: ignore[index]
        assert (migration.kraft_controller_id, migration.kraft_controller_epoch) == (3000, 7)

        older = zk_io.MigrationLeadership(3001, kraft_epoch=6)
        await zk_io.recover_migration_state(zk, older)
        assert await zk_io.claim_controller(zk, older) is None, "an older KRaft epoch cannot take over"

        newer = zk_io.MigrationLeadership(3001, kraft_epoch=8)
        await zk_io.recover_migration_state(zk, newer)
        assert await zk_io.claim_controller(zk, newer) == 6
        with pytest.raises(zk_io.MigrationFencedError):
            await zk_io.write_changes(zk, lead, [], 10, 7)
    finally:
        await zk.close()


async def test_writes_carry_the_offset_in_migration_and_create_what_is_missing(zk_server: ZkServer) -> None:
    zk = await _client(zk_server)
    try:
        await _zk_mode_cluster(zk)
        lead = zk_io.MigrationLeadership(3000, kraft_epoch=7)
        await zk_io.recover_migration_state(zk, lead)
        await zk_io.claim_controller(zk, lead)
        current, _ = await zk_io.read_zk_metadata(zk)
        new_id = Uuid.random()
        target = ZkMetadata(
            topics={**current.topics, "fresh": TopicAssignment(new_id, {0: (2, 1)})},
            states={**current.states, ("fresh", 0): LeaderAndIsr(2, 0, (2, 1), 5)},
            topic_configs={**current.topic_configs, "fresh": {}},
            next_producer_id=current.next_producer_id,
        )
        n = await zk_io.write_changes(zk, lead, zk_writes(current, target), 42, 7)
        assert n >= 4
        after, _ = await zk_io.read_zk_metadata(zk)
        assert after.topics["fresh"] == TopicAssignment(new_id, {0: (2, 1)})
        assert after.states[("fresh", 0)].isr == (2, 1)
        migration = znodes.MigrationZnode.from_bytes((await zk.get(znodes.MIGRATION))[0])  # type: ignore[index]
        assert migration.kraft_metadata_offset == 42 and migration.initial_migration_done

        gone = ZkMetadata(
            topics={"fresh": after.topics["fresh"]}, states={("fresh", 0): after.states[("fresh", 0)]}
        )
        await zk_io.write_changes(zk, lead, zk_writes(after, gone), 43, 7)
        assert await zk.get(znodes.topic_path("orders")) is None
        assert await zk.get(znodes.topic_config_path("orders")) is None
    finally:
        await zk.close()
