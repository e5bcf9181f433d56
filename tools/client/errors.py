"""What the client library raises: every error carries a Kafka error code."""

from __future__ import annotations

from protocol.errors import Errors, KafkaError

# Errors after which a request is worth sending again, once the metadata is refreshed.
RETRIABLE = frozenset(
    {
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.REQUEST_TIMED_OUT,
        Errors.NETWORK_EXCEPTION,
        Errors.LEADER_NOT_AVAILABLE,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_ID,
        Errors.NOT_ENOUGH_REPLICAS,
        Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        Errors.FENCED_LEADER_EPOCH,
        Errors.UNKNOWN_LEADER_EPOCH,
        Errors.BROKER_NOT_AVAILABLE,
        Errors.REPLICA_NOT_AVAILABLE,
        Errors.OFFSET_NOT_AVAILABLE,
        Errors.NOT_CONTROLLER,
    }
)

# Errors that mean "the metadata this client holds is out of date".
STALE_METADATA = frozenset(
    {
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.LEADER_NOT_AVAILABLE,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_ID,
        Errors.FENCED_LEADER_EPOCH,
        Errors.UNKNOWN_LEADER_EPOCH,
        Errors.NETWORK_EXCEPTION,
        Errors.REQUEST_TIMED_OUT,
        Errors.BROKER_NOT_AVAILABLE,
    }
)


def as_error(code: int) -> Errors:
    try:
        return Errors(code)
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR


class ClientError(KafkaError):
    """A request that could not be completed; `code` says why."""


class DeliveryError(ClientError):
    """A record that was not acknowledged by the cluster."""
