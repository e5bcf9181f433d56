"""The broker's lifecycle states, with the byte values Kafka reports (metadata/.../BrokerState.java)."""

from __future__ import annotations

from enum import IntEnum


class BrokerState(IntEnum):
    NOT_RUNNING = 0
    STARTING = 1
    """Registering, then catching up with the metadata log."""
    RECOVERY = 2
    """Caught up with the metadata log; waiting for the controller to unfence it."""
    RUNNING = 3
    PENDING_CONTROLLED_SHUTDOWN = 6
    SHUTTING_DOWN = 7
    UNKNOWN = 127
