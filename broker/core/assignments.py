"""Queueing replica-to-directory assignments into AssignReplicasToDirs (Kafka 3.9's AssignmentsManager), without I/O.

- `ready` holds at most one assignment per partition (topic id, partition): the latest wins, so
  queued duplicates collapse (field bug 8). At most `max_in_flight` requests are in flight (one,
  as in Kafka, unless asked for more), and never two holding the same partition: a newer
  assignment for a partition in flight waits in `ready` for that request's answer, so the
  controller sees each partition's assignments in the order they were made.
- A send is due 100 ms after the first assignment arrives (to let a batch build up), at once when
  more than `max_per_request` are waiting, or after an exponential backoff (100 ms x2 up to 10 s,
  jitter 0.02) following a failure of the whole request. An earlier due time already set is kept.
- A request carries at most `max_per_request` (2,250) assignments. Just before sending, each one is
  checked against the broker's latest metadata and dropped when the topic or partition is gone or
  this broker is no longer a replica (KAFKA-16886, field bug 7), so a demoted replica is not
  retried forever.
- No request goes out before the broker has a broker epoch: assignments made before registration
  wait in `ready` (field bug 8's "cannot enqueue while not running").
- A failure of the whole request (no answer, or a top-level error) puts every assignment back
  unless a newer one for the partition arrived meanwhile; a per-partition error, or a partition the
  reply leaves out, puts just that one back. Success runs the assignment's callback.

`queued` (ready plus in flight) is the QueuedReplicaToDirAssignments gauge.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import structlog

from broker.core.backoff import ExponentialBackoff
from protocol.errors import Errors
from protocol.rpc.assign_replicas_to_dirs import (
    MAX_ASSIGNMENTS_PER_REQUEST,
    AssignReplicasToDirsRequest,
    AssignReplicasToDirsResponse,
)
from protocol.uuid import Uuid, describe_directory

log = structlog.get_logger("broker.assignments")

BATCH_WINDOW_MS = 100
LOG_STUCK_AFTER_MS = 120_000


class PartitionKey(NamedTuple):
    topic_id: Uuid
    partition: int


@dataclass(frozen=True, eq=False)
class Assignment:
    topic_id: Uuid
    partition: int
    directory_id: Uuid
    reason: str
    submitted_ms: int
    on_success: Callable[[], None] | None = field(default=None, repr=False)

    @property
    def key(self) -> PartitionKey:
        return PartitionKey(self.topic_id, self.partition)


class ReplicaView(Protocol):
    """What the manager needs from the broker's latest metadata."""

    def is_replica(self, topic_id: Uuid, partition: int) -> bool: ...


@dataclass(frozen=True)
class ResponseOutcome:
    succeeded: list[Assignment]
    retried: list[Assignment]
    global_failure: bool


class AssignmentsManager:
    def __init__(
        self,
        broker_id: int,
        *,
        rng: random.Random | None = None,
        batch_window_ms: int = BATCH_WINDOW_MS,
        max_per_request: int = MAX_ASSIGNMENTS_PER_REQUEST,
        backoff: ExponentialBackoff | None = None,
        max_in_flight: int = 1,
    ) -> None:
        """`max_in_flight` above one lets the controller work on the next request while the
        previous one's records commit and its answer travels back, instead of waiting idle."""
        self.broker_id = broker_id
        self.rng = rng or random.Random()
        self.batch_window_ms = batch_window_ms
        self.max_per_request = max_per_request
        self.backoff = backoff or ExponentialBackoff(100, 2, 10_000, 0.02)
        self.max_in_flight = max(1, max_in_flight)
        self.ready: dict[PartitionKey, Assignment] = {}
        self._flights: list[tuple[AssignReplicasToDirsRequest, dict[PartitionKey, Assignment]]] = []
        self.deadline_ms: int | None = None
        self.previous_global_failures = 0
        self.requests_sent = 0
        self.assignments_sent = 0
        self.dropped = 0

    # ---- input ---------------------------------------------------------------------------------

    def on_assignment(
        self,
        now_ms: int,
        topic_id: Uuid,
        partition: int,
        directory_id: Uuid,
        reason: str,
        on_success: Callable[[], None] | None = None,
    ) -> None:
        self._queue(Assignment(topic_id, partition, directory_id, reason, now_ms, on_success))
        self._reschedule(now_ms)

    def on_assignments(self, now_ms: int, assignments: Iterable[tuple[Uuid, int, Uuid]], reason: str) -> None:
        """`on_assignment` for many (topic id, partition, directory id) at once, with one reason and
        no callback: one rescheduling for all of them."""
        for topic_id, partition, directory_id in assignments:
            self._queue(Assignment(topic_id, partition, directory_id, reason, now_ms))
        self._reschedule(now_ms)

    def _queue(self, a: Assignment) -> None:
        prev = self.ready.get(a.key)
        if prev is not None and prev.directory_id != a.directory_id:
            log.debug("assignment replaced by a newer one", partition=f"{a.topic_id}-{a.partition}")
        self.ready[a.key] = a

    def cancel(self, topic_id: Uuid, partition: int) -> bool:
        """Forget a queued (not in-flight) assignment, e.g. a future replica move that was cancelled."""
        return self.ready.pop(PartitionKey(topic_id, partition), None) is not None

    # ---- output --------------------------------------------------------------------------------

    @property
    def in_flight(self) -> dict[PartitionKey, Assignment] | None:
        """Every assignment in a request not answered yet (None when no request is)."""
        if not self._flights:
            return None
        if len(self._flights) == 1:
            return self._flights[0][1]
        out: dict[PartitionKey, Assignment] = {}
        for _, batch in self._flights:
            out.update(batch)
        return out

    @property
    def queued(self) -> int:
        return len(self.ready) + sum(len(batch) for _, batch in self._flights)

    def next_wakeup_ms(self) -> int | None:
        return None if len(self._flights) >= self.max_in_flight else self.deadline_ms

    def poll(self, now_ms: int, view: ReplicaView, broker_epoch: int) -> AssignReplicasToDirsRequest | None:
        """The request to send now, if one is due (it is then in flight until `on_response`)."""
        if len(self._flights) >= self.max_in_flight or self.deadline_ms is None or now_ms < self.deadline_ms:
            return None
        if broker_epoch < 0:
            # Not registered yet: keep everything until there is an epoch to send with.
            self.deadline_ms = now_ms + self.batch_window_ms
            return None
        self.deadline_ms = None
        flying = [b for _, b in self._flights]
        batch: dict[PartitionKey, Assignment] = {}
        held: list[PartitionKey] = []
        for key in list(self.ready):
            if len(batch) >= self.max_per_request:
                break
            if flying and any(key in b for b in flying):
                held.append(key)
                continue
            a = self.ready.pop(key)
            if not view.is_replica(a.topic_id, a.partition):
                self.dropped += 1
                log.info(
                    "dropping directory assignment: no longer a replica here",
                    partition=f"{a.topic_id}-{a.partition}",
                    directory=describe_directory(a.directory_id),
                )
                continue
            batch[key] = a
        if not batch:
            if not held:
                self._reschedule(now_ms)
            # else: only partitions already in flight are waiting; their answer reschedules
            return None
        req = build_request(self.broker_id, broker_epoch, batch.values())
        self._flights.append((req, batch))
        self.requests_sent += 1
        self.assignments_sent += len(batch)
        self._reschedule(now_ms)
        return req

    def on_response(
        self,
        now_ms: int,
        response: AssignReplicasToDirsResponse | None,
        error: str | None = None,
        request: AssignReplicasToDirsRequest | None = None,
    ) -> ResponseOutcome:
        """The answer (None: none came, `error` says why) to `request`, which `poll` returned;
        `request` may be left out while at most one request is in flight."""
        sent = self._take_flight(request)
        if response is None or response.ErrorCode != Errors.NONE:
            self.previous_global_failures += 1
            for key, a in sent.items():
                self.ready.setdefault(key, a)
            log.warning(
                "AssignReplicasToDirs failed",
                error=error if response is None else _error_name(response.ErrorCode),
                assignments=len(sent),
                failures=self.previous_global_failures,
            )
            self._reschedule(now_ms)
            return ResponseOutcome([], list(sent.values()), True)
        self.previous_global_failures = 0
        succeeded: list[Assignment] = []
        retried: list[Assignment] = []
        answered: set[tuple[Uuid, int]] = set()
        ok = int(Errors.NONE)
        for d in response.Directories:
            for t in d.Topics:
                topic_id = t.TopicId
                for p in t.Partitions:
                    # a plain tuple finds the PartitionKey it equals
                    key = (topic_id, p.PartitionIndex)
                    a = sent.get(key)
                    if a is None or key in answered:
                        continue
                    answered.add(key)
                    if p.ErrorCode == ok:
                        succeeded.append(a)
                    else:
                        retried.append(a)
                        if now_ms - a.submitted_ms > LOG_STUCK_AFTER_MS:
                            log.error(
                                "directory assignment keeps failing",
                                partition=f"{a.topic_id}-{a.partition}",
                                error=_error_name(p.ErrorCode),
                                queued_ms=now_ms - a.submitted_ms,
                            )
        if len(answered) < len(sent):
            for key, a in sent.items():
                if key not in answered:
                    retried.append(a)
        for a in retried:
            self.ready.setdefault(a.key, a)
        for a in succeeded:
            if a.on_success is not None:
                try:
                    a.on_success()
                except Exception:
                    log.exception("assignment callback failed", partition=f"{a.topic_id}-{a.partition}")
        self._reschedule(now_ms)
        return ResponseOutcome(succeeded, retried, False)

    # ---- internals -----------------------------------------------------------------------------

    def _take_flight(self, request: AssignReplicasToDirsRequest | None) -> dict[PartitionKey, Assignment]:
        flights = self._flights
        for i, (req, batch) in enumerate(flights):
            if request is None or req is request:
                del flights[i]
                return batch
        return {}

    def _reschedule(self, now_ms: int) -> None:
        if len(self._flights) >= self.max_in_flight or not self.ready:
            return
        if self.previous_global_failures > 0:
            due = now_ms + self.backoff.backoff_ms(self.previous_global_failures, self.rng)
        elif len(self.ready) > self.max_per_request:
            due = now_ms
        else:
            due = now_ms + self.batch_window_ms
        if self.deadline_ms is None or due < self.deadline_ms:
            self.deadline_ms = due


def build_request(
    broker_id: int, broker_epoch: int, assignments: Iterable[Assignment]
) -> AssignReplicasToDirsRequest:
    """Group assignments by directory, then topic (AssignmentsManager.buildRequestData)."""
    by_dir: dict[Uuid, dict[Uuid, list[int]]] = {}
    for a in assignments:
        by_dir.setdefault(a.directory_id, {}).setdefault(a.topic_id, []).append(a.partition)
    R = AssignReplicasToDirsRequest
    return R(
        BrokerId=broker_id,
        BrokerEpoch=broker_epoch,
        Directories=[
            R.DirectoryData(
                Id=dir_id,
                Topics=[
                    R.TopicData(
                        TopicId=topic_id,
                        Partitions=[R.PartitionData(PartitionIndex=p) for p in sorted(parts)],
                    )
                    for topic_id, parts in sorted(topics.items())
                ],
            )
            for dir_id, topics in sorted(by_dir.items())
        ],
    )


def _error_name(code: int) -> str:
    try:
        return Errors(code).name
    except ValueError:
        return str(code)


class ImageReplicaView:
    """`ReplicaView` over a metadata image: the topic and partition exist and list `broker_id`."""

    def __init__(self, image: object, broker_id: int) -> None:
        self.image = image
        self.broker_id = broker_id

    def is_replica(self, topic_id: Uuid, partition: int) -> bool:
        topic = self.image.topics.topics_by_id.get(topic_id)  # type: ignore[attr-defined]
        if topic is None:
            return False
        reg = topic.partitions.get(partition)
        return reg is not None and self.broker_id in reg.replicas
