"""BrokerDataPlaneHost: what the data plane (`broker.dataplane`) asks of the broker that hosts it.

The log manager owns which replica lives in which dir and opens the logs; the lifecycle knows the
broker epoch. This adapter answers the data plane's questions from them.
"""

from __future__ import annotations

from collections.abc import Callable

from broker.controller_channel import ControllerChannel
from broker.dataplane.host import ConfiguredLogDir, LocalLog
from broker.log_manager import LogManager
from broker.startup import BrokerDirs
from broker.storage.log_dir import LogDir
from kraftpy.config import KafkaConfig
from kraftpy.image import TopicIdPartition
from protocol.errors import Errors, KafkaError
from protocol.uuid import Uuid

CONTROLLER_TIMEOUT_S = 10.0


class BrokerDataPlaneHost:
    def __init__(
        self,
        cfg: KafkaConfig,
        dirs: BrokerDirs,
        log_dirs: dict[Uuid, LogDir],
        log_manager: LogManager,
        broker_epoch: Callable[[], int],
        controller: ControllerChannel | None = None,
    ) -> None:
        self.config = cfg
        self.node_id = cfg.node_id
        self.cluster_id = dirs.cluster_id
        self._dirs = dirs
        self._log_dirs = log_dirs
        self._log_manager = log_manager
        self._broker_epoch = broker_epoch
        # The active controller, wherever it is (the broker's shared view of the quorum's leader).
        self.controller = controller or ControllerChannel.for_config(cfg, timeout=CONTROLLER_TIMEOUT_S)

    @property
    def broker_epoch(self) -> int:
        return self._broker_epoch()

    async def local_log(self, tp: TopicIdPartition) -> LocalLog | None:
        hp = self._log_manager.get_partition(tp.topic_id, tp.partition)
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

    def future_replicas(self, dir_id: Uuid) -> list[tuple[TopicIdPartition, int, int]]:
        """Future logs being built in `dir_id` by intra-broker moves: (partition, bytes, offset lag)."""
        mover = self._log_manager.mover
        return mover.future_replicas(dir_id) if mover is not None else []

    def configured_log_dirs(self) -> list[ConfiguredLogDir]:
        by_id = self._log_dirs
        out = [ConfiguredLogDir(path, d, by_id.get(d)) for path, d in self._dirs.log_dirs.items()]
        out += [ConfiguredLogDir(path, None, None) for path in self._dirs.offline]
        order = {p: i for i, p in enumerate(self.config.log_dir_list)}
        return sorted(out, key=lambda d: order.get(d.path, len(order)))

    async def close(self) -> None:
        await self.controller.close()
