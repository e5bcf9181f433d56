"""MigrationDriver: KIP-866's migration driver as a state machine with no I/O (Kafka's KRaftMigrationDriver).

The shell feeds it what it learns (leadership, each committed metadata image, the brokers ZooKeeper
knows) and asks `poll(now_ms)` for the next action. It runs one action at a time, as Kafka's driver
runs one event at a time, and reports back with `done` or `failed`. Every action carries the Raft
epoch it was asked in; an answer from an earlier term is dropped, for that term's claim on ZooKeeper
is void.

| state                          | moves on when                                         | action                |
|--------------------------------|-------------------------------------------------------|-----------------------|
| INACTIVE                       | this controller leads, state PRE_MIGRATION/MIGRATION  | RecoverMigrationState |
| WAIT_FOR_CONTROLLER_QUORUM     | every voter registered with ZkMigrationReady          |                       |
| WAIT_FOR_BROKERS               | every ZooKeeper broker registered as migrating        |                       |
| BECOME_CONTROLLER              | the claim of /controller and /controller_epoch took   | ClaimController       |
| ZK_MIGRATION                   | the copy transaction committed                        | CopyZkToKRaft         |
| SYNC_KRAFT_TO_ZK               | ZooKeeper reconciled with the image                   | SyncKRaftToZk         |
| KRAFT_CONTROLLER_TO_BROKER_COMM| full LeaderAndIsr and UpdateMetadata sent             | SendFullRequests      |
| DUAL_WRITE                     | (stays) each new image mirrored into ZooKeeper        | DualWrite             |

Losing leadership, or the image reaching POST_MIGRATION, goes back to INACTIVE from anywhere.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum

import structlog

from kraftpy.image import MetadataImage
from kraftpy.metadata import ZkMigrationState

log = structlog.get_logger(__name__)

RETRY_BACKOFF_MS = 1000


class MigrationDriverState(Enum):
    UNINITIALIZED = 0
    INACTIVE = 1
    WAIT_FOR_CONTROLLER_QUORUM = 2
    WAIT_FOR_BROKERS = 3
    BECOME_CONTROLLER = 4
    ZK_MIGRATION = 5
    SYNC_KRAFT_TO_ZK = 6
    KRAFT_CONTROLLER_TO_BROKER_COMM = 7
    DUAL_WRITE = 8

    @property
    def allows_dual_write(self) -> bool:
        return self in (MigrationDriverState.KRAFT_CONTROLLER_TO_BROKER_COMM, MigrationDriverState.DUAL_WRITE)


S = MigrationDriverState


@dataclass(frozen=True)
class RecoverMigrationState:
    epoch: int


@dataclass(frozen=True)
class ClaimController:
    """One multi-op: bump /controller_epoch and make /controller this node's (persistent)."""

    epoch: int


@dataclass(frozen=True)
class CopyZkToKRaft:
    """Read every topic, partition, config and the producer id block from ZooKeeper and commit them
    in one metadata transaction ending in ZkMigrationStateRecord(MIGRATION)."""

    epoch: int
    zk_controller_epoch: int


@dataclass(frozen=True)
class SyncKRaftToZk:
    """Write into ZooKeeper whatever differs there from `image` (after a failover)."""

    epoch: int
    zk_controller_epoch: int
    image: MetadataImage


@dataclass(frozen=True)
class SendFullRequests:
    """Full LeaderAndIsr and UpdateMetadata of `image` to every ZooKeeper broker."""

    epoch: int
    zk_controller_epoch: int
    image: MetadataImage


@dataclass(frozen=True)
class DualWrite:
    """Mirror what changed from `previous` to `image` into ZooKeeper and to the ZooKeeper brokers."""

    epoch: int
    zk_controller_epoch: int
    previous: MetadataImage
    image: MetadataImage


Action = (
    RecoverMigrationState | ClaimController | CopyZkToKRaft | SyncKRaftToZk | SendFullRequests | DualWrite
)


class MigrationDriver:
    def __init__(self, node_id: int, voters: Collection[int]) -> None:
        self.node_id = node_id
        self.voters = frozenset(voters)
        self.state = S.INACTIVE
        self.epoch = -1
        self.leading = False
        self.image: MetadataImage | None = None
        self.zk_brokers: frozenset[int] | None = None  # None: not read from ZooKeeper yet
        self.zk_controller_epoch = -1
        self.initial_migration_done = False
        self.mirrored: MetadataImage | None = None
        self._recovered = False
        self._in_flight: Action | None = None
        self._retry_at_ms = 0
        self._waiting_for = ""

    # ---- what the shell learns ------------------------------------------------------------------

    def on_leadership(self, leading: bool, epoch: int) -> None:
        self.leading, self.epoch = leading, epoch
        self._in_flight = None
        self._recovered = False
        self.mirrored = None
        self.zk_controller_epoch = -1
        self._retry_at_ms = 0
        self.zk_brokers = None
        self._transition(S.INACTIVE)

    def on_image(self, image: MetadataImage) -> None:
        self.image = image

    def on_zk_brokers(self, broker_ids: Collection[int]) -> None:
        """The brokers ZooKeeper knows: `/brokers/ids` and every broker in a topic's assignment."""
        self.zk_brokers = frozenset(broker_ids)

    # ---- what the shell asks ------------------------------------------------------------------------

    def poll(self, now_ms: int) -> Action | None:
        """The next action to run, or None (nothing to do until something changes)."""
        if self._in_flight is not None or now_ms < self._retry_at_ms:
            return None
        action = self._next()
        self._in_flight = action
        return action

    def done(self, action: Action, result: object = None) -> None:
        if action is not self._in_flight:
            return  # asked in an earlier term, or already abandoned
        self._in_flight = None
        if isinstance(action, RecoverMigrationState):
            self._recovered = True
            # Only this log's own committed copy counts. /migration may record the copy of a quorum
            # that was rolled back and replaced: trusting it would skip the copy and then reconcile
            # ZooKeeper with an empty image, deleting every topic.
            self.initial_migration_done = self._migration_state() == ZkMigrationState.MIGRATION
            if result and not self.initial_migration_done:
                log.warning(
                    "/migration records a copy this metadata log does not have (an earlier, rolled back "
                    "migration?); copying ZooKeeper's metadata again"
                )
        elif isinstance(action, ClaimController):
            # A refused claim comes back through `failed`, with its backoff.
            self.zk_controller_epoch = int(result)  # type: ignore[call-overload]
            self._transition(S.SYNC_KRAFT_TO_ZK if self.initial_migration_done else S.ZK_MIGRATION)
        elif isinstance(action, CopyZkToKRaft):
            self.initial_migration_done = True
            log.info("Finished initial migration of ZK metadata to KRaft", end_offset=result)
            self._transition(S.KRAFT_CONTROLLER_TO_BROKER_COMM)
        elif isinstance(action, SyncKRaftToZk):
            self.mirrored = action.image
            self._transition(S.KRAFT_CONTROLLER_TO_BROKER_COMM)
        elif isinstance(action, SendFullRequests):
            self.mirrored = action.image
            self._transition(S.DUAL_WRITE)
        elif isinstance(action, DualWrite):
            self.mirrored = action.image

    def failed(self, action: Action, error: str, now_ms: int) -> None:
        """A retriable failure (ZooKeeper away, a broker unreachable): try again after a backoff."""
        if action is not self._in_flight:
            return
        self._in_flight = None
        self._retry_at_ms = now_ms + RETRY_BACKOFF_MS
        self._waiting_for = f"{type(action).__name__} failed: {error}"
        log.warning(
            "migration step failed; retrying", state=self.state.name, step=type(action).__name__, error=error
        )

    # ---- what the shell reports ---------------------------------------------------------------------

    @property
    def waiting_for(self) -> str:
        return self._waiting_for

    def write_behind_lag(self) -> int:
        """Offsets committed to the metadata log and not yet in ZooKeeper (ZkWriteBehindLag)."""
        if self.image is None or self.mirrored is None or not self.state.allows_dual_write:
            return 0
        return max(0, self.image.offset - self.mirrored.offset)

    # ---- the table --------------------------------------------------------------------------------

    def _migration_state(self) -> ZkMigrationState:
        return self.image.migration_state if self.image is not None else ZkMigrationState.NONE

    def _transition(self, state: MigrationDriverState) -> None:
        if state is not self.state:
            log.info("migration driver state", old=self.state.name, new=state.name, epoch=self.epoch)
            self.state = state
        self._waiting_for = ""

    def _next(self) -> Action | None:
        image = self.image
        if not self.leading or image is None:
            if self.state is not S.INACTIVE:
                self._transition(S.INACTIVE)
            return None
        migration = image.migration_state
        if migration not in (ZkMigrationState.PRE_MIGRATION, ZkMigrationState.MIGRATION):
            if self.state is not S.INACTIVE:
                log.info(
                    "the migration is over; ZooKeeper is no longer written", zk_migration_state=migration.name
                )
                self._transition(S.INACTIVE)
            return None
        state = self.state
        if state is S.INACTIVE:
            if not self._recovered:
                return RecoverMigrationState(self.epoch)
            self._transition(S.WAIT_FOR_CONTROLLER_QUORUM)
            state = self.state
        if state is S.WAIT_FOR_CONTROLLER_QUORUM:
            not_ready = sorted(
                v
                for v in self.voters
                if (c := image.cluster.controllers.get(v)) is None or not c.zk_migration_ready
            )
            if not_ready:
                self._waiting_for = f"controllers {not_ready} have not registered as ready for the migration"
                return None
            self._transition(S.BECOME_CONTROLLER if self.initial_migration_done else S.WAIT_FOR_BROKERS)
            state = self.state
        if state is S.WAIT_FOR_BROKERS:
            migrating = {b.id for b in image.cluster.brokers.values() if b.is_migrating_zk_broker}
            if not migrating:
                self._waiting_for = "No brokers are known to KRaft, waiting for brokers to register."
                return None
            if self.zk_brokers is None:
                self._waiting_for = "reading the brokers ZooKeeper knows"
                return None
            missing = sorted(self.zk_brokers - migrating)
            if missing:
                self._waiting_for = f"ZooKeeper brokers {missing} have not registered with KRaft as migrating"
                return None
            self._transition(S.BECOME_CONTROLLER)
            state = self.state
        if state is S.BECOME_CONTROLLER:
            return ClaimController(self.epoch)
        if state is S.ZK_MIGRATION:
            return CopyZkToKRaft(self.epoch, self.zk_controller_epoch)
        if state is S.SYNC_KRAFT_TO_ZK:
            return SyncKRaftToZk(self.epoch, self.zk_controller_epoch, image)
        if migration != ZkMigrationState.MIGRATION:
            self._waiting_for = "the copy transaction is not committed yet"
            return None
        if state is S.KRAFT_CONTROLLER_TO_BROKER_COMM:
            if self.mirrored is not None and image.offset > self.mirrored.offset:
                return DualWrite(self.epoch, self.zk_controller_epoch, self.mirrored, image)
            return SendFullRequests(self.epoch, self.zk_controller_epoch, image)
        if state is S.DUAL_WRITE:
            assert self.mirrored is not None
            if image.offset > self.mirrored.offset:
                return DualWrite(self.epoch, self.zk_controller_epoch, self.mirrored, image)
        return None
