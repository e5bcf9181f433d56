"""Logging setup: JSON lines for processes, readable console lines for the `kraftpy` CLI.

Both route the standard library's logging (aiohttp, asyncio) through the same structlog processors,
so every line of a process is one JSON object carrying its node id and role:

    {"event": "registered", "broker_epoch": 12, "node_id": 1, "role": "broker", "level": "info",
     "logger": "broker.lifecycle", "timestamp": "2024-10-22T09:14:03.123456Z"}

Modules log with `structlog.get_logger(__name__)` and bind context (`log.bind(dir=...)`) as usual.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, Processor


def _static_fields(fields: Mapping[str, Any]) -> Processor:
    def add(_logger: Any, _method: str, event_dict: EventDict) -> EventDict:
        for k, v in fields.items():
            event_dict.setdefault(k, v)
        return event_dict

    return add


def _configure(
    renderer: Processor, *, level: int | str, stream: TextIO, static: Mapping[str, Any], json: bool
) -> None:
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.PositionalArgumentsFormatter(),
        _static_fields(static),
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    final: list[Processor] = [structlog.stdlib.ProcessorFormatter.remove_processors_meta]
    if json:
        final.append(structlog.processors.format_exc_info)
    final.append(renderer)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(foreign_pre_chain=shared, processors=final))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level)
    # aiohttp's access log is noise at INFO for an RPC server; errors still come through.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def configure_process_logging(
    *,
    role: str,
    node_id: int | None,
    level: int | str = "INFO",
    stream: TextIO | None = None,
    log_format: str = "json",
    **static: Any,
) -> None:
    """JSON lines on `stream` (stderr by default), or readable lines with `log_format="text"`;
    node_id, role and `static` fields on every line."""
    out = stream or sys.stderr
    text = log_format == "text"
    _configure(
        structlog.dev.ConsoleRenderer(colors=out.isatty())
        if text
        else structlog.processors.JSONRenderer(default=str),
        level=level,
        stream=out,
        static={"node_id": node_id, "role": role, **static},
        json=not text,
    )


def configure_cli_logging(level: int | str = "WARNING", stream: TextIO | None = None) -> None:
    """Readable lines for people at a terminal (colors only when it is one)."""
    out = stream or sys.stderr
    _configure(
        structlog.dev.ConsoleRenderer(colors=out.isatty()),
        level=level,
        stream=out,
        static={},
        json=False,
    )
