"""BrokerMetadataPublisher: each new metadata image, handed to the parts of the broker that follow it.

Kafka's BrokerMetadataPublisher. The `MetadataLoader` calls `on_image` for every image it builds;
the lifecycle learns the offset it has caught up to, and once the broker has caught up (RECOVERY or
RUNNING) the image becomes `PartitionState` values, one per partition hosted here: all of them the
first time, then those each delta changed. The same values go to the log manager (which dir each
log lives in) and the data plane's replica manager (what each partition does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import structlog

from broker.core.broker_state import BrokerState
from broker.core.lifecycle import BrokerLifecycle
from broker.core.partition_state import PartitionState, changed_partition_states, local_partition_states
from broker.dataplane import DataPlane
from broker.log_manager import LogManager
from kraftpy.heap import after_load, collector_paused
from kraftpy.image import MetadataDelta, MetadataImage, TopicIdPartition
from kraftpy.storage.metadata_version import JBOD_LEVEL
from protocol.uuid import Uuid

log = structlog.get_logger("broker.metadata")


class BrokerMetadataPublisher:
    def __init__(
        self,
        broker_id: int,
        incarnation_id: Uuid,
        *,
        multi_dir: bool,
        lifecycle: BrokerLifecycle,
        log_manager: LogManager,
        dataplane: DataPlane | None,
        image: Callable[[], MetadataImage],
        now_ms: Callable[[], int],
        fatal: Callable[[str], None],
        on_published: Callable[[], None],
    ) -> None:
        """`image`: the loader's latest image; `on_published`: an image reached the log manager."""
        self.broker_id = broker_id
        self.incarnation_id = incarnation_id
        self.multi_dir = multi_dir
        self.lifecycle = lifecycle
        self.log_manager = log_manager
        self.dataplane = dataplane
        self._image = image
        self._now_ms = now_ms
        self._fatal = fatal
        self._on_published = on_published
        self.published = False

    def on_image(self, image: MetadataImage, delta: MetadataDelta | None) -> None:
        """From the loader: `delta` is what changed, None when the image was rebuilt."""
        lc = self.lifecycle
        lc.set_metadata_offset(image.offset, self._now_ms())
        mv = image.metadata_version
        if self.multi_dir and mv is not None and mv < JBOD_LEVEL:
            self._fatal(
                f"Multiple log directories (aka JBOD) are not supported in the current metadata.version {mv}; "
                f"it must be at least {JBOD_LEVEL} (3.7-IV2)"
            )
            return
        self._maybe_reregister(image)
        if not self.published:
            self.maybe_publish_first()
        elif delta is None:
            self._publish(image, local_partition_states(image, self.broker_id), (), full=True)
        else:
            states, deleted = changed_partition_states(
                delta.local_changes(self.broker_id), image, self.broker_id
            )
            self._publish(image, states, deleted, full=False)
        self._on_published()

    def maybe_publish_first(self) -> None:
        """Publish once the broker has caught up with the metadata log (RECOVERY or RUNNING)."""
        if self.published or self.lifecycle.state not in (BrokerState.RECOVERY, BrokerState.RUNNING):
            return
        self.published = True
        image = self._image()
        log.info("publishing the first metadata image to the replica manager", metadata_offset=image.offset)
        with collector_paused():
            states = local_partition_states(image, self.broker_id)
        self._publish(image, states, (), full=True)

    def _publish(
        self,
        image: MetadataImage,
        states: list[PartitionState],
        deleted: Sequence[TopicIdPartition],
        *,
        full: bool,
    ) -> None:
        """The same states to both: where each log lives, then what each partition does."""
        self.log_manager.update_metadata(image)
        if full or states or deleted:
            with collector_paused():
                self.log_manager.publish(states, deleted, full=full)
                after_load(len(states))
        if self.dataplane is not None:
            self.dataplane.publish_soon(image, states, deleted, full=full)

    def _maybe_reregister(self, image: MetadataImage) -> None:
        lc = self.lifecycle
        reg = image.cluster.brokers.get(self.broker_id)
        if (
            reg is not None
            and lc.registered
            and reg.incarnation_id == self.incarnation_id
            and not reg.directories
            and (image.metadata_version or 0) >= JBOD_LEVEL
        ):
            lc.request_reregistration(self._now_ms())
