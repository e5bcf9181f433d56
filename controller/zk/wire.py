"""The ZooKeeper-mode controller's requests and answers in Kafka's RPC messages.

The core speaks in plain values (`controller.zk.requests`); this module turns them into
LeaderAndIsr, UpdateMetadata and StopReplica with Kafka's field names, every one stamped with this
controller's id and epoch (isKRaftController true only from a migrating KRaft controller), and reads the brokers' answers back.
"""

from __future__ import annotations

from typing import Any

from controller.zk.core import AlterPartitionItem, ZkControllerCore
from controller.zk.model import LiveBroker
from controller.zk.requests import BrokerRequest, LeaderAndIsrOut, StopReplicaOut, UpdateMetadataOut
from kraftpy.config import SECURITY_PROTOCOLS
from protocol.errors import Errors
from protocol.rpc.alter_partition import AlterPartitionResponse
from protocol.rpc.controlled_shutdown import ControlledShutdownResponse
from protocol.rpc.leader_and_isr import LeaderAndIsrRequest
from protocol.rpc.stop_replica import StopReplicaRequest
from protocol.rpc.update_metadata import UpdateMetadataRequest

TopicPartition = tuple[str, int]


class RequestWire:
    def __init__(self, controller_id: int, epoch: int, *, kraft_controller: bool = False) -> None:
        self.controller_id = controller_id
        self.epoch = epoch
        self.kraft_controller = kraft_controller

    def _top(self, broker_epoch: int) -> dict[str, Any]:
        return {
            "ControllerId": self.controller_id,
            "isKRaftController": self.kraft_controller,
            "ControllerEpoch": self.epoch,
            "BrokerEpoch": broker_epoch,
        }

    def encode(self, req: BrokerRequest) -> tuple[str, Any]:
        if isinstance(req, LeaderAndIsrOut):
            return "LeaderAndIsr", self.leader_and_isr(req)
        if isinstance(req, UpdateMetadataOut):
            return "UpdateMetadata", self.update_metadata(req)
        return "StopReplica", self.stop_replica(req)

    def leader_and_isr(self, req: LeaderAndIsrOut) -> LeaderAndIsrRequest:
        topics: dict[str, dict[str, Any]] = {}
        for p in req.partitions:
            t = topics.setdefault(
                p.tp[0], {"TopicName": p.tp[0], "TopicId": p.topic_id, "PartitionStates": []}
            )
            t["PartitionStates"].append(
                {
                    "PartitionIndex": p.tp[1],
                    "ControllerEpoch": p.state.controller_epoch,
                    "Leader": p.state.leader,
                    "LeaderEpoch": p.state.leader_epoch,
                    "Isr": list(p.state.isr),
                    "PartitionEpoch": p.state.zk_version,
                    "Replicas": list(p.replicas),
                    "AddingReplicas": [],
                    "RemovingReplicas": [],
                    "IsNew": p.is_new,
                    "LeaderRecoveryState": p.state.leader_recovery_state,
                }
            )
        return LeaderAndIsrRequest.model_validate(
            {
                **self._top(req.broker_epoch),
                "Type": 0,
                "TopicStates": list(topics.values()),
                "LiveLeaders": [
                    {"BrokerId": b.id, "HostName": _host_port(b)[0], "Port": _host_port(b)[1]}
                    for b in req.live_leaders
                ],
            }
        )

    def update_metadata(self, req: UpdateMetadataOut) -> UpdateMetadataRequest:
        topics: dict[str, dict[str, Any]] = {}
        for p in req.partitions:
            t = topics.setdefault(
                p.tp[0], {"TopicName": p.tp[0], "TopicId": p.topic_id, "PartitionStates": []}
            )
            t["PartitionStates"].append(
                {
                    "PartitionIndex": p.tp[1],
                    "ControllerEpoch": p.state.controller_epoch,
                    "Leader": p.state.leader,
                    "LeaderEpoch": p.state.leader_epoch,
                    "Isr": list(p.state.isr),
                    "ZkVersion": p.state.zk_version,
                    "Replicas": list(p.replicas),
                    "OfflineReplicas": list(p.offline_replicas),
                }
            )
        return UpdateMetadataRequest.model_validate(
            {
                **self._top(req.broker_epoch),
                "TopicStates": list(topics.values()),
                "LiveBrokers": [
                    {
                        "Id": b.id,
                        "Endpoints": [
                            {
                                "Port": ep.port,
                                "Host": ep.host,
                                "Listener": ep.listener,
                                "SecurityProtocol": SECURITY_PROTOCOLS.get(ep.security_protocol, 0),
                            }
                            for ep in b.endpoints
                        ],
                        "Rack": b.rack,
                    }
                    for b in req.live_brokers
                ],
            }
        )

    def stop_replica(self, req: StopReplicaOut) -> StopReplicaRequest:
        topics: dict[str, dict[str, Any]] = {}
        for tp, leader_epoch, delete in req.partitions:
            t = topics.setdefault(tp[0], {"TopicName": tp[0], "PartitionStates": []})
            t["PartitionStates"].append(
                {"PartitionIndex": tp[1], "LeaderEpoch": leader_epoch, "DeletePartition": delete}
            )
        return StopReplicaRequest.model_validate(
            {**self._top(req.broker_epoch), "TopicStates": list(topics.values())}
        )

    # ---- answers -------------------------------------------------------------------------------

    def leader_and_isr_errors(self, req: LeaderAndIsrOut, response: Any) -> dict[TopicPartition, Errors]:
        if response.ErrorCode != Errors.NONE:
            return {}
        names = {p.topic_id: p.tp[0] for p in req.partitions}
        out: dict[TopicPartition, Errors] = {}
        for t in getattr(response, "Topics", None) or []:
            name = names.get(t.TopicId)
            if name is not None:
                for e in t.PartitionErrors:
                    out[(name, e.PartitionIndex)] = _error(e.ErrorCode)
        for e in getattr(response, "PartitionErrors", None) or []:
            out[(e.TopicName, e.PartitionIndex)] = _error(e.ErrorCode)
        return out

    def stop_replica_errors(self, req: StopReplicaOut, response: Any) -> dict[TopicPartition, Errors]:
        if response.ErrorCode != Errors.NONE:
            return {}
        return {(e.TopicName, e.PartitionIndex): _error(e.ErrorCode) for e in response.PartitionErrors}

    def alter_partition_items(
        self, req: Any, core: ZkControllerCore
    ) -> tuple[int, int, list[AlterPartitionItem]]:
        names = {t.topic_id: name for name, t in core.topics.items()}
        items = []
        for topic in req.Topics:
            name = topic.TopicName or names.get(topic.TopicId, "")
            for p in topic.Partitions:
                isr = [b.BrokerId for b in p.NewIsrWithEpochs] if p.NewIsrWithEpochs else list(p.NewIsr)
                items.append(
                    AlterPartitionItem(
                        (name, p.PartitionIndex),
                        p.LeaderEpoch,
                        tuple(isr),
                        p.PartitionEpoch,
                        p.LeaderRecoveryState,
                    )
                )
        return req.BrokerId, req.BrokerEpoch, items

    def alter_partition_response(
        self, req: Any, version: int, resp: Any, core: ZkControllerCore
    ) -> AlterPartitionResponse:
        error, answers = resp
        topics: dict[str, dict[str, Any]] = {}
        for a in answers:
            name = a.tp[0]
            topic_id = core.topics[name].topic_id if name in core.topics else None
            t = topics.setdefault(
                name,
                {"TopicName": name if version < 2 else "", "TopicId": topic_id, "Partitions": []}
                if topic_id is not None
                else {"TopicName": name if version < 2 else "", "Partitions": []},
            )
            st = a.state
            t["Partitions"].append(
                {
                    "PartitionIndex": a.tp[1],
                    "ErrorCode": int(a.error),
                    "LeaderId": st.leader if st else -1,
                    "LeaderEpoch": st.leader_epoch if st else -1,
                    "Isr": list(st.isr) if st else [],
                    "LeaderRecoveryState": st.leader_recovery_state if st else 0,
                    "PartitionEpoch": st.zk_version if st else -1,
                }
            )
        return AlterPartitionResponse.model_validate(
            {"ErrorCode": int(error), "Topics": list(topics.values())}
        )

    def controlled_shutdown_response(self, resp: Any) -> ControlledShutdownResponse:
        error, remaining = resp
        return ControlledShutdownResponse.model_validate(
            {
                "ErrorCode": int(error),
                "RemainingPartitions": [{"TopicName": t, "PartitionIndex": p} for t, p in remaining],
            }
        )


def _error(code: int) -> Errors:
    try:
        return Errors(code)
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR


def _host_port(b: LiveBroker) -> tuple[str, int]:
    ep = b.endpoint()
    return (ep.host, ep.port) if ep is not None else ("", -1)
