"""Broker sessions and the heartbeat state machine (Kafka's BrokerHeartbeatManager).

This is runtime state that the metadata log does not hold: when each broker was last heard from,
the metadata offset it reported, and the offset a controlled shutdown waits for. A controller
that starts (or takes over) knows the registered brokers from the log but has heard none of them,
so every registered broker is tracked from the first moment the controller looks at it and gets
a full session to heartbeat before it is fenced (field bug 25).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple


class BrokerControlState(enum.Enum):
    FENCED = "FENCED"
    UNFENCED = "UNFENCED"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"
    SHUTDOWN_NOW = "SHUTDOWN_NOW"

    @property
    def fenced(self) -> bool:
        return self in (BrokerControlState.FENCED, BrokerControlState.SHUTDOWN_NOW)

    @property
    def in_controlled_shutdown(self) -> bool:
        return self is BrokerControlState.CONTROLLED_SHUTDOWN

    @property
    def should_shut_down(self) -> bool:
        return self is BrokerControlState.SHUTDOWN_NOW


@dataclass(slots=True)
class BrokerHeartbeatState:
    broker_id: int
    last_contact_ms: int
    metadata_offset: int = -1
    controlled_shutdown_offset: int = -1


class HeartbeatInputs(NamedTuple):
    """What the next-state decision needs from a heartbeat and from the controller's state (a
    tuple: one is built per heartbeat, and a frozen dataclass costs several times as much)."""

    want_fence: bool
    want_shut_down: bool
    caught_up: bool
    may_unfence: bool
    """False while KIP-858 keeps a multi-dir broker fenced (replicas not placed yet)."""
    has_leaderships: Callable[[], bool]
    """Asked only when the answer matters (shutting down): it may look at many partitions."""


class BrokerHeartbeatManager:
    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.now_ms = 0
        """The latest clock reading any operation passed in; replay uses it for new sessions."""
        self._brokers: dict[int, BrokerHeartbeatState] = {}

    def observe(self, now_ms: int) -> None:
        if now_ms > self.now_ms:
            self.now_ms = now_ms

    def state(self, broker_id: int) -> BrokerHeartbeatState | None:
        return self._brokers.get(broker_id)

    def track(self, broker_id: int) -> BrokerHeartbeatState:
        """The broker's session, started now if the controller has not heard of it yet."""
        state = self._brokers.get(broker_id)
        if state is None:
            state = BrokerHeartbeatState(broker_id, self.now_ms)
            self._brokers[broker_id] = state
        return state

    def restart(self, broker_id: int) -> None:
        """A new incarnation registered: its session starts over."""
        self._brokers[broker_id] = BrokerHeartbeatState(broker_id, self.now_ms)

    def remove(self, broker_id: int) -> None:
        self._brokers.pop(broker_id, None)

    def track_all(self, broker_ids: Iterable[int]) -> None:
        for broker_id in broker_ids:
            self.track(broker_id)

    def touch(self, broker_id: int, now_ms: int, metadata_offset: int) -> None:
        self.observe(now_ms)
        state = self.track(broker_id)
        state.last_contact_ms = now_ms
        state.metadata_offset = metadata_offset

    def set_controlled_shutdown_offset(self, broker_id: int, offset: int) -> None:
        state = self.track(broker_id)
        if state.controlled_shutdown_offset < 0:
            state.controlled_shutdown_offset = offset

    def session_valid(self, broker_id: int, now_ms: int) -> bool:
        return self.track(broker_id).last_contact_ms + self.session_timeout_ms >= now_ms

    def stalest(self, unfenced: Iterable[int], now_ms: int) -> int | None:
        """The unfenced broker heard from longest ago whose session has expired, if any."""
        # A scan of every unfenced broker, four times a second: no call or tuple per broker
        # (10,000 brokers took 10 ms a scan that way).
        states = self._brokers
        best_id = -1
        best_ms = 0
        for broker_id in unfenced:
            state = states.get(broker_id)
            if state is None:
                state = self.track(broker_id)
            ms = state.last_contact_ms
            if best_id < 0 or ms < best_ms or (ms == best_ms and broker_id < best_id):
                best_id, best_ms = broker_id, ms
        if best_id < 0 or best_ms + self.session_timeout_ms >= now_ms:
            return None
        return best_id

    def next_expiry_ms(self, unfenced: Iterable[int]) -> int | None:
        """When the first of these sessions runs out (the shell's timer for the staleness check)."""
        states = self._brokers
        earliest: int | None = None
        for broker_id in unfenced:
            state = states.get(broker_id)
            if state is None:
                state = self.track(broker_id)
            if earliest is None or state.last_contact_ms < earliest:
                earliest = state.last_contact_ms
        return None if earliest is None else earliest + self.session_timeout_ms + 1

    def lowest_active_offset(self, active: Iterable[int]) -> int:
        """The lowest metadata offset reported by the active (unfenced, not shutting down) brokers."""
        offsets = [self.track(b).metadata_offset for b in active]
        return min(offsets) if offsets else 2**63 - 1

    def next_state(
        self, broker_id: int, current: BrokerControlState, inputs: HeartbeatInputs, lowest_active_offset: int
    ) -> BrokerControlState:
        """Reference 7.2 step 2, with KIP-858's condition on leaving FENCED."""
        if current is BrokerControlState.FENCED:
            if inputs.want_shut_down:
                return BrokerControlState.SHUTDOWN_NOW
            if not inputs.want_fence and inputs.caught_up and inputs.may_unfence:
                return BrokerControlState.UNFENCED
            return BrokerControlState.FENCED
        if current is BrokerControlState.UNFENCED:
            if inputs.want_fence:
                return BrokerControlState.SHUTDOWN_NOW if inputs.want_shut_down else BrokerControlState.FENCED
            if inputs.want_shut_down:
                return (
                    BrokerControlState.CONTROLLED_SHUTDOWN
                    if inputs.has_leaderships()
                    else BrokerControlState.SHUTDOWN_NOW
                )
            return BrokerControlState.UNFENCED
        if current is BrokerControlState.CONTROLLED_SHUTDOWN:
            if inputs.has_leaderships():
                return BrokerControlState.CONTROLLED_SHUTDOWN
            if self.track(broker_id).controlled_shutdown_offset <= lowest_active_offset:
                return BrokerControlState.SHUTDOWN_NOW
            return BrokerControlState.CONTROLLED_SHUTDOWN
        return BrokerControlState.SHUTDOWN_NOW
