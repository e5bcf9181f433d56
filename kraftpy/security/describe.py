"""DescribeAcls and DescribeUserScramCredentials answered from the records that hold ACLs and SCRAM
credentials: a broker's image (`image.acls`, `image.scram`) or the controller's own managers keep
the latest AccessControlEntryRecord per Id and UserScramCredentialRecord per (user, mechanism), so
both answer with the same code, as Kafka's brokers (from their metadata cache) and controller do.

Answers are sorted (resources by type, pattern type and name; ACLs and users by their text) where
Kafka's come in hash order, so two answers over the same ACLs compare equal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kraftpy.security.acl import AclBinding, AclBindingFilter
from protocol.errors import Errors
from protocol.rpc.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from protocol.rpc.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)

DESCRIBE_DUPLICATE_USER = "Cannot describe SCRAM credentials for the same user twice in a single request: "
DESCRIBE_USER_THAT_DOES_NOT_EXIST = "Attempt to describe a user credential that does not exist: "


def matching_bindings(acl_records: Iterable[Any], flt: AclBindingFilter) -> list[AclBinding]:
    """The bindings of `acl_records` (AccessControlEntryRecords) that `flt` matches."""
    return [b for b in (AclBinding.from_record(r) for r in acl_records) if flt.matches(b)]


def describe_acls(acl_records: Iterable[Any], req: DescribeAclsRequest, version: int) -> DescribeAclsResponse:
    R = DescribeAclsResponse
    flt = AclBindingFilter.from_request(req)
    if flt.is_unknown():
        # Kafka refuses such a request when it parses it (DescribeAclsRequest.validate).
        return R(
            ErrorCode=int(Errors.INVALID_REQUEST),
            ErrorMessage="DescribeAclsRequest contains UNKNOWN elements",
        )
    by_pattern: dict[tuple[int, int, str], list[AclBinding]] = {}
    for b in matching_bindings(acl_records, flt):
        by_pattern.setdefault((b.resource_type, b.pattern_type, b.resource_name), []).append(b)
    return R(
        Resources=[
            R.DescribeAclsResource(
                ResourceType=rtype,
                ResourceName=name,
                PatternType=ptype,
                Acls=[b.to_description() for b in sorted(bindings, key=_entry_order)],
            )
            for (rtype, ptype, name), bindings in sorted(by_pattern.items())
        ]
    )


def _entry_order(b: AclBinding) -> tuple[str, str, int, int]:
    return (b.principal, b.host, b.operation, b.permission)


def describe_user_scram_credentials(
    scram_records: Iterable[Any], req: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    """Per user: each mechanism with its iterations (Kafka's ScramImage.describe). A user named
    twice is answered DUPLICATE_RESOURCE, one without credentials RESOURCE_NOT_FOUND."""
    R = DescribeUserScramCredentialsResponse
    credentials: dict[str, dict[int, int]] = {}
    for r in scram_records:
        credentials.setdefault(r.Name, {})[r.Mechanism] = r.Iterations
    asked: dict[str, bool] = {}  # user -> named more than once
    if req.Users:
        for u in req.Users:
            asked[u.Name] = u.Name in asked
    else:
        asked = dict.fromkeys(sorted(credentials), False)
    results = []
    for user, duplicate in asked.items():
        if duplicate:
            results.append(
                R.DescribeUserScramCredentialsResult(
                    User=user,
                    ErrorCode=int(Errors.DUPLICATE_RESOURCE),
                    ErrorMessage=DESCRIBE_DUPLICATE_USER + user,
                )
            )
            continue
        mechanisms = credentials.get(user)
        if not mechanisms:
            results.append(
                R.DescribeUserScramCredentialsResult(
                    User=user,
                    ErrorCode=int(Errors.RESOURCE_NOT_FOUND),
                    ErrorMessage=DESCRIBE_USER_THAT_DOES_NOT_EXIST + user,
                )
            )
            continue
        results.append(
            R.DescribeUserScramCredentialsResult(
                User=user,
                CredentialInfos=[
                    R.CredentialInfo(Mechanism=m, Iterations=i) for m, i in sorted(mechanisms.items())
                ],
            )
        )
    return R(Results=results)
