"""Denials are logged once per principal, operation and resource per interval, with a count of the
identical ones left out, so a client retrying what it may not do cannot flood the log (the guard's
own case is in test_guard)."""

from __future__ import annotations

from typing import Any

from structlog.testing import capture_logs

from kraftpy.security.denial_log import DenialLog


def still() -> float:
    """A clock that never moves: every denial falls in the first interval."""
    return 1000.0


def denials(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == "authorization failed"]


def test_each_principal_operation_and_resource_is_logged_on_its_own() -> None:
    log = DenialLog(60.0, clock=still)
    with capture_logs() as logs:
        for _ in range(3):
            log.denied("User:alice", "h", "READ", "TOPIC:a")
            log.denied("User:alice", "h", "WRITE", "TOPIC:a")
            log.denied("User:alice", "h", "READ", "TOPIC:b")
            log.denied("User:bob", "h", "READ", "TOPIC:a")
    assert [(e["principal"], e["operation"], e["resource"]) for e in denials(logs)] == [
        ("User:alice", "READ", "TOPIC:a"),
        ("User:alice", "WRITE", "TOPIC:a"),
        ("User:alice", "READ", "TOPIC:b"),
        ("User:bob", "READ", "TOPIC:a"),
    ]


def test_past_its_capacity_it_forgets_the_denial_logged_longest_ago() -> None:
    log = DenialLog(60.0, clock=still, max_tracked=2)
    with capture_logs() as logs:
        for resource in ("TOPIC:a", "TOPIC:b", "TOPIC:c", "TOPIC:b", "TOPIC:a"):
            log.denied("User:alice", "h", "READ", resource)
    # c pushed a out; b was still remembered, so only its first denial was logged
    assert [e["resource"] for e in denials(logs)] == ["TOPIC:a", "TOPIC:b", "TOPIC:c", "TOPIC:a"]
