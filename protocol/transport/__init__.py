"""RPC over HTTP: an aiohttp server app for `POST /rpc/<ApiName>` and a client for it."""

from protocol.transport.client import NO_RETRIES, RetryPolicy, RpcClient
from protocol.transport.codec import API_VERSION_HEADER, ERROR_MESSAGE_HEADER, JSON, MSGPACK
from protocol.transport.errors import RpcConnectionError, RpcError
from protocol.transport.offload import collector_paused, run_large
from protocol.transport.server import (
    HANDLERS,
    REGISTRY,
    Handler,
    HealthHook,
    add_handler,
    create_app,
    served_handler,
    set_guard,
    set_health_hook,
    start_server,
)

__all__ = [
    "API_VERSION_HEADER",
    "ERROR_MESSAGE_HEADER",
    "HANDLERS",
    "JSON",
    "MSGPACK",
    "NO_RETRIES",
    "REGISTRY",
    "Handler",
    "HealthHook",
    "RetryPolicy",
    "RpcClient",
    "RpcConnectionError",
    "RpcError",
    "add_handler",
    "collector_paused",
    "create_app",
    "run_large",
    "served_handler",
    "set_guard",
    "set_health_hook",
    "start_server",
]
