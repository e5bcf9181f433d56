"""BrokerRegistration and ControllerRegistration from their records, and when a dir counts as online."""

from __future__ import annotations

from kraftpy.metadata import BrokerRegistration, ControllerRegistration, Endpoint, VersionRange
from protocol import metadata_records as mr
from protocol.uuid import LOST, MIGRATING, UNASSIGNED, Uuid

A, B = Uuid.from_longs(700, 1), Uuid.from_longs(700, 2)


def registered(*dirs: Uuid) -> BrokerRegistration:
    return BrokerRegistration(
        id=1, epoch=10, incarnation_id=Uuid.random(), directories=dirs, registered_directories=frozenset(dirs)
    )


def test_directory_online_rules() -> None:
    a, b = Uuid.random(), Uuid.random()
    assert registered(a).directory_online(UNASSIGNED) and registered(a).directory_online(MIGRATING)
    assert not registered(a).directory_online(LOST)
    assert registered(a, b).directory_online(a) and not registered(a).directory_online(b)
    # A registration without directories (before JBOD's metadata.version) counts every dir online.
    assert registered().directory_online(b)


def test_unplaced_replicas_are_offline_on_a_multi_dir_broker_only() -> None:
    for unplaced in (UNASSIGNED, MIGRATING):
        assert registered(A).directory_online(unplaced)
        assert registered().directory_online(unplaced)
        assert not registered(A, B).directory_online(unplaced)
    assert not registered().directory_online(LOST)


def test_a_dir_reported_offline_stays_registered_but_is_offline() -> None:
    reg = registered(A, B).with_changes(directories=(A,))
    assert reg.multi_dir and not reg.directory_online(B) and reg.directory_online(A)
    assert reg.directory_placed(B) and not reg.directory_placed(Uuid.from_longs(700, 3))


def test_broker_registration_from_record_sorts_dirs_listeners_and_features() -> None:
    rec = mr.RegisterBrokerRecord(
        BrokerId=4,
        BrokerEpoch=12,
        IncarnationId=Uuid.from_longs(1, 1),
        EndPoints=[
            mr.RegisterBrokerRecord.BrokerEndpoint(Name="Z", Host="h", Port=2, SecurityProtocol=0),
            mr.RegisterBrokerRecord.BrokerEndpoint(Name="A", Host="h", Port=1, SecurityProtocol=0),
        ],
        Features=[
            mr.RegisterBrokerRecord.BrokerFeature(Name="z", MinSupportedVersion=0, MaxSupportedVersion=1),
            mr.RegisterBrokerRecord.BrokerFeature(Name="a", MinSupportedVersion=1, MaxSupportedVersion=2),
        ],
        Rack="r",
        Fenced=True,
        LogDirs=[B, A],
    )
    reg = BrokerRegistration.from_record(rec)
    assert reg.directories == (A, B) and reg.registered_directories == {A, B}
    assert [e.name for e in reg.listeners] == ["A", "Z"]
    assert reg.listener("Z") == Endpoint("Z", "h", 2, 0) and reg.endpoint() == Endpoint("A", "h", 1, 0)
    assert reg.supported_features == (("a", VersionRange(1, 2)), ("z", VersionRange(0, 1)))
    assert (reg.fenced, reg.state, reg.is_active()) == (True, "fenced", False)


def test_controller_registration_from_record() -> None:
    rec = mr.RegisterControllerRecord(
        ControllerId=3000,
        IncarnationId=Uuid.from_longs(2, 2),
        ZkMigrationReady=False,
        EndPoints=[
            mr.RegisterControllerRecord.ControllerEndpoint(Name="C", Host="h", Port=9093, SecurityProtocol=0)
        ],
        Features=[],
    )
    reg = ControllerRegistration.from_record(rec)
    assert reg.id == 3000 and reg.listeners == (Endpoint("C", "h", 9093, 0),) and not reg.zk_migration_ready
