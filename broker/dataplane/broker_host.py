"""The data plane inside `broker.server.BrokerServer`: the host adapter and the one-call attach.

The broker shell owns which replica lives in which dir and opens the logs
(`broker.log_manager`); this adapter answers the data plane's questions from it, and chains
the shell's `on_change` callback (called after each publish, after logs are created, after a dir
failure) so the data plane looks again at once.

Wiring in `kraftpy-broker` (broker/main.py), after `await server.start()`:

    dataplane = await attach_dataplane(server)
    await server.stopped.wait()
    await dataplane.stop()          # before the shell closes the logs
    return await server.run()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.dataplane import DataPlane
from broker.dataplane.host import ConfiguredLogDir, LocalLog
from kraftpy.config import KafkaConfig
from kraftpy.image import MetadataImage, TopicIdPartition
from protocol.errors import Errors, KafkaError
from protocol.transport import RpcClient

if TYPE_CHECKING:
    from broker.server import BrokerServer

CONTROLLER_TIMEOUT_S = 10.0


class BrokerServerHost:
    def __init__(self, server: BrokerServer) -> None:
        self.server = server
        self._controller = RpcClient(server.cfg.controller_endpoint().url, timeout=CONTROLLER_TIMEOUT_S)

    @property
    def node_id(self) -> int:
        return self.server.broker_id

    @property
    def cluster_id(self) -> str:
        return self.server.dirs.cluster_id

    @property
    def config(self) -> KafkaConfig:
        return self.server.cfg

    @property
    def broker_epoch(self) -> int:
        lc = self.server.lifecycle
        return lc.broker_epoch if lc is not None and lc.registered else -1

    @property
    def image(self) -> MetadataImage:
        lm = self.server.log_manager
        if lm is None or lm.image is None or not self.server.published:
            return MetadataImage.EMPTY
        return lm.image

    @property
    def controller(self) -> RpcClient:
        return self._controller

    async def local_log(self, tp: TopicIdPartition) -> LocalLog | None:
        lm = self.server.log_manager
        if lm is None:
            return None
        hp = lm.get_partition(tp.topic_id, tp.partition)
        if hp is None:
            return None
        if not hp.online or hp.log_dir is None:
            raise KafkaError(
                Errors.KAFKA_STORAGE_ERROR, f"{tp} is offline: {hp.offline_reason or 'log dir offline'}"
            )
        if not hp.created.is_set():
            return None
        log = await hp.log()
        return LocalLog(log, hp.log_dir)

    def configured_log_dirs(self) -> list[ConfiguredLogDir]:
        dirs = self.server.dirs
        by_id = self.server.log_dirs
        out = [ConfiguredLogDir(path, dir_id, by_id.get(dir_id)) for path, dir_id in dirs.log_dirs.items()]
        out += [ConfiguredLogDir(path, None, None) for path in dirs.offline]
        order = {p: i for i, p in enumerate(self.server.cfg.log_dir_list)}
        return sorted(out, key=lambda d: order.get(d.path, len(order)))

    async def close(self) -> None:
        await self._controller.close()


async def attach_dataplane(server: BrokerServer) -> DataPlane:
    """Serve the data plane on the started `server`'s app and keep it in step with the server."""
    host = BrokerServerHost(server)
    dataplane = DataPlane(host)
    assert server.app is not None and server.log_manager is not None
    dataplane.install(server.app)
    rm = server.log_manager
    previous = rm.on_change

    def on_change() -> None:
        previous()
        dataplane.poke()

    rm.on_change = on_change
    await dataplane.start()
    return dataplane
