"""Base class for RPC request/response models, with Kafka's per-field versions.

Each field is declared with its Kafka name and type; a `versions(...)` marker in its Annotated
metadata says which versions carry it (no marker means "0+"). Wire dicts (the msgpack or JSON
body) are produced and checked against a version the way Kafka's generated code does:

- encoding (`to_wire`): a field the version lacks is left out; if it holds a non-default value
  that is an error unless the field is ignorable (Kafka: UnsupportedVersionException,
  "Attempted to write a non-default X at version N"); tagged fields equal to their default are omitted;
- decoding (`from_wire`): every non-tagged field the version has must be present (Kafka's JSON
  converter: "unable to locate field X, which is mandatory in version N"); tagged ones default;
  a field the version lacks is dropped if ignorable or default, and rejected otherwise, since
  such a body could not have been encoded at that version. Unknown keys are ignored.

Decoding failures raise KafkaError(INVALID_REQUEST), encoding failures KafkaError(UNSUPPORTED_VERSION).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from types import UnionType
from typing import Annotated, Any, Literal, Self, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError

from protocol.errors import Errors, KafkaError
from protocol.uuid import Uuid

Encoding = Literal["msgpack", "json"]


@dataclass(frozen=True)
class VersionRange:
    """Kafka's version spec: "N+", "N-M", "N" or "none"."""

    lowest: int
    highest: int | None  # None: open-ended

    @classmethod
    def parse(cls, text: str) -> VersionRange:
        text = text.strip()
        if text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int):
            return False
        return version >= self.lowest and (self.highest is None or version <= self.highest)

    def __str__(self) -> str:
        if self.highest is None:
            return f"{self.lowest}+"
        if self.highest < self.lowest:
            return "none"
        return f"{self.lowest}-{self.highest}" if self.highest != self.lowest else str(self.lowest)


_NONE = VersionRange(1, 0)
_ALL = VersionRange(0, None)


@dataclass(frozen=True)
class FieldVersions:
    """Which versions carry a field, and how Kafka treats it outside them."""

    versions: VersionRange = _ALL
    ignorable: bool = False
    tagged: VersionRange = _NONE
    tag: int | None = None
    nullable: VersionRange = _NONE


def versions(
    spec: str = "0+",
    *,
    ignorable: bool = False,
    tagged: str | None = None,
    tag: int | None = None,
    nullable: str | None = None,
) -> FieldVersions:
    """Annotated marker: `LogDirs: Annotated[list[Uuid], versions("2+", ignorable=True)]`."""
    return FieldVersions(
        versions=VersionRange.parse(spec),
        ignorable=ignorable,
        tagged=VersionRange.parse(tagged) if tagged else _NONE,
        tag=tag,
        nullable=VersionRange.parse(nullable) if nullable else _NONE,
    )


def _invalid(msg: str) -> KafkaError:
    return KafkaError(Errors.INVALID_REQUEST, msg)


def describe_validation_error(e: ValidationError, prefix: str = "") -> str:
    """One line naming each bad field by its path, without pydantic's help URLs; `prefix` is the path
    of the struct that was validated ("Topics.3.")."""
    parts = []
    for err in e.errors(include_url=False):
        loc = prefix + ".".join(str(p) for p in err["loc"])
        loc = loc.rstrip(".") or "body"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


class RpcMessage(BaseModel):
    """A Kafka request, response or nested struct. Fields are Kafka's names; omitted ones take Kafka's defaults."""

    model_config = ConfigDict(strict=True, extra="ignore", validate_assignment=False)

    @classmethod
    @cache
    def field_versions(cls) -> dict[str, FieldVersions]:
        out: dict[str, FieldVersions] = {}
        for name, info in cls.model_fields.items():
            fv = next((m for m in info.metadata if isinstance(m, FieldVersions)), FieldVersions())
            out[name] = fv
        return out

    @classmethod
    def field_default(cls, name: str) -> Any:
        # Not FieldInfo.get_default(call_default_factory=True): it inspects the factory's signature on
        # every call (parsing the text signature of builtins such as `list`), ~50 us a field, and
        # encoding and decoding ask for every field's default.
        factory, default = cls._defaults()[name]
        if factory is not None:
            return factory()
        return copy.deepcopy(default) if isinstance(default, list | dict | set) else default

    @classmethod
    @cache
    def _defaults(cls) -> dict[str, tuple[Callable[[], Any] | None, Any]]:
        return {name: (info.default_factory, info.default) for name, info in cls.model_fields.items()}  # type: ignore[misc]

    @classmethod
    @cache
    def _wire_plan(cls, version: int) -> tuple[tuple[str, bool, bool, bool, bool, Any], ...]:
        """Per field, for `version`: (name, present, nullable, tagged, ignorable, default to compare
        with). Computed once per class and version: encoding a large answer asks it per struct."""
        return tuple(
            (
                name,
                version in fv.versions,
                version in fv.nullable,
                version in fv.tagged,
                fv.ignorable,
                cls.field_default(name),
            )
            for name, fv in cls.field_versions().items()
        )

    # ---- encoding -------------------------------------------------------------------------------

    def to_wire(self, version: int, encoding: Encoding = "json") -> dict[str, Any]:
        """The body dict for `version`: Uuids as 16 bytes (msgpack) or 22-char text (json)."""
        return self._to_wire(version, encoding, type(self).__name__)

    def _to_wire(self, version: int, encoding: Encoding, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, present, nullable, tagged, ignorable, default in type(self)._wire_plan(version):
            value = getattr(self, name)
            if not present:
                if not ignorable and value != default:
                    raise KafkaError(
                        Errors.UNSUPPORTED_VERSION,
                        f"Attempted to write a non-default {path}.{name} at version {version}",
                    )
                continue
            if value is None and not nullable:
                raise KafkaError(
                    Errors.UNSUPPORTED_VERSION, f"{path}.{name} is not nullable at version {version}"
                )
            if tagged and value == default:
                continue
            out[name] = _dump(value, version, encoding, path, name)
        return out

    def to_json_dict(self, version: int | None = None) -> dict[str, Any]:
        """Kafka field names, Uuids as text; fields absent at `version` left out when one is given."""
        if version is None:
            return self.model_dump(mode="json")
        return self.to_wire(version, "json")

    # ---- decoding -------------------------------------------------------------------------------

    @classmethod
    def from_wire(cls, data: Any, version: int, *, piecewise: bool = False) -> Self:
        """Validate a decoded body for `version`; raises KafkaError(INVALID_REQUEST) on any problem.

        `piecewise`, for large bodies: each struct in a list is validated by a call of its own. One
        pydantic call holds the GIL until it returns (0.4 s for a Metadata naming 100,000 topics), so
        a worker thread validating a large body in one call stalls the event loop all the same.
        """
        if not isinstance(data, dict):
            raise _invalid(f"{cls.__name__} body must be a map of field names, got {type(data).__name__}")
        if piecewise:
            return cls.from_large_wire(data, version)[0]
        else:
            try:
                msg = cls.model_validate(data)
            except ValidationError as e:
                raise _invalid(describe_validation_error(e)) from None
        msg._check_version(version, cls.__name__)
        return msg

    @classmethod
    def from_large_wire(cls, data: Any, version: int) -> tuple[Self, int]:
        """`from_wire(piecewise=True)`, and how many structs the body holds besides itself."""
        if not isinstance(data, dict):
            raise _invalid(f"{cls.__name__} body must be a map of field names, got {type(data).__name__}")
        count = [0]
        msg = cls._validate_piecewise(data, "", count)
        msg._check_version(version, cls.__name__)
        return msg, count[0]

    @classmethod
    def _validate_piecewise(cls, data: dict[str, Any], path: str, count: list[int]) -> Self:
        struct_lists = cls._struct_lists()
        lists = {n: v for n, v in data.items() if n in struct_lists and isinstance(v, list) and v}
        try:
            # The struct itself, with its lists of structs empty; they are validated below.
            head = cls.model_validate({**data, **{n: [] for n in lists}})
        except ValidationError as e:
            raise _invalid(describe_validation_error(e, path)) from None
        if not lists:
            return head
        update: dict[str, list[RpcMessage]] = {}
        for name, items in lists.items():
            item_cls, max_length = struct_lists[name]
            where = f"{path}{name}"
            if max_length is not None and len(items) > max_length:
                raise _invalid(
                    f"{where}: List should have at most {max_length} items after validation, not {len(items)}"
                )
            out = []
            count[0] += len(items)
            for i, item in enumerate(items):
                if not isinstance(item, dict):
                    raise _invalid(
                        f"{where}.{i}: Input should be a valid dictionary or instance of {item_cls.__name__}"
                    )
                out.append(item_cls._validate_piecewise(item, f"{where}.{i}.", count))
            update[name] = out
        return head.model_copy(update=update)

    @classmethod
    @cache
    def _struct_lists(cls) -> dict[str, tuple[type[RpcMessage], int | None]]:
        """{field: (struct type, max length)} for the fields that are lists of structs."""
        out: dict[str, tuple[type[RpcMessage], int | None]] = {}
        for name, info in cls.model_fields.items():
            for arg in (info.annotation, *get_args(info.annotation)):
                if get_origin(arg) is list:
                    (item,) = get_args(arg)
                    if isinstance(item, type) and issubclass(item, RpcMessage):
                        limit = next((m.max_length for m in info.metadata if hasattr(m, "max_length")), None)
                        out[name] = (item, limit)
        return out

    def _check_version(self, version: int, path: str) -> None:
        mandatory, may_be_null, may_nest, absent = type(self)._version_checks(version)
        present = self.model_fields_set
        # The usual request passes the field-by-field walk below without an error or a change:
        # decided here from set operations and the few fields that could fail. Anything else
        # takes the walk, so an error names the first field it concerns, as the walk finds it.
        if mandatory <= present and absent.isdisjoint(present):
            for name in may_be_null:
                if getattr(self, name) is None:
                    break
            else:
                for name in may_nest:
                    value = getattr(self, name)
                    if isinstance(value, RpcMessage | list):
                        _check_nested(value, version, path, name)
                return
        self._check_version_walk(version, path)

    @classmethod
    @cache
    def _version_checks(
        cls, version: int
    ) -> tuple[frozenset[str], tuple[str, ...], tuple[str, ...], frozenset[str]]:
        """For `version`: (mandatory fields, fields that may hold a null they must not, fields that
        may hold structs, fields the version lacks), in the walk's field order."""
        plan = cls._wire_plan(version)
        fields = cls.model_fields
        return (
            frozenset(name for name, in_version, _, tagged, _, _ in plan if in_version and not tagged),
            tuple(
                name
                for name, in_version, nullable, _, _, default in plan
                if in_version and not nullable and (default is None or _admits_none(fields[name].annotation))
            ),
            tuple(name for name, in_version, *_ in plan if in_version and _may_nest(fields[name].annotation)),
            frozenset(name for name, in_version, *_ in plan if not in_version),
        )

    @classmethod
    @cache
    def declares_only_plain_values(cls) -> bool:
        """Whether every field is declared an int, bool, str or None (or a union of them): an
        answer of such a class holds no struct, list or id, whatever its values."""
        return all(_plain(info.annotation) for info in cls.model_fields.values())

    def _check_version_walk(self, version: int, path: str) -> None:
        cls = type(self)
        present = self.model_fields_set
        for name, in_version, nullable, tagged, ignorable, default in cls._wire_plan(version):
            value = getattr(self, name)
            if in_version:
                if not tagged and name not in present:
                    raise _invalid(
                        f"{path}: unable to locate field '{name}', which is mandatory in version {version}"
                    )
                if value is None and not nullable:
                    raise _invalid(f"{path}.{name}: null is not allowed at version {version}")
                if isinstance(value, RpcMessage | list):
                    _check_nested(value, version, path, name)
            elif name in present and value != default:
                if not ignorable:
                    raise _invalid(
                        f"{path}.{name} does not exist in version {version} and carries a non-default value"
                    )
                # Kafka drops ignorable fields a version lacks; do the same so handlers never see them.
                setattr(self, name, cls.field_default(name))
                self.model_fields_set.discard(name)


def _dump(value: Any, version: int, encoding: Encoding, path: str, name: str) -> Any:
    """`value` as the wire holds it; `path` and `name` say where, joined only for an error message."""
    if isinstance(value, RpcMessage):
        return value._to_wire(version, encoding, f"{path}.{name}")
    if isinstance(value, Uuid):
        return value.bytes if encoding == "msgpack" else str(value)
    if isinstance(value, list):
        # Lists of plain values (replica ids, names) go as they are; structs and Uuids one by one.
        if not value or type(value[0]) in (int, str, bool):
            return (
                value
                if all(type(v) is type(value[0]) for v in value)
                else [_dump(v, version, encoding, path, name) for v in value]
            )
        return [_dump(v, version, encoding, path, name) for v in value]
    return value


_LEAVES = (int, bool, str, bytes, float, Uuid, type(None))
"""Types a field may be declared as that never hold a struct or a list."""


def _bare(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _admits_none(annotation: Any) -> bool:
    """Whether a field declared `annotation` may hold None: False only for forms known not to."""
    annotation = _bare(annotation)
    if annotation is None or annotation is type(None) or annotation is Any or annotation is object:
        return True
    origin = get_origin(annotation)
    if origin is Union or origin is UnionType:
        return any(_admits_none(a) for a in get_args(annotation))
    if origin is Literal:
        return None in get_args(annotation)
    # A generic container (list[...]) or a class: pydantic lets no None through.
    return not (origin is not None or isinstance(annotation, type))


def _plain(annotation: Any) -> bool:
    annotation = _bare(annotation)
    if annotation is None or annotation in (int, bool, str, type(None)):
        return True
    origin = get_origin(annotation)
    if origin is Union or origin is UnionType:
        return all(_plain(a) for a in get_args(annotation))
    return False


def _may_nest(annotation: Any) -> bool:
    """Whether a field declared `annotation` may hold a struct or a list: False only for leaves."""
    annotation = _bare(annotation)
    if annotation is None or annotation in _LEAVES:
        return False
    origin = get_origin(annotation)
    if origin is Union or origin is UnionType:
        return any(_may_nest(a) for a in get_args(annotation))
    return origin is not Literal


def _check_nested(value: Any, version: int, path: str, name: str) -> None:
    if isinstance(value, RpcMessage):
        value._check_version(version, f"{path}.{name}")
    elif value and isinstance(value[0], RpcMessage):
        for i, v in enumerate(value):
            v._check_version(version, f"{path}.{name}[{i}]")
