"""Leader elections asked for by name (Kafka's ElectLeaders), ONLINE, PREFERRED or UNCLEAN.

Elections that follow from fencing, failed dirs and assignments happen in the generators; this is
for an operator or the shell's periodic "leaderless partitions whose topic allows unclean election"
pass, which is `elect_leaders(m, Election.UNCLEAN, None, only_unclean_topics=True)`.
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.core.context import ControllerManagers
from controller.core.partition_change import Election
from controller.core.replication_control import OperationView, TopicIdPartition
from controller.core.result import ControllerResult
from protocol.errors import Errors
from protocol.framing import ApiMessageAndVersion

# Kafka's codes for ElectLeaders outcomes that protocol.errors does not name.
PREFERRED_LEADER_NOT_AVAILABLE = 80
ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
ELECTION_NOT_NEEDED = 84


def elect_leaders(
    m: ControllerManagers,
    election: Election,
    partitions: Iterable[TopicIdPartition] | None = None,
    *,
    only_unclean_topics: bool = False,
) -> ControllerResult[dict[TopicIdPartition, int]]:
    """Per partition: 0 when a record elects a new leader, ELECTION_NOT_NEEDED when the leader
    is already the one the election would pick, or why nobody could be elected.

    `partitions=None` means every partition for PREFERRED and every leaderless one otherwise.
    """
    replication = m.replication
    if partitions is None:
        if election is Election.PREFERRED:
            partitions = [(tid, pid) for tid, t in replication.topics.items() for pid in t.partitions]
        else:
            partitions = replication.leaderless_partitions()
    records: list[ApiMessageAndVersion] = []
    view = OperationView()
    accept = replication.acceptor(view)
    results: dict[TopicIdPartition, int] = {}
    for tp in partitions:
        partition = replication.partition(tp, view)
        if partition is None:
            results[tp] = int(Errors.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        if only_unclean_topics and not replication.unclean_allowed(tp[0], view):
            continue
        builder = replication.builder(tp, partition, accept, view).set_election(election)
        record = builder.build()
        if record is not None and record.message.Leader not in (-2, partition.leader):
            replication.apply(tp, partition, record, records, view)
            results[tp] = 0 if record.message.Leader != -1 else ELIGIBLE_LEADERS_NOT_AVAILABLE
        elif (
            election is Election.PREFERRED
            and partition.replicas
            and partition.leader != partition.replicas[0]
        ):
            results[tp] = PREFERRED_LEADER_NOT_AVAILABLE
        elif partition.leader != -1:
            results[tp] = ELECTION_NOT_NEEDED
        else:
            results[tp] = (
                PREFERRED_LEADER_NOT_AVAILABLE
                if election is Election.PREFERRED
                else ELIGIBLE_LEADERS_NOT_AVAILABLE
            )
    return ControllerResult.of(records, results)
