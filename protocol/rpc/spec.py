"""ApiSpec: what the transport needs to know about one Kafka API."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from protocol.errors import Errors, KafkaError
from protocol.rpc.message import RpcMessage


def _top_level_error(spec: ApiSpec, code: Errors) -> RpcMessage:
    # Like Kafka's getErrorResponse for these APIs: only the top-level ErrorCode is filled in.
    return spec.response_model(ErrorCode=int(code))


@dataclass(frozen=True)
class ApiSpec:
    """One API: its name (the URL path segment), key, supported versions and models.

    `error_response(spec, code)` builds the response sent when a handler fails with `code`; the
    default fills a top-level `ErrorCode`. APIs whose response has no top-level ErrorCode (Fetch before
    v7, CreateTopics, ...) pass their own, as Kafka's per-request getErrorResponse does.
    """

    name: str
    api_key: int
    min_version: int
    max_version: int
    request_model: type[RpcMessage]
    response_model: type[RpcMessage]
    error_response_factory: Callable[[ApiSpec, Errors], RpcMessage] = field(default=_top_level_error)
    flexible_versions: str = "none"
    """Versions written with compact lengths and tagged fields in Kafka's binary protocol (its
    `flexibleVersions`); the HTTP transport's msgpack/JSON bodies do not depend on it."""

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def check_version(self, version: int) -> None:
        if not self.supports(version):
            raise KafkaError(
                Errors.UNSUPPORTED_VERSION,
                f"{self.name} supports versions {self.min_version}-{self.max_version}, not {version}",
            )

    def error_response(self, code: Errors) -> RpcMessage:
        return self.error_response_factory(self, code)
