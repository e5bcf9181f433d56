"""`kraftpy acls` and `kraftpy configs` against a real controller and broker (processes): an ACL and a
SCRAM credential added through the broker's Kafka listener are written by the controller as records
and listed back through the broker, from its own image; removing them takes them out again."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from kraftpy.metalog import MetadataLog
from tests.dataplane.cluster import DataCluster, wait_until
from tests.support.processes import ProcessSet
from tools.cluster.launcher import kraftpy_command

pytestmark = pytest.mark.timeout(300)

ORDERS = "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
ALICE_READ = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"


@pytest.fixture
def one_broker(tmp_path: Path) -> Iterator[DataCluster]:
    procs = ProcessSet(tmp_path)
    try:
        c = DataCluster.build_quick(tmp_path, procs, {1: [tmp_path / "b1d0"]}, kafka=True)
        c.start()
        yield c
    finally:
        procs.stop_all()


def kraftpy(*args: str) -> tuple[int, str, str]:
    # stdin is no terminal, whoever runs the tests: --remove must then insist on --force
    proc = subprocess.run(
        kraftpy_command(*args), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
    )
    return proc.returncode, proc.stdout, proc.stderr


def controller_records(c: DataCluster) -> list[str]:
    assert c.controller_meta is not None
    with capture_logs(), MetadataLog.open(c.controller_meta, read_only=True) as mlog:
        return [
            type(e.record.message).__name__
            for e in mlog.entries(from_snapshot=False)
            if hasattr(e.record, "message")
        ]


def test_an_acl_and_a_credential_go_through_the_controller_and_come_back_from_the_broker(
    one_broker: DataCluster,
) -> None:
    c = one_broker
    broker = c.kafka_bootstrap
    assert broker, "the broker serves Kafka's protocol"

    code, out, err = kraftpy(
        "acls", "--bootstrap-server", broker, "--add", "--allow-principal", "User:alice",
        "--operation", "Read", "--topic", "orders",
    )  # fmt: skip
    assert code == 0, out + err
    assert out.startswith(f"Adding ACLs for resource `{ORDERS}`: \n \t{ALICE_READ} \n\n")
    # what --add lists afterwards already comes from the broker's image
    assert out.endswith(f"Current ACLs for resource `{ORDERS}`: \n \t{ALICE_READ} \n\n")

    code, out, err = kraftpy(
        "configs", "--bootstrap-server", broker, "--entity-type", "users", "--entity-name", "alice",
        "--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=alice-secret]",
    )  # fmt: skip
    assert (code, out) == (0, "Completed updating config for user alice.\n"), err

    records = controller_records(c)
    assert "AccessControlEntryRecord" in records and "UserScramCredentialRecord" in records

    code, out, err = kraftpy("acls", "--bootstrap-server", broker, "--list")
    assert (code, out) == (0, f"Current ACLs for resource `{ORDERS}`: \n \t{ALICE_READ} \n\n"), err
    # the controller answers from its own state, over its RPC listener, the same
    assert kraftpy("acls", "--bootstrap-server", c.controller_address, "--list")[1] == out

    def described() -> str | None:
        code, out, _ = kraftpy(
            "configs", "--bootstrap-server", broker, "--entity-type", "users", "--describe"
        )
        return out if code == 0 and "alice" in out else None

    out = wait_until("the broker to show alice's credential", described, timeout=30)
    assert out == "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=8192\n"

    # bad input: one line, non-zero, and nothing more in the controller's log
    before = len(controller_records(c))
    code, out, err = kraftpy(
        "configs", "--bootstrap-server", broker, "--user", "bob", "--alter",
        "--add-config", "SCRAM-SHA-512=[iterations=10,password=x]",
    )  # fmt: skip
    assert code != 0 and err.count("\n") == 1 and out == ""
    code, _, err = kraftpy("acls", "--bootstrap-server", broker, "--remove", "--topic", "orders")
    assert code != 0 and "--force" in err
    written = [r for r in controller_records(c)[before:] if "Scram" in r or "AccessControl" in r]
    assert written == []

    code, out, err = kraftpy("acls", "--bootstrap-server", broker, "--remove", "--force", "--topic", "orders")
    assert (code, out) == (0, ""), err
    code, out, err = kraftpy(
        "configs",
        "--bootstrap-server",
        broker,
        "--user",
        "alice",
        "--alter",
        "--delete-config",
        "SCRAM-SHA-512",
    )
    assert code == 0, err
    removed = controller_records(c)[before:]
    assert "RemoveAccessControlEntryRecord" in removed and "RemoveUserScramCredentialRecord" in removed

    def gone() -> str | None:
        code, out, _ = kraftpy("configs", "--bootstrap-server", broker, "--user", "alice", "--describe")
        return out if code == 0 and "Error retrieving" in out else None

    out = wait_until("the credential to leave the broker's image", gone, timeout=30)
    assert "ResourceNotFoundException" in out
    assert kraftpy("acls", "--bootstrap-server", broker, "--list")[1] == ""
