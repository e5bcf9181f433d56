"""Metadata images for the migration tests, built by replaying records as the controller writes them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.metadata import ZkMigrationState
from protocol import metadata_records as mr
from protocol.uuid import Uuid

MV_3_9 = 21


def build(records: Iterable[Any], base: MetadataImage = MetadataImage.EMPTY) -> MetadataImage:
    d = MetadataDelta(base)
    offset = base.offset + 1
    for rec in records:
        d.replay(getattr(rec, "message", rec), offset)
        offset += 1
    return d.apply()


def migration_state(state: ZkMigrationState) -> Any:
    return mr.ZkMigrationStateRecord(ZkMigrationState=int(state))


def controller(node_id: int, ready: bool = True) -> Any:
    return mr.RegisterControllerRecord(
        ControllerId=node_id, IncarnationId=Uuid.random(), ZkMigrationReady=ready, EndPoints=[], Features=[]
    )


def zk_broker(broker_id: int, epoch: int = 10, dirs: Iterable[Uuid] = ()) -> Any:
    return mr.RegisterBrokerRecord(
        BrokerId=broker_id,
        IsMigratingZkBroker=True,
        IncarnationId=Uuid.random(),
        BrokerEpoch=epoch,
        EndPoints=[],
        Features=[],
        Rack=None,
        Fenced=False,
        LogDirs=list(dirs),
    )


def pre_migration(voters: Iterable[int] = (3000,), ready: bool = True) -> MetadataImage:
    return build(
        [
            mr.FeatureLevelRecord(Name="metadata.version", FeatureLevel=MV_3_9),
            migration_state(ZkMigrationState.PRE_MIGRATION),
        ]
        + [controller(v, ready) for v in voters]
    )
