"""A broker's ACL and SCRAM APIs: describes answered from its image, changes forwarded to the controller
(and answered item by item when the controller cannot be reached)."""

from __future__ import annotations

import asyncio
from typing import Any

from broker.dataplane import CLIENT_APIS
from broker.dataplane.security_apis import SecurityApis
from kraftpy.image import MetadataDelta, MetadataImage
from protocol import metadata_records as mr
from protocol.errors import Errors, KafkaError
from protocol.rpc.alter_user_scram_credentials import AlterUserScramCredentialsRequest
from protocol.rpc.create_acls import CreateAclsRequest, CreateAclsResponse
from protocol.rpc.delete_acls import DeleteAclsRequest
from protocol.rpc.describe_acls import DescribeAclsRequest
from protocol.rpc.describe_user_scram_credentials import DescribeUserScramCredentialsRequest
from protocol.uuid import Uuid


class FakeController:
    def __init__(self, answer: Any = None, error: KafkaError | None = None) -> None:
        self.answer = answer
        self.error = error
        self.calls: list[tuple[str, Any, int | None]] = []

    async def call(self, api: str, request: Any, version: int | None = None, **kw: Any) -> Any:
        self.calls.append((api, request, version))
        if self.error is not None:
            raise self.error
        return self.answer


def image() -> MetadataImage:
    d = MetadataDelta(MetadataImage.EMPTY)
    d.replay(
        mr.AccessControlEntryRecord(
            Id=Uuid.from_longs(7, 7),
            ResourceType=2,
            ResourceName="orders",
            PatternType=3,
            Principal="User:alice",
            Host="*",
            Operation=3,
            PermissionType=3,
        )
    )
    d.replay(
        mr.UserScramCredentialRecord(
            Name="alice", Mechanism=2, Salt=b"s", StoredKey=b"k", ServerKey=b"v", Iterations=8192
        )
    )
    return d.apply()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_the_broker_serves_the_five_apis_on_its_kafka_listener() -> None:
    apis = SecurityApis(image, FakeController())
    assert set(apis.handlers()) <= set(CLIENT_APIS)
    assert len(apis.handlers()) == 5


def test_describes_come_from_the_image_without_the_controller() -> None:
    controller = FakeController(error=KafkaError(Errors.NOT_CONTROLLER))
    apis = SecurityApis(image, controller)
    acls = run(
        apis.describe_acls(
            DescribeAclsRequest(ResourceTypeFilter=1, PatternTypeFilter=1, Operation=1, PermissionType=1), 3
        )
    )
    assert [(r.ResourceName, [a.Principal for a in r.Acls]) for r in acls.Resources] == [
        ("orders", ["User:alice"])
    ]
    creds = run(apis.describe_user_scram_credentials(DescribeUserScramCredentialsRequest(), 0))
    assert [(r.User, [(c.Mechanism, c.Iterations) for c in r.CredentialInfos]) for r in creds.Results] == [
        ("alice", [(2, 8192)])
    ]
    assert controller.calls == []


def test_changes_are_forwarded_at_the_clients_version() -> None:
    answer = CreateAclsResponse(Results=[CreateAclsResponse.AclCreationResult()])
    controller = FakeController(answer)
    req = CreateAclsRequest(Creations=[CreateAclsRequest.AclCreation(ResourceName="t")])
    assert run(SecurityApis(image, controller).create_acls(req, 2)) is answer
    assert controller.calls == [("CreateAcls", req, 2)]


def test_an_unreachable_controller_is_answered_for_every_item() -> None:
    apis = SecurityApis(image, FakeController(error=KafkaError(Errors.NOT_CONTROLLER, "no controller")))
    C = CreateAclsRequest
    created = run(apis.create_acls(C(Creations=[C.AclCreation(), C.AclCreation()]), 3))
    assert [(r.ErrorCode, r.ErrorMessage) for r in created.Results] == [
        (Errors.NOT_CONTROLLER, "no controller")
    ] * 2
    D = DeleteAclsRequest
    deleted = run(apis.delete_acls(D(Filters=[D.DeleteAclsFilter()]), 3))
    assert [r.ErrorCode for r in deleted.FilterResults] == [Errors.NOT_CONTROLLER]
    A = AlterUserScramCredentialsRequest
    altered = run(
        apis.alter_user_scram_credentials(
            A(
                Deletions=[A.ScramCredentialDeletion(Name="bob", Mechanism=1)],
                Upsertions=[
                    A.ScramCredentialUpsertion(Name="alice", Mechanism=1),
                    A.ScramCredentialUpsertion(Name="bob", Mechanism=2),
                ],
            ),
            0,
        )
    )
    assert [(r.User, r.ErrorCode) for r in altered.Results] == [
        ("bob", Errors.NOT_CONTROLLER),
        ("alice", Errors.NOT_CONTROLLER),
    ]
