"""Process logs are JSON lines with node id and role; CLI logs are readable text."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from kraftpy.logging import configure_cli_logging, configure_process_logging


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.reset_defaults()
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in handlers:
        root.addHandler(h)
    root.setLevel(level)


def test_process_lines_are_json_with_node_and_role() -> None:
    out = io.StringIO()
    configure_process_logging(role="broker", node_id=3, stream=out)
    log = structlog.get_logger("broker.lifecycle")
    log.info("registered", broker_epoch=12)
    logging.getLogger("aiohttp.server").error("from %s", "stdlib")
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("failed")
    log.debug("hidden at INFO")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) == 3
    assert all(
        entry["node_id"] == 3 and entry["role"] == "broker" and "timestamp" in entry for entry in lines
    )
    assert (
        lines[0]["event"] == "registered" and lines[0]["broker_epoch"] == 12 and lines[0]["level"] == "info"
    )
    assert lines[1]["event"] == "from stdlib" and lines[1]["logger"] == "aiohttp.server"
    assert "ValueError: boom" in lines[2]["exception"]


def test_cli_lines_are_readable_text() -> None:
    out = io.StringIO()
    configure_cli_logging(stream=out)
    structlog.get_logger("kraftpy.config").warning("unknown config key ignored", key="foo")
    text = out.getvalue()
    assert "unknown config key ignored" in text and "key=foo" in text
    assert not text.lstrip().startswith("{")


def test_process_lines_can_be_readable_text_for_a_terminal() -> None:
    out = io.StringIO()
    configure_process_logging(role="controller", node_id=3000, stream=out, log_format="text")
    structlog.get_logger("controller.story").warning("log dir offline", broker_id=2)
    [line] = out.getvalue().splitlines()
    assert "log dir offline" in line and "broker_id=2" in line and "node_id=3000" in line
    assert not line.startswith("{")


def test_servers_take_log_format_from_the_command_line_or_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kraftpy.process import server_arg_parser

    assert server_arg_parser("x", "y").parse_args(["-c", "f"]).log_format == "json"
    assert server_arg_parser("x", "y").parse_args(["-c", "f", "--log-format", "text"]).log_format == "text"
    monkeypatch.setenv("KRAFTPY_LOG_FORMAT", "text")
    assert server_arg_parser("x", "y").parse_args(["-c", "f"]).log_format == "text"
    with pytest.raises(SystemExit):
        server_arg_parser("x", "y").parse_args(["-c", "f", "--log-format", "xml"])
