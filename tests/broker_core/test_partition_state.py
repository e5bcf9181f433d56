"""PartitionState from the metadata image: every partition on the broker, or those a delta changed."""

from __future__ import annotations

from broker.core.partition_state import changed_partition_states, local_partition_states
from protocol.uuid import UNASSIGNED
from tests.broker_core.helpers import (
    BROKER,
    D1,
    D2,
    TOPIC_A,
    delta_of,
    dir_change,
    image_of,
    partition,
    replicas_change,
    topic,
)


def test_states_carry_what_the_broker_needs_of_each_partition() -> None:
    image = image_of(
        topic("a", TOPIC_A),
        partition(TOPIC_A, 0, [BROKER], [D1]),
        partition(TOPIC_A, 1, [9], [UNASSIGNED]),
    )
    (st,) = local_partition_states(image, BROKER)
    assert (st.topic_name, st.partition, st.replicas, st.leader, st.directory) == (
        "a",
        0,
        (BROKER,),
        BROKER,
        D1,
    )
    assert st.tp.topic_id == TOPIC_A and st.key == (TOPIC_A, 0)


def test_a_delta_gives_the_changed_partitions_and_those_taken_away() -> None:
    image = image_of(
        topic("a", TOPIC_A),
        partition(TOPIC_A, 0, [BROKER], [D1]),
        partition(TOPIC_A, 1, [BROKER], [D1]),
        partition(TOPIC_A, 2, [BROKER], [D1]),
    )
    delta = delta_of(image, dir_change(TOPIC_A, 0, [D2]), replicas_change(TOPIC_A, 1, [7], [UNASSIGNED]))
    states, deleted = changed_partition_states(delta.local_changes(BROKER), delta.apply(), BROKER)
    assert [(s.partition, s.directory) for s in states] == [(0, D2)]
    assert [tp.partition for tp in deleted] == [1]
