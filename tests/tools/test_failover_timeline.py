"""bench/failover.py's "committed" step: the first answer to the heartbeat that reported the dir."""

from __future__ import annotations

import json
from pathlib import Path

from tools.cluster.timeline import acknowledged_ms, iso_ms

ACK = "controller acknowledged offline log dir"


def _line(event: str, timestamp: str) -> str:
    return json.dumps({"dir_id": "x", "event": event, "level": "info", "timestamp": timestamp})


def test_the_first_acknowledgement_at_or_after_the_fault(tmp_path: Path) -> None:
    log = tmp_path / "broker-1.log"
    log.write_text(
        "\n".join(
            [
                _line(ACK, "2026-12-07T23:26:10.100000Z"),  # an earlier trial's
                _line("reporting offline log dir", "2026-12-07T23:26:18.213569Z"),
                "not json",
                _line(ACK, "2026-12-07T23:26:18.259251Z"),
                _line(ACK, "2026-12-07T23:26:19.000000Z"),
            ]
        )
        + "\n"
    )
    fault = iso_ms("2026-12-07T23:26:18.205000Z")
    assert fault is not None
    assert acknowledged_ms(log, fault) == iso_ms("2026-12-07T23:26:18.259251Z")
    assert acknowledged_ms(log, fault + 10_000) is None
    assert acknowledged_ms(tmp_path / "missing.log", fault) is None
