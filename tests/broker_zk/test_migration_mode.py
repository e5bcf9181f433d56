"""A ZooKeeper-mode broker in KIP-866 migration mode: whom it sends controller-bound requests to, what
a dir failure does to it, how it fences a KRaft controller's requests (sans-IO), and, as real
processes against a real ZooKeeper, its registration with a KRaft controller and its halt on a dir
failure (field bugs 18 and 22)."""

from __future__ import annotations

import asyncio
import json
import shutil
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker.startup import StartupError
from broker.zk.election import ControllerElection
from broker.zk.handlers import ZkBrokerApis
from broker.zk.metadata_cache import ZkMetadataCache
from broker.zk.migration import (
    ControllerKind,
    DirFailureAction,
    controller_target,
    dir_failure_action,
    fencing_broker_epoch,
)
from broker.zk.storage import load_zk_broker_dirs
from kraftpy.config import KafkaConfig
from kraftpy.storage.meta_properties import read_meta_properties
from kraftpy.zookeeper import ZkNodeExistsError
from protocol import znodes
from protocol.errors import Errors
from protocol.rpc.leader_and_isr import LeaderAndIsrRequest
from protocol.rpc.message import RpcMessage
from protocol.rpc.stop_replica import StopReplicaRequest
from protocol.rpc.update_metadata import UpdateMetadataRequest
from tests.migration.rig import CONTROLLER_ID, MigrationRig
from tests.support.zk_server import ZkServer
from tools.cluster.launcher import ProcessSet
from tools.cluster.layout import wait_until

VOTERS = {
    "zookeeper.metadata.migration.enable": "true",
    "controller.quorum.voters": "3000@127.0.0.1:9093,3001@127.0.0.1:9094",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
}
ZK_CZXID = 4294967331
"""A `/brokers/ids` czxid from a ZooKeeper server's first epoch: far above any KRaft broker epoch."""


def config(**extra: str) -> KafkaConfig:
    props = {
        "broker.id": "1",
        "zookeeper.connect": "127.0.0.1:2181",
        "listeners": "PLAINTEXT://127.0.0.1:9092",
        "log.dirs": "/tmp/d0,/tmp/d1",
        **extra,
    }
    return KafkaConfig.from_properties(props)


def claim(brokerid: int, kraft_epoch: int = -1) -> znodes.ControllerZnode:
    return znodes.ControllerZnode(brokerid=brokerid, timestamp="1700000000000", kraftControllerEpoch=kraft_epoch)


# ---- whom to ask ---------------------------------------------------------------------------------


def test_a_kraft_claim_on_controller_sends_requests_to_that_voter() -> None:
    cfg = config(**VOTERS)
    target = controller_target(cfg, 1, claim(3001, kraft_epoch=0))
    assert target.kind is ControllerKind.KRAFT and target.kraft
    assert target.url == "http://127.0.0.1:9094", "the voter named, not the first voter"
    assert not target.may_elect, "a KRaft controller's persistent claim is never contested"


def test_a_zookeeper_controller_is_found_among_the_brokers() -> None:
    cfg = config(**VOTERS)
    other = controller_target(cfg, 1, claim(2))
    assert (other.kind, other.controller_id, other.url, other.kraft) == (ControllerKind.ZK_BROKER, 2, None, False)
    assert controller_target(cfg, 1, claim(1)).kind is ControllerKind.SELF
    nobody = controller_target(cfg, 1, None)
    assert nobody.kind is ControllerKind.NONE and nobody.may_elect
    # kraftControllerEpoch decides, not the id: -1 is a ZooKeeper-mode controller whatever its id.
    assert controller_target(cfg, 1, claim(3000)).kind is ControllerKind.ZK_BROKER
    v1 = znodes.ControllerZnode.from_bytes(b'{"version":1,"brokerid":3000,"timestamp":"1"}')
    assert controller_target(cfg, 1, v1).kind is ControllerKind.ZK_BROKER


def test_a_kraft_controller_missing_from_the_voters_has_no_endpoint() -> None:
    assert controller_target(config(**VOTERS), 1, claim(3005, kraft_epoch=4)).url is None
    plain = controller_target(config(), 1, claim(3000, kraft_epoch=4))
    assert plain.kind is ControllerKind.KRAFT and plain.url is None and not plain.may_elect


# ---- dir failures ----------------------------------------------------------------------------------


def test_a_migrating_broker_halts_on_any_dir_failure() -> None:
    assert dir_failure_action(migrating=True, online_dirs_left=5) is DirFailureAction.HALT
    assert dir_failure_action(migrating=True, online_dirs_left=0) is DirFailureAction.HALT


def test_a_plain_broker_keeps_kip112_whichever_dir_fails() -> None:
    """Field bug 18: metadata.log.dir defaults to the first log dir; its failure alone is one more
    dir failure for a ZooKeeper-mode broker, notified, not a reason to stop."""
    assert config().metadata_log_dir_path == "/tmp/d0"
    assert dir_failure_action(migrating=False, online_dirs_left=1) is DirFailureAction.NOTIFY
    assert dir_failure_action(migrating=False, online_dirs_left=0) is DirFailureAction.NOTIFY_AND_STOP


# ---- fencing a KRaft controller's requests ------------------------------------------------------------


def test_the_broker_epoch_a_request_is_fenced_with() -> None:
    kraft = fencing_broker_epoch(kraft_controller_request=True, zk_epoch=ZK_CZXID, kraft_epoch=41)
    assert kraft == 41
    assert fencing_broker_epoch(kraft_controller_request=False, zk_epoch=ZK_CZXID, kraft_epoch=41) == ZK_CZXID
    assert fencing_broker_epoch(kraft_controller_request=True, zk_epoch=ZK_CZXID, kraft_epoch=None) == ZK_CZXID


class _LogManager:
    def __init__(self) -> None:
        self.published: list[Any] = []

    def publish(self, states: Any, deleted: Any, *, full: bool) -> None:
        self.published.append((list(states), list(deleted), full))

    def update_metadata(self, image: Any) -> None:
        pass

    def get_partition(self, topic_id: Any, partition: int) -> None:
        return None


def _apis(kraft_epoch: int | None) -> ZkBrokerApis:
    return ZkBrokerApis(
        1,
        log_manager=_LogManager(),  # type: ignore[arg-type]
        dataplane=None,
        cache=ZkMetadataCache(),
        broker_epoch=lambda: ZK_CZXID,
        kraft_broker_epoch=lambda: kraft_epoch,
    )


def _top(controller_id: int, epoch: int, broker_epoch: int, kraft: bool) -> dict[str, Any]:
    return {
        "ControllerId": controller_id,
        "isKRaftController": kraft,
        "ControllerEpoch": epoch,
        "BrokerEpoch": broker_epoch,
    }


def test_the_kraft_fields_exist_at_kafkas_versions() -> None:
    for model, version in ((LeaderAndIsrRequest, 7), (UpdateMetadataRequest, 8), (StopReplicaRequest, 4)):
        assert "isKRaftController" in model.model_fields
        req: RpcMessage = model.model_validate(_top(3000, 6, 41, True))
        back = model.from_wire(req.to_wire(version), version)
        assert back.isKRaftController is True  # type: ignore[attr-defined]
        assert (back.ControllerId, back.ControllerEpoch) == (3000, 6)  # type: ignore[attr-defined]


def test_requests_from_a_kraft_controller_are_fenced_by_zookeepers_controller_epoch() -> None:
    apis = _apis(kraft_epoch=41)

    async def run() -> None:
        # The last ZooKeeper-mode controller (broker 2, epoch 5), then the KRaft controller (epoch 6).
        zk_um = UpdateMetadataRequest.model_validate(_top(2, 5, ZK_CZXID, False))
        assert (await apis.update_metadata(zk_um, 7)).ErrorCode == Errors.NONE
        kraft_um = UpdateMetadataRequest.model_validate(_top(3000, 6, 41, True))
        assert (await apis.update_metadata(kraft_um, 8)).ErrorCode == Errors.NONE
        assert (apis.controller_id, apis.controller_epoch) == (3000, 6)
        assert apis.cache.controller_id == 3000, "a controller id that names no broker is kept as is"
        lai = LeaderAndIsrRequest.model_validate({**_top(3000, 6, 41, True), "TopicStates": []})
        assert (await apis.leader_and_isr(lai, 7)).ErrorCode == Errors.NONE
        sr = StopReplicaRequest.model_validate(_top(3000, 6, 41, True))
        assert (await apis.stop_replica(sr, 4)).ErrorCode == Errors.NONE
        # The deposed ZooKeeper-mode controller is fenced as before.
        assert (await apis.update_metadata(zk_um, 7)).ErrorCode == Errors.STALE_CONTROLLER_EPOCH
        old_lai = LeaderAndIsrRequest.model_validate({**_top(2, 5, ZK_CZXID, False), "TopicStates": []})
        assert (await apis.leader_and_isr(old_lai, 6)).ErrorCode == Errors.STALE_CONTROLLER_EPOCH
        # A KRaft controller naming an older KRaft registration of this broker is fenced too.
        stale = StopReplicaRequest.model_validate(_top(3000, 6, 40, True))
        assert (await apis.stop_replica(stale, 4)).ErrorCode == Errors.STALE_BROKER_EPOCH

    asyncio.run(run())


def test_a_plain_broker_fences_by_its_znode_epoch_whoever_sends() -> None:
    apis = _apis(kraft_epoch=None)

    async def run() -> None:
        low = UpdateMetadataRequest.model_validate(_top(3000, 6, 41, True))
        assert (await apis.update_metadata(low, 8)).ErrorCode == Errors.STALE_BROKER_EPOCH
        ok = UpdateMetadataRequest.model_validate(_top(2, 6, ZK_CZXID, False))
        assert (await apis.update_metadata(ok, 7)).ErrorCode == Errors.NONE

    asyncio.run(run())


# ---- the election under a KRaft controller's claim -------------------------------------------------


class _FakeZk:
    """The part of ZkClient the election uses; `/controller` already exists when `holder` is set."""

    def __init__(self) -> None:
        self.multis = 0
        self.holder: bytes | None = None
        self.watch: Callable[[tuple[bytes, object] | None], None] | None = None

    def watch_data(self, path: str, cb: Callable[[tuple[bytes, object] | None], None]) -> None:
        self.watch = cb

    async def get(self, path: str) -> tuple[bytes, object]:
        return b"5", SimpleNamespace(version=5)

    async def multi(self, ops: list[Any]) -> None:
        self.multis += 1
        if self.holder is not None:
            raise ZkNodeExistsError("/controller")


def test_no_election_while_a_kraft_controller_holds_controller() -> None:
    async def run() -> None:
        zk = _FakeZk()
        elected: list[int] = []
        resigned: list[bool] = []

        async def on_elected(epoch: int, version: int) -> None:
            elected.append(epoch)

        async def on_resigned() -> None:
            resigned.append(True)

        election = ControllerElection(zk, 1, on_elected=on_elected, on_resigned=on_resigned)  # type: ignore[arg-type]
        election.start()
        assert zk.watch is not None
        zk.watch(None)  # no controller yet: this broker wins
        await asyncio.sleep(0.01)
        assert elected == [6] and election.active
        zk.holder = claim(CONTROLLER_ID, kraft_epoch=2).to_bytes()
        zk.watch((zk.holder, None))
        await asyncio.sleep(0.01)
        assert resigned == [True] and not election.active
        assert election.controller_id == CONTROLLER_ID
        assert election.znode is not None and election.znode.kraftControllerEpoch == 2
        assert zk.multis == 1, "the KRaft controller's claim is not contested"
        cfg = config(**VOTERS)
        assert controller_target(cfg, 1, election.znode).url == "http://127.0.0.1:9093"

    asyncio.run(run())


# ---- real processes ------------------------------------------------------------------------------------


@pytest.fixture
def rig(tmp_path: Path, zk_server: ZkServer) -> Iterator[MigrationRig]:
    procs = ProcessSet(tmp_path / "procs")
    rig = MigrationRig.build(tmp_path, zk_server, procs, brokers=1, dirs=2)
    try:
        rig.zk_cluster.start()
        yield rig
    finally:
        procs.stop_all()


def _health(port: int) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            return dict(json.loads(r.read()))
    except OSError:
        return {}


@pytest.mark.real
def test_a_migrating_broker_registers_with_the_kraft_controller(rig: MigrationRig) -> None:
    node = rig.zk_cluster.brokers[1]
    stale_log = node.log_dirs[1] / "__cluster_metadata-0"
    stale_log.mkdir(parents=True)
    (stale_log / "00000000000000000000.log").write_bytes(b"from an earlier attempt")
    rig.start_controller()
    rig.wait_controller(driver="WAIT_FOR_BROKERS", zk_state="PRE_MIGRATION", timeout=30)
    rig.roll_migrating(1)

    dir_ids = set()
    for d in node.log_dirs:
        meta = read_meta_properties(d)
        assert int(meta.version) == 0 and meta.directory_id is not None
        dir_ids.add(str(meta.directory_id))
    assert not stale_log.exists(), "the local metadata log is deleted, whichever dir holds it"

    def registered() -> dict[str, Any] | None:
        brokers = {b["brokerId"]: b for b in rig.image().get("brokers", [])}
        b = brokers.get(1)
        return b if b is not None and not b["fenced"] else None

    reg = wait_until("broker 1 registered in KRaft and unfenced", registered, 30)
    assert reg["isMigratingZkBroker"] is True
    assert set(reg["logDirs"]) == dir_ids
    assert any(ep["name"] == "PLAINTEXT" and ep["port"] == node.port for ep in reg["listeners"])

    # The KRaft controller claims /controller and becomes this broker's controller.
    h = rig.wait_controller(driver="DUAL_WRITE", timeout=30)
    znode = znodes.ControllerZnode.from_bytes(rig.zk_get(znodes.CONTROLLER) or b"")
    assert znode.brokerid == CONTROLLER_ID and znode.kraftControllerEpoch >= 0

    def told_by_kraft() -> dict[str, Any] | None:
        bh = _health(node.port)
        c = bh.get("controller", {})
        ok = c.get("controller_id") == CONTROLLER_ID and c.get("controller_epoch") == h["zk_controller_epoch"]
        return bh if ok else None

    bh = wait_until("the broker to follow the KRaft controller", told_by_kraft, 20)
    assert bh["controller"]["active"] is False
    assert bh["migration"]["registered"] is True and bh["migration"]["fenced"] is False

    # Controlled shutdown through the KRaft lifecycle, not ZooKeeper's ControlledShutdown.
    assert node.proc is not None
    assert node.proc.terminate(timeout=30) == 0
    tail = node.proc.log_tail(200)
    assert "Notifying KRaft of controlled shutdown" in tail
    assert "controlled shutdown attempt failed" not in tail


@pytest.mark.real
def test_a_migrating_broker_halts_when_one_log_dir_fails(rig: MigrationRig) -> None:
    """No KRaft controller needed: the halt comes from the dir, before any KIP-112 notification."""
    rig.roll_migrating(1)
    node = rig.zk_cluster.brokers[1]
    assert node.proc is not None
    shutil.rmtree(node.log_dirs[1])
    wait_until("the broker to halt", lambda: node.proc.returncode is not None or None, 20)  # type: ignore[union-attr]
    assert node.proc.returncode not in (0, None)
    tail = node.proc.log_tail(80)
    assert "a broker in migration mode stops on any dir failure" in tail
    assert "Traceback" not in tail
    assert "log dir failure notified" not in tail, "a migrating broker writes no KIP-112 notification"


@pytest.mark.real
def test_a_plain_broker_survives_the_failure_of_its_metadata_log_dir(rig: MigrationRig) -> None:
    """Field bug 18: metadata.log.dir (here the first log dir) failing alone does not stop a
    ZooKeeper-mode broker that is not migrating; it notifies the controller (KIP-112)."""
    node = rig.zk_cluster.brokers[1]
    assert node.proc is not None
    shutil.rmtree(node.log_dirs[0])
    proc = node.proc
    wait_until("the KIP-112 notification", lambda: "log dir failure notified" in proc.log_tail(200) or None, 20)

    def offline() -> dict[str, Any] | None:
        h = _health(node.port)
        return h if str(node.log_dirs[0]) in h.get("dirs", {}).get("offline", {}) else None

    wait_until("the dir offline", offline, 10)
    assert proc.alive and proc.returncode is None, proc.log_tail(40)


def test_a_migrating_broker_does_not_start_with_an_unusable_dir(tmp_path: Path) -> None:
    good, bad = tmp_path / "d0", tmp_path / "d1"
    bad.write_bytes(b"a file where a dir should be")
    props = {"log.dirs": f"{good},{bad}"}
    plain = load_zk_broker_dirs(config(**props), "MRxngbOiRYuudE8ZvxAhag")
    assert list(plain.log_dirs) == [str(good)] and str(bad) in plain.offline, "KIP-112: it stays offline"
    with pytest.raises(StartupError, match="migration mode stops on any dir failure"):
        load_zk_broker_dirs(config(**props, **VOTERS), "MRxngbOiRYuudE8ZvxAhag", migrating=True)
