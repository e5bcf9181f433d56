"""The controller's story (controller.story): one plain event per thing a committed batch did,
bulk leader moves summarised, before/after told from the state it keeps."""

from __future__ import annotations

from structlog.testing import capture_logs

from controller.story import DETAIL_LIMIT, ControllerStory
from protocol import metadata_records as mr
from protocol.uuid import Uuid

T = Uuid.from_longs(5, 5)
D1, D2 = Uuid.from_longs(7, 1), Uuid.from_longs(7, 2)


def _events(story: ControllerStory, *records: object) -> list[dict]:
    with capture_logs() as logs:
        story.on_committed(list(records))
    return logs


def _registered(story: ControllerStory) -> None:
    story.on_committed(
        [
            mr.RegisterBrokerRecord(
                BrokerId=b, BrokerEpoch=10 + b, IncarnationId=Uuid.from_longs(9, b), LogDirs=[D1, D2]
            )
            for b in (1, 2, 3)
        ]
    )


def test_registration_fencing_and_a_dir_going_offline_are_told_once_each() -> None:
    story = ControllerStory()
    logs = _events(
        story,
        mr.RegisterBrokerRecord(
            BrokerId=1, BrokerEpoch=11, IncarnationId=Uuid.from_longs(9, 1), LogDirs=[D1, D2]
        ),
    )
    assert [(e["event"], e["broker_id"]) for e in logs] == [("broker registered", 1)]
    assert logs[0]["log_level"] == "info" and len(logs[0]["log_dirs"]) == 2
    logs = _events(story, mr.BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=11, Fenced=-1))
    assert [e["event"] for e in logs] == ["broker unfenced"]
    logs = _events(story, mr.BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=11, LogDirs=[D2]))
    assert [(e["event"], e["log_level"]) for e in logs] == [("log dir offline", "warning")]
    assert logs[0]["online_dirs"] == 1
    logs = _events(story, mr.BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=11, Fenced=1))
    assert [(e["event"], e["log_level"]) for e in logs] == [("broker fenced", "warning")]
    assert _events(story, mr.NoOpRecord()) == []


def test_leader_and_isr_changes_are_told_per_partition_or_summarised_in_bulk() -> None:
    story = ControllerStory()
    _registered(story)
    n = DETAIL_LIMIT * 4
    logs = _events(
        story,
        mr.TopicRecord(Name="orders", TopicId=T),
        *[
            mr.PartitionRecord(PartitionId=p, TopicId=T, Replicas=[1, 2, 3], Isr=[1, 2, 3], Leader=1)
            for p in range(n)
        ],
    )
    assert [(e["event"], e["topic"], e["partitions"]) for e in logs] == [("topic created", "orders", n)]

    logs = _events(story, mr.PartitionChangeRecord(TopicId=T, PartitionId=0, Leader=2, Isr=[2, 3]))
    assert [(e["event"], e["partition"], e["previous_leader"], e["leader"]) for e in logs] == [
        ("leader changed", "orders-0", 1, 2)
    ]
    logs = _events(story, mr.PartitionChangeRecord(TopicId=T, PartitionId=0, Isr=[2, 3, 1]))
    assert [(e["event"], e["isr"]) for e in logs] == [("ISR expanded", [2, 3, 1])]

    # A dir failure under broker 1 moving every other leader: one line, not one per partition.
    logs = _events(
        story,
        *[mr.PartitionChangeRecord(TopicId=T, PartitionId=p, Leader=3, Isr=[2, 3]) for p in range(1, n)],
    )
    assert [e["event"] for e in logs] == ["leaders changed"]
    assert logs[0]["partitions"] == n - 1 and logs[0]["moves"] == {"1->3": n - 1}
    logs = _events(story, mr.PartitionChangeRecord(TopicId=T, PartitionId=1, Leader=-1, Isr=[3]))
    assert [(e["event"], e["log_level"]) for e in logs] == [("partition has no leader", "warning")]
    logs = _events(story, mr.RemoveTopicRecord(TopicId=T))
    assert [(e["event"], e["partitions"]) for e in logs] == [("topic deleted", n)]
    assert not story.partitions


def test_a_story_seeded_from_the_committed_image_tells_changes_against_it() -> None:
    from tests.broker_core.helpers import image_of, partition, topic

    image = image_of(
        mr.RegisterBrokerRecord(
            BrokerId=1, BrokerEpoch=3, IncarnationId=Uuid.from_longs(9, 1), LogDirs=[D1, D2]
        ),
        topic("orders", T),
        partition(T, 0, [1], [D1]),
    )
    story = ControllerStory(image)
    logs = _events(
        story,
        mr.BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=3, LogDirs=[D2]),
        mr.PartitionChangeRecord(TopicId=T, PartitionId=0, Leader=-1, Isr=[1]),
    )
    assert [(e["event"], e.get("previous_leader")) for e in logs] == [
        ("log dir offline", None),
        ("partition has no leader", 1),
    ]


def test_a_reassignment_is_told_when_it_starts_and_when_the_replicas_change() -> None:
    story = ControllerStory()
    _registered(story)
    story.on_committed(
        [
            mr.TopicRecord(Name="t", TopicId=T),
            mr.PartitionRecord(PartitionId=0, TopicId=T, Replicas=[1, 2], Isr=[1, 2], Leader=1),
        ]
    )
    logs = _events(
        story,
        mr.PartitionChangeRecord(
            TopicId=T, PartitionId=0, Replicas=[3, 1, 2], AddingReplicas=[3], RemovingReplicas=[2]
        ),
    )
    assert [(e["event"], e["adding"], e["removing"]) for e in logs] == [("reassignment started", [3], [2])]
    logs = _events(
        story,
        mr.PartitionChangeRecord(
            TopicId=T, PartitionId=0, Replicas=[3, 1], Isr=[1, 3], AddingReplicas=[], RemovingReplicas=[]
        ),
    )
    assert [e["event"] for e in logs] == ["replicas changed", "ISR changed"]
    # A broker's fencing at the end of its controlled shutdown is no warning.
    logs = _events(
        story,
        mr.BrokerRegistrationChangeRecord(BrokerId=2, BrokerEpoch=12, InControlledShutdown=1),
        mr.BrokerRegistrationChangeRecord(BrokerId=2, BrokerEpoch=12, Fenced=1),
    )
    assert [(e["event"], e["log_level"]) for e in logs] == [
        ("broker in controlled shutdown", "info"),
        ("broker fenced at the end of its controlled shutdown", "info"),
    ]
