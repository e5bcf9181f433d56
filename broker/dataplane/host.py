"""What the data plane needs from the broker process that hosts it, and what it gives back.

The broker shell owns the lifecycle, the metadata image, the log dirs and the partition logs (which
replica lives in which dir, creating and deleting logs, dir failures). The data plane owns what
happens to the data in those logs: produce, fetch, replication, the high watermark and the ISR.

Wiring: build `DataPlane(host)` with an object satisfying `DataPlaneHost`, add its handlers to the
app (`dataplane.install(app)`) and `await dataplane.start()`. What each partition should be reaches
it through `publish` / `publish_soon` (PartitionState values, from the metadata image), new or
replaced logs through `logs_changed_soon`, a failed dir through the LogDirFailureChannel its
replica manager and fetchers subscribe to; `await dataplane.stop()` ends it before the logs are
closed. `broker.server.BrokerServer` wires all of this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from broker.storage import LogDir, PartitionLog
from kraftpy.image import TopicIdPartition
from protocol.uuid import Uuid

if TYPE_CHECKING:
    from kraftpy.config import KafkaConfig
    from protocol.transport import RpcClient


@dataclass(frozen=True, slots=True)
class LocalLog:
    """A hosted replica's log and the dir it lives in (all I/O on it goes through `log_dir.run`)."""

    log: PartitionLog
    log_dir: LogDir


@dataclass(frozen=True, slots=True)
class ConfiguredLogDir:
    """One entry of `log.dirs`: `log_dir` is None when the dir could not be used at startup."""

    path: str
    dir_id: Uuid | None
    log_dir: LogDir | None

    @property
    def online(self) -> bool:
        return self.log_dir is not None and self.log_dir.online


class DataPlaneHost(Protocol):
    @property
    def node_id(self) -> int: ...

    @property
    def cluster_id(self) -> str: ...

    @property
    def config(self) -> KafkaConfig: ...

    @property
    def broker_epoch(self) -> int:
        """This broker's epoch from its registration (-1 before it registered)."""
        ...

    @property
    def controller(self) -> RpcClient:
        """A client for the active controller (AlterPartition, AllocateProducerIds, forwarding)."""
        ...

    async def local_log(self, tp: TopicIdPartition) -> LocalLog | None:
        """The replica's log when it exists here (opening it if needed); None while it is not (yet)
        created. Raises KafkaError(KAFKA_STORAGE_ERROR) when the replica is in a failed dir."""
        ...

    def configured_log_dirs(self) -> list[ConfiguredLogDir]: ...
