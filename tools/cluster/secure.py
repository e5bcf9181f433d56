"""The files and the ACLs of a `kraftpy cluster up --secure` cluster.

`create_files` makes `<work dir>/security/` (SecurityLayout): a private CA, a certificate per node,
the operator's admin certificate, `admin.properties` (Kafka's --command-config, for kraftpy's tools)
and `client.properties` (librdkafka's settings for SASL_SSL with the SCRAM user `client`, for kcat
-F and confluent-kafka). The controllers are formatted with that user's credential
(`scram_arguments`), and once the cluster is up `grant_client_acls` lets the user produce and consume
every topic, through the admin certificate as `kraftpy acls` would.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kraftpy.security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from tools.client.security import admin_properties, command_config
from tools.cluster.certs import client_cert, create_ca, node_cert, write_private
from tools.cluster.errors import ClusterError
from tools.cluster.spec import ADMIN_USER, CLIENT_USER, NodePlan, SecurityLayout

CLIENT_MECHANISM = "SCRAM-SHA-512"

CLIENT_TOPIC_OPERATIONS = ("READ", "WRITE", "DESCRIBE", "CREATE")
CLIENT_GROUP_OPERATIONS = ("READ",)

ACL_SETTLE_S = 15.0
"""How long the brokers get to show the client's ACLs before `up` gives up."""


@dataclass(frozen=True)
class SecurityFiles:
    layout: SecurityLayout
    client_password: str


def create_files(layout: SecurityLayout, nodes: Sequence[NodePlan]) -> SecurityFiles:
    """A new CA and every certificate and properties file of the cluster of `nodes`, owner-only.
    Files of an earlier cluster in the same dir are replaced: a new CA makes them useless anyway."""
    ca = create_ca(layout.dir, "kraftpy cluster CA")
    for node in nodes:
        pair = node_cert(ca, node.node_id, layout.dir, hosts=[node.host])
        assert pair.keystore == layout.node_keystore(node.node_id)
    admin = client_cert(ca, ADMIN_USER, layout.dir)
    write_properties(
        layout.admin_properties,
        admin_properties(admin.keystore, layout.ca),
        "kraftpy's tools: kraftpy --command-config FILE ... (the admin certificate, a super user)",
    )
    password = secrets.token_urlsafe(18)
    kafka = ",".join(n.kafka_bootstrap for n in nodes if n.kafka_bootstrap)
    write_properties(
        layout.client_properties,
        client_properties(kafka, password, layout.ca),
        f"Kafka's clients (librdkafka: kcat -F FILE): SASL_SSL as the SCRAM user {CLIENT_USER}",
    )
    return SecurityFiles(layout, password)


def client_properties(bootstrap: str, password: str, ca: Path) -> dict[str, str]:
    """librdkafka's settings for the client user over SASL_SSL."""
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": CLIENT_MECHANISM,
        "sasl.username": CLIENT_USER,
        "sasl.password": password,
        "ssl.ca.location": str(ca),
    }


def write_properties(path: Path, props: Mapping[str, str], title: str) -> None:
    """`key=value` lines, owner-only: both files hold secrets (a key's path, a password). Values
    are written as they are, since librdkafka's reader (kcat -F) knows no escapes."""
    lines = [f"# {title}", *(f"{k}={v}" for k, v in props.items())]
    write_private(path, ("\n".join(lines) + "\n").encode())


def read_client_password(layout: SecurityLayout) -> str:
    from kraftpy.properties import load_properties

    return load_properties(layout.client_properties)["sasl.password"]


def scram_arguments(password: str) -> list[str]:
    """`kraftpy storage format --add-scram` values giving the client user its credential."""
    return [f"{CLIENT_MECHANISM}=[name={CLIENT_USER},password={password}]"]


def client_bindings() -> list[AclBinding]:
    """The client user's ACLs: produce, consume and create on every topic, any group."""
    principal = f"User:{CLIENT_USER}"

    def allow(rtype: ResourceType, op: str) -> AclBinding:
        return AclBinding(
            rtype, "*", PatternType.LITERAL, principal, "*", AclOperation[op], AclPermissionType.ALLOW
        )

    return [allow(ResourceType.TOPIC, op) for op in CLIENT_TOPIC_OPERATIONS] + [
        allow(ResourceType.GROUP, op) for op in CLIENT_GROUP_OPERATIONS
    ]


def grant_client_acls(layout: SecurityLayout, brokers: Sequence[NodePlan]) -> int:
    """CreateAcls for the client user through a broker, with the admin certificate; returns once
    every broker's image has them (so a client may start at once). The number of ACLs."""
    with command_config(layout.admin_properties):
        return asyncio.run(_grant([b.bootstrap for b in brokers]))


async def _grant(addresses: Sequence[str]) -> int:
    from kraftpy.security.acl import AclBindingFilter
    from protocol.errors import Errors, KafkaError
    from tools.client.admin import Admin

    bindings = client_bindings()
    async with Admin(list(addresses)) as admin:
        try:
            results = await admin.create_acls(bindings)
        except KafkaError as e:
            raise ClusterError(
                f"granting the {CLIENT_USER} user its ACLs failed: {e.message or e.code.name}"
            ) from None
    refused = [r for r in results if r.error is not Errors.NONE]
    if refused:
        r = refused[0]
        raise ClusterError(
            f"granting the {CLIENT_USER} user its ACLs failed: {r.error.name} {r.message or ''}".rstrip()
        )
    wanted = set(bindings)
    for address in addresses:
        deadline = time.monotonic() + ACL_SETTLE_S
        async with Admin([address]) as one:
            while True:
                try:
                    if wanted <= set(await one.describe_acls(AclBindingFilter.ANY)):
                        break
                except KafkaError:
                    pass
                if time.monotonic() > deadline:
                    raise ClusterError(f"broker {address} did not show the {CLIENT_USER} user's ACLs")
                await asyncio.sleep(0.1)
    return len(bindings)
