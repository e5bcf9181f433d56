"""RPC request/response models and the registry of APIs the transport serves.

Adding an API: create `protocol/rpc/<api_in_snake_case>.py` defining `<Api>Request` and
`<Api>Response` (subclasses of RpcMessage, Kafka's field names, `versions(...)` markers for fields
that not every version has) and a module-level `SPEC = ApiSpec(...)`. Modules here are discovered
at import, so nothing else needs editing. Field types come from `protocol.rpc.types`.
"""

from __future__ import annotations

import importlib
import pkgutil

from protocol.rpc.message import FieldVersions, RpcMessage, VersionRange, versions
from protocol.rpc.spec import ApiSpec

_INFRASTRUCTURE = {"message", "spec", "types"}

API_SPECS: dict[str, ApiSpec] = {}
"""API name (as in `/rpc/<ApiName>`) -> spec."""


def register(spec: ApiSpec) -> ApiSpec:
    existing = API_SPECS.get(spec.name)
    if existing is not None and existing is not spec:
        raise ValueError(f"API {spec.name} is registered twice")
    if any(s.api_key == spec.api_key and s.name != spec.name for s in API_SPECS.values()):
        raise ValueError(f"api key {spec.api_key} of {spec.name} is already used")
    API_SPECS[spec.name] = spec
    return spec


def _discover() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in _INFRASTRUCTURE:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        spec = getattr(module, "SPEC", None)
        if isinstance(spec, ApiSpec):
            register(spec)


_discover()

from protocol.rpc.assign_replicas_to_dirs import (  # noqa: E402
    AssignReplicasToDirsRequest,
    AssignReplicasToDirsResponse,
)
from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse  # noqa: E402
from protocol.rpc.broker_registration import (  # noqa: E402
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)

__all__ = [
    "API_SPECS",
    "ApiSpec",
    "AssignReplicasToDirsRequest",
    "AssignReplicasToDirsResponse",
    "BrokerHeartbeatRequest",
    "BrokerHeartbeatResponse",
    "BrokerRegistrationRequest",
    "BrokerRegistrationResponse",
    "FieldVersions",
    "RpcMessage",
    "VersionRange",
    "register",
    "versions",
]
