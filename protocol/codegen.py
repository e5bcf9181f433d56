"""Schema -> Python: one class per message or struct, and per version a specialised reader and writer.

Reading a metadata log is dominated by per-record overhead, so instead of interpreting the schema
for every record we write Python source for each (message, version) once, exec it, and cache the
functions. Runs of fixed-width fields become a single struct.unpack_from / pack call; one-byte
varints (nearly every length and count) take an inline path.

A reader has the signature `(buf: bytes, pos: int) -> (instance, next_pos)`; a writer
`(instance, out: bytearray) -> None`. Both raise plain exceptions (IndexError, struct.error,
UnicodeDecodeError, ...) on bad input; protocol.framing turns them into the codec's errors.
A writer puts a Uuid in as it is (a Uuid is a bytes subclass, its own 16 bytes) rather than through
`.bytes`, which copies them; any other value still goes through `.bytes`, and fails there as before.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from protocol.message import (
    MessageDecodeError,
    MessageEncodeError,
    MessageMixin,
    Struct,
    UnsupportedVersionError,
)
from protocol.schema import (
    FIXED_TYPES,
    TYPE_DEFAULT,
    Field,
    MessageSchema,
    SchemaError,
    check_schema,
)
from protocol.uuid import Uuid
from protocol.varint import (
    decode_unsigned_varint,
    decode_varint,
    decode_varlong,
    encode_unsigned_varint,
    encode_varint,
    encode_varlong,
)

Decoder = Callable[[bytes, int], tuple[Any, int]]
Encoder = Callable[[Any, bytearray], None]

_FIXED_SIZES = {t: struct.calcsize(">" + c) for t, c in FIXED_TYPES.items()}
_ARRAY_STRUCTS: dict[tuple[str, int], struct.Struct] = {}
_MISSING = object()


def _fixed_array(code: str, n: int) -> struct.Struct:
    s = _ARRAY_STRUCTS.get((code, n))
    if s is None:
        s = struct.Struct(f">{n}{code}")
        if n <= 64:
            _ARRAY_STRUCTS[(code, n)] = s
    return s


# Topic and directory ids repeat all through a log: sharing one immutable Uuid per value saves
# most of the construction cost. Bounded so a log of random ids cannot grow it without limit.
_UUID_CACHE_MAX = 1 << 16


class _UuidCache(dict[bytes, Uuid]):
    """A miss makes the Uuid, so an array of ids is read by one `map` over the dict's own lookup."""

    def __missing__(self, raw: bytes) -> Uuid:
        return _make_uuid(raw)


_UUID_CACHE: dict[bytes, Uuid] = _UuidCache()


def _make_uuid(raw: bytes) -> Uuid:
    u = Uuid(raw)
    if len(_UUID_CACHE) >= _UUID_CACHE_MAX:
        _UUID_CACHE.clear()
    _UUID_CACHE[raw] = u
    return u


# n ids side by side, unpacked into n bytes objects by one call, for the common small counts.
_UUID_ARRAYS = {n: struct.Struct("16s" * n) for n in range(1, 65)}


# array structs for the common small counts, looked up without a call
_SMALL = 65
_ARRAY_TABLES = {code: {n: struct.Struct(f">{n}{code}") for n in range(_SMALL)} for code in "bhHiIqd?"}


def _merge_tags(
    known: list[tuple[int, bytes | bytearray]] | None, unknown: list[tuple[int, bytes]]
) -> list[tuple[int, bytes | bytearray]]:
    merged = list(known or ()) + list(unknown)
    merged.sort(key=lambda t: t[0])
    return merged


def _write_tags(w: bytearray, tags: list[tuple[int, bytes | bytearray]]) -> None:
    w += encode_unsigned_varint(len(tags))
    for tag, data in tags:
        w += encode_unsigned_varint(tag)
        w += encode_unsigned_varint(len(data))
        w += data


def _short(what: str, pos: int) -> MessageDecodeError:
    return MessageDecodeError(f"{what} at position {pos} runs past the end of the message")


def _null(what: str) -> MessageDecodeError:
    return MessageDecodeError(f"non-nullable field {what} was serialized as null")


def _tag_size(what: str, size: int, used: int) -> MessageDecodeError:
    return MessageDecodeError(f"tagged field {what} declares {size} bytes but its value takes {used}")


def _unsupported(what: str, version: int) -> UnsupportedVersionError:
    return UnsupportedVersionError(f"{what} is set but does not exist at version {version}")


def _null_value(what: str) -> MessageEncodeError:
    return MessageEncodeError(f"{what} is not nullable, got None")


_HELPERS: dict[str, Any] = {
    "_uv": decode_unsigned_varint,
    "_dv": decode_varint,
    "_dvl": decode_varlong,
    "_uvb": encode_unsigned_varint,
    "_evi": encode_varint,
    "_evl": encode_varlong,
    "_Uuid": Uuid,
    "_ucg": _UUID_CACHE.get,
    "_ucx": _UUID_CACHE.__getitem__,
    "_UA": _UUID_ARRAYS,
    "_mku": _make_uuid,
    "_ZERO_UUID": Uuid.ZERO,
    "_new": object.__new__,
    "_fa": _fixed_array,
    "_merge_tags": _merge_tags,
    "_write_tags": _write_tags,
    "_short": _short,
    "_null": _null,
    "_tag_size": _tag_size,
    "_unsupported": _unsupported,
    "_null_value": _null_value,
    "_I16": struct.Struct(">h"),
    "_I32": struct.Struct(">i"),
    "_MISSING": _MISSING,
    **{f"_AT{i}": table for i, table in enumerate(_ARRAY_TABLES.values())},
}
_ARRAY_TABLE_NAMES = {code: f"_AT{i}" for i, code in enumerate(_ARRAY_TABLES)}


class _Source:
    """Accumulates generated lines and the constants they refer to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = dict(_HELPERS)
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}{self._count}"

    def const(self, value: Any, hint: str = "_k") -> str:
        n = self.name(hint)
        self.ns[n] = value
        return n

    def add(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def run(self, filename: str) -> dict[str, Any]:
        code = compile("\n".join(self.lines) + "\n", filename, "exec")
        exec(code, self.ns)
        return self.ns


# ---------------------------------------------------------------- classes


def _natural_default(f: Field) -> Any:
    if f.is_array:
        return []
    t = f.type
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64", "uvarint", "varint", "varlong"):
        return 0
    if t == "float64":
        return 0.0
    if t == "bool":
        return False
    if t == "string":
        return ""
    if t == "bytes":
        return b""
    if t == "uuid":
        return Uuid.ZERO
    return _MISSING  # struct: a fresh default instance


def default_of(f: Field) -> Any:
    """The value a field takes when not given: Kafka's explicit default or the type's natural one."""
    return _natural_default(f) if f.default is TYPE_DEFAULT else f.default


def _default_expr(src: _Source, f: Field, struct_cls: type[Struct] | None) -> str:
    """An expression giving a fresh default value (lists and structs must not be shared)."""
    value = default_of(f)
    if value is None:
        return "None"
    if f.is_array:
        if value != []:
            raise SchemaError(f"{f.name}: an array default can only be empty or null")
        return "[]"
    if value is _MISSING:
        assert struct_cls is not None
        return f"{src.const(struct_cls, '_C')}()"
    # A Uuid is a bytes subclass: it goes in as a shared constant, not as its repr.
    if isinstance(value, bool | int | float | str | bytes) and not isinstance(value, Uuid):
        return repr(value)
    return src.const(value)


def _build_init(
    cls: type[Struct], fields: tuple[Field, ...], struct_classes: dict[str, type[Struct]]
) -> None:
    src = _Source()
    params = []
    body = []
    for f in fields:
        value = default_of(f)
        if (f.is_array and value is not None) or value is _MISSING:
            params.append(f"{f.name}=_MISSING")
            body.append(
                f"self.{f.name} = {_default_expr(src, f, struct_classes.get(f.name))} "
                f"if {f.name} is _MISSING else {f.name}"
            )
        else:
            params.append(f"{f.name}={_default_expr(src, f, None)}")
            body.append(f"self.{f.name} = {f.name}")
    signature = "self, *, " + ", ".join(params) if params else "self"
    src.add(0, f"def __init__({signature}):")
    for line in body:
        src.add(1, line)
    src.add(1, "self._unknown_tagged_fields = None")
    # Every field by position, no defaults: for code that builds many records of one type and
    # has each value at hand (a keyword call costs twice as much per record).
    src.add(0, f"def _from_values({', '.join(f.name for f in fields)}):")
    src.add(1, "self = _new(_cls)")
    for f in fields:
        src.add(1, f"self.{f.name} = {f.name}")
    src.add(1, "self._unknown_tagged_fields = None")
    src.add(1, "return self")
    src.ns["_cls"] = cls
    ns = src.run(f"<{cls.__qualname__}.__init__>")
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[misc]
    from_values = ns["_from_values"]
    from_values.__qualname__ = f"{cls.__qualname__}._from_values"
    cls._from_values = staticmethod(from_values)  # type: ignore[attr-defined]


def _make_struct_class(
    type_name: str,
    qualname: str,
    fields: tuple[Field, ...],
    registry: dict[str, type[Struct]],
    bases: tuple[type, ...],
    module: str,
    extra: dict[str, Any] | None = None,
) -> type[Struct]:
    names = tuple(f.name for f in fields)
    ns: dict[str, Any] = {"__slots__": names, "_FIELDS": fields, "_FIELD_NAMES": names, "__module__": module}
    ns.update(extra or {})
    cls = type(type_name, bases, ns)
    cls.__qualname__ = qualname
    top = qualname.split(".")[0]
    struct_classes: dict[str, type[Struct]] = {}
    for f in fields:
        if not f.is_struct:
            continue
        sub = registry.get(f.element_type)
        if sub is None:
            sub = _make_struct_class(
                f.element_type, f"{top}.{f.element_type}", f.fields, registry, (Struct,), module
            )
            registry[f.element_type] = sub
        elif f.fields != sub._FIELDS:
            raise SchemaError(f"{top}: struct {f.element_type} is defined twice with different fields")
        struct_classes[f.name] = sub
    cls._STRUCT_CLASSES = struct_classes
    _build_init(cls, fields, struct_classes)
    return cls


def build_message_class(schema: MessageSchema, module: str, extra: dict[str, Any] | None = None) -> type:
    """The class for a message: Kafka's name, one slot per field, nested struct classes as attributes."""
    check_schema(schema)
    valid = schema.versions()
    attrs: dict[str, Any] = {
        "SCHEMA": schema,
        "NAME": schema.name,
        "API_KEY": schema.api_key if schema.api_key is not None else -1,
        "LOWEST_VERSION": valid.low,
        "HIGHEST_VERSION": valid.high,
        "_DECODERS": {},
        "_ENCODERS": {},
    }
    attrs.update(extra or {})
    registry: dict[str, type[Struct]] = {}
    cls = _make_struct_class(
        schema.name, schema.name, schema.fields, registry, (Struct, MessageMixin), module, attrs
    )
    field_names = {f.name for f in schema.fields}
    for type_name, sub in registry.items():
        if type_name in field_names:
            raise SchemaError(f"{schema.name}: struct type {type_name} clashes with a field name")
        setattr(cls, type_name, sub)
    cls._STRUCT_REGISTRY = registry  # type: ignore[attr-defined]
    return cls


# ---------------------------------------------------------------- readers


class _Gen:
    """Generates the reader and writer of every struct of one message at one version."""

    def __init__(self, message_cls: type, version: int) -> None:
        self.cls = message_cls
        self.schema: MessageSchema = message_cls.SCHEMA  # type: ignore[attr-defined]
        self.version = version
        self.flexible = self.schema.flexible_in(version)
        self.src = _Source()
        self.fn_names: dict[type, tuple[str, str]] = {}
        self._pending: list[type[Struct]] = []

    def _fns(self, struct_cls: type[Struct]) -> tuple[str, str]:
        names = self.fn_names.get(struct_cls)
        if names is None:
            base = struct_cls.__name__
            names = (f"_read_{base}", f"_write_{base}")
            self.fn_names[struct_cls] = names
            self._pending.append(struct_cls)
        return names

    def generate(self) -> tuple[Decoder, Encoder]:
        read_top, write_top = self._fns(self.cls)
        while self._pending:
            struct_cls = self._pending.pop()
            self._reader(struct_cls)
            self._writer(struct_cls)
        ns = self.src.run(f"<{self.schema.name} v{self.version}>")
        return ns[read_top], ns[write_top]

    def _where(self, struct_cls: type[Struct], f: Field) -> str:
        return f"{struct_cls.__qualname__}.{f.name}"

    # -- reading

    def _reader(self, struct_cls: type[Struct]) -> None:
        v = self.version
        src = self.src
        fields: tuple[Field, ...] = struct_cls._FIELDS
        present = [f for f in fields if f.present_in(v)]
        tagged = [f for f in present if self.flexible and f.tagged_in(v)]
        normal = [f for f in present if f not in tagged]
        local = {f.name: f"f_{i}" for i, f in enumerate(fields)}
        src.add(0, f"def {self._fns(struct_cls)[0]}(buf, pos):")
        if not fields and self.flexible:
            # a record without fields (NoOpRecord...) is immutable, so one instance serves every read
            shared = object.__new__(struct_cls)
            shared._unknown_tagged_fields = None
            src.add(1, f"if buf[pos] == 0: return {src.const(shared, '_I')}, pos + 1")
        src.add(1, "blen = len(buf)")
        i = 0
        while i < len(normal):
            f = normal[i]
            if f.type in FIXED_TYPES:
                run = [f]
                while i + len(run) < len(normal) and normal[i + len(run)].type in FIXED_TYPES:
                    run.append(normal[i + len(run)])
                self._read_fixed_run(run, local)
                i += len(run)
            else:
                self._read_value(struct_cls, f, local[f.name], 1)
                i += 1
        if self.flexible:
            self._read_tags(struct_cls, tagged, local)
        cls_name = src.const(struct_cls, "_C")
        src.add(1, f"o = _new({cls_name})")
        for f in fields:
            if f.present_in(v):
                src.add(1, f"o.{f.name} = {local[f.name]}")
            else:
                expr = _default_expr(src, f, struct_cls._STRUCT_CLASSES.get(f.name))
                src.add(1, f"o.{f.name} = {expr}")
        src.add(1, f"o._unknown_tagged_fields = {'unk' if self.flexible else 'None'}")
        src.add(1, "return o, pos")

    def _read_fixed_run(self, run: list[Field], local: dict[str, str]) -> None:
        fmt = ">" + "".join(FIXED_TYPES[f.type] for f in run)
        size = struct.calcsize(fmt)
        s = self.src.const(struct.Struct(fmt), "_S")
        targets = ", ".join(local[f.name] for f in run)
        self.src.add(1, f"{targets}, = {s}.unpack_from(buf, pos)")
        self.src.add(1, f"pos += {size}")
        for f in run:
            if f.type == "uuid":
                self.src.add(1, f"{local[f.name]} = _ucg({local[f.name]}) or _mku({local[f.name]})")

    def _read_length(self, var: str, ind: int, kind: str) -> None:
        """Leave in `var` the element/byte count, or -1 for null."""
        add = self.src.add
        if self.flexible:
            add(ind, f"{var} = buf[pos]")
            add(ind, f"if {var} < 128: pos += 1")
            add(ind, f"else: {var}, pos = _uv(buf, pos)")
            add(ind, f"{var} -= 1")
        elif kind == "string":
            add(ind, f"{var}, = _I16.unpack_from(buf, pos)")
            add(ind, "pos += 2")
        else:
            add(ind, f"{var}, = _I32.unpack_from(buf, pos)")
            add(ind, "pos += 4")

    def _read_value(self, struct_cls: type[Struct], f: Field, target: str, ind: int) -> None:
        add = self.src.add
        where = self._where(struct_cls, f)
        nullable = f.nullable_in(self.version)
        if not f.is_array and f.element_type not in ("string", "bytes"):
            self._read_scalar(struct_cls, f, f.element_type, target, ind)
            return
        n = self.src.name("n")
        if self.flexible and f.is_array and f.element_type in FIXED_TYPES:
            self._read_flexible_fixed_array(f, n, target, ind, where, nullable)
            return
        self._read_length(n, ind, "array" if f.is_array else f.element_type)
        add(ind, f"if {n} < 0:")
        if nullable:
            add(ind + 1, f"{target} = None")
        else:
            add(ind + 1, f"raise _null({where!r})")
        add(ind, "else:")
        if f.is_array:
            self._read_array_body(struct_cls, f, n, target, ind + 1)
        else:
            self._read_blob_body(f.element_type, n, target, ind + 1, where)

    def _read_flexible_fixed_array(
        self, f: Field, n: str, target: str, ind: int, where: str, nullable: bool
    ) -> None:
        """The hot case (replica lists, directory ids): fewest steps, bounds left to unpack_from and
        Uuid, whose errors callers turn into decode errors."""
        add = self.src.add
        etype = f.element_type
        add(ind, f"{n} = buf[pos]")
        add(ind, f"if {n} < 128: pos += 1")
        add(ind, f"else: {n}, pos = _uv(buf, pos)")
        add(ind, f"if {n} == 1: {target} = []")
        add(ind, f"elif {n}:")
        add(ind + 1, f"{n} -= 1")
        add(ind + 1, f"e = pos + {n} * {_FIXED_SIZES[etype]}")
        if etype == "uuid":
            add(ind + 1, f"if {n} < 65: {target} = list(map(_ucx, _UA[{n}].unpack_from(buf, pos)))")
            add(ind + 1, f"else: {target} = [_ucx(buf[p:p + 16]) for p in range(pos, e, 16)]")
        else:
            code = FIXED_TYPES[etype]
            table = _ARRAY_TABLE_NAMES[code]
            add(
                ind + 1,
                f"{target} = list(({table}[{n}] if {n} < {_SMALL} else _fa({code!r}, {n})).unpack_from(buf, pos))",
            )
        add(ind + 1, "pos = e")
        add(ind, "else:")
        add(ind + 1, f"{target} = None" if nullable else f"raise _null({where!r})")

    def _read_blob_body(self, etype: str, n: str, target: str, ind: int, where: str) -> None:
        add = self.src.add
        add(ind, f"e = pos + {n}")
        add(ind, f"if e > blen: raise _short({where!r}, pos)")
        if etype == "string":
            add(ind, f"{target} = buf[pos:e].decode()")
        else:
            add(ind, f"{target} = buf[pos:e]")
        add(ind, "pos = e")

    def _read_array_body(self, struct_cls: type[Struct], f: Field, n: str, target: str, ind: int) -> None:
        add = self.src.add
        etype = f.element_type
        where = self._where(struct_cls, f)
        if etype in FIXED_TYPES:
            size = _FIXED_SIZES[etype]
            add(ind, f"if {n} == 0: {target} = []")  # empty arrays are common (AddingReplicas...)
            add(ind, "else:")
            ind += 1
            add(ind, f"e = pos + {n} * {size}")
            add(ind, f"if e > blen: raise _short({where!r}, pos)")
            if etype == "uuid":
                add(ind, f"if {n} < 65: {target} = list(map(_ucx, _UA[{n}].unpack_from(buf, pos)))")
                add(ind, f"else: {target} = [_ucx(buf[p:p + 16]) for p in range(pos, e, 16)]")
            else:
                code = FIXED_TYPES[etype]
                table = _ARRAY_TABLE_NAMES[code]
                add(ind, f"s = {table}[{n}] if {n} < {_SMALL} else _fa({code!r}, {n})")
                add(ind, f"{target} = list(s.unpack_from(buf, pos))")
            add(ind, "pos = e")
            return
        add(ind, f"if {n} > blen - pos: raise _short({where!r}, pos)")
        add(ind, f"{target} = []")
        elem = self.src.name("x")
        add(ind, f"for _ in range({n}):")
        if f.is_struct:
            read_fn = self._fns(struct_cls._STRUCT_CLASSES[f.name])[0]
            add(ind + 1, f"{elem}, pos = {read_fn}(buf, pos)")
        elif etype in ("string", "bytes"):
            m = self.src.name("n")
            self._read_length(m, ind + 1, etype)
            add(ind + 1, f"if {m} < 0: raise _null({where + '[]'!r})")
            self._read_blob_body(etype, m, elem, ind + 1, where)
        else:
            self._read_varint(etype, elem, ind + 1)
        add(ind + 1, f"{target}.append({elem})")

    def _read_varint(self, etype: str, target: str, ind: int) -> None:
        fn = {"uvarint": "_uv", "varint": "_dv", "varlong": "_dvl"}[etype]
        self.src.add(ind, f"{target}, pos = {fn}(buf, pos)")

    def _read_scalar(self, struct_cls: type[Struct], f: Field, etype: str, target: str, ind: int) -> None:
        add = self.src.add
        if etype in FIXED_TYPES:
            size = _FIXED_SIZES[etype]
            if etype == "uuid":
                add(ind, f"if pos + 16 > blen: raise _short({self._where(struct_cls, f)!r}, pos)")
                add(ind, f"{target} = _ucg(k := buf[pos:pos + 16]) or _mku(k)")
            else:
                s = self.src.const(struct.Struct(">" + FIXED_TYPES[etype]), "_S")
                add(ind, f"{target}, = {s}.unpack_from(buf, pos)")
            add(ind, f"pos += {size}")
        elif etype in ("uvarint", "varint", "varlong"):
            self._read_varint(etype, target, ind)
        else:
            read_fn = self._fns(struct_cls._STRUCT_CLASSES[f.name])[0]
            add(ind, f"{target}, pos = {read_fn}(buf, pos)")

    def _read_tags(self, struct_cls: type[Struct], tagged: list[Field], local: dict[str, str]) -> None:
        add = self.src.add
        for f in tagged:
            add(1, f"{local[f.name]} = {_default_expr(self.src, f, struct_cls._STRUCT_CLASSES.get(f.name))}")
        add(1, "unk = None")
        add(1, "nt = buf[pos]")
        add(1, "if nt < 128: pos += 1")
        add(1, "else: nt, pos = _uv(buf, pos)")
        add(1, "if nt:")
        add(2, "for _ in range(nt):")
        add(3, "tag = buf[pos]")
        add(3, "if tag < 128: pos += 1")
        add(3, "else: tag, pos = _uv(buf, pos)")
        add(3, "sz = buf[pos]")
        add(3, "if sz < 128: pos += 1")
        add(3, "else: sz, pos = _uv(buf, pos)")
        add(3, "end = pos + sz")
        add(
            3,
            f"if end > blen: raise _short('tagged field ' + str(tag) + ' of {struct_cls.__qualname__}', pos)",
        )
        keyword = "if"
        for f in sorted(tagged, key=lambda f: f.tag or 0):
            add(3, f"{keyword} tag == {f.tag}:")
            self._read_value(struct_cls, f, local[f.name], 4)
            add(4, f"if pos != end: raise _tag_size({self._where(struct_cls, f)!r}, sz, sz + pos - end)")
            keyword = "elif"
        if tagged:
            add(3, "else:")
            ind = 4
        else:
            ind = 3
        add(ind, "if unk is None: unk = []")
        add(ind, "unk.append((tag, buf[pos:end]))")
        add(ind, "pos = end")

    # -- writing

    def _writer(self, struct_cls: type[Struct]) -> None:
        v = self.version
        src = self.src
        fields: tuple[Field, ...] = struct_cls._FIELDS
        src.add(0, f"def {self._fns(struct_cls)[1]}(o, w):")
        for f in fields:
            if not f.present_in(v) and not f.ignorable:
                cond = self._differs(struct_cls, f, f"o.{f.name}")
                src.add(1, f"if {cond}: raise _unsupported({self._where(struct_cls, f)!r}, {v})")
        present = [f for f in fields if f.present_in(v)]
        tagged = [f for f in present if self.flexible and f.tagged_in(v)]
        normal = [f for f in present if f not in tagged]
        i = 0
        while i < len(normal):
            f = normal[i]
            if f.type in FIXED_TYPES:
                run = [f]
                while i + len(run) < len(normal) and normal[i + len(run)].type in FIXED_TYPES:
                    run.append(normal[i + len(run)])
                fmt = ">" + "".join(FIXED_TYPES[g.type] for g in run)
                s = src.const(struct.Struct(fmt), "_S")
                args = []
                for g in run:
                    if g.type == "uuid":
                        u = src.name("u")
                        src.add(1, f"{u} = o.{g.name}")
                        src.add(1, f"if type({u}) is not _Uuid: {u} = {u}.bytes  # a Uuid is its bytes")
                        args.append(u)
                    else:
                        args.append(f"o.{g.name}")
                src.add(1, f"w += {s}.pack({', '.join(args)})")
                i += len(run)
            else:
                x = src.name("x")
                src.add(1, f"{x} = o.{f.name}")
                self._write_value(struct_cls, f, x, "w", 1)
                i += 1
        if self.flexible:
            self._write_tags_section(struct_cls, tagged)
        if not self.flexible:
            src.add(1, "pass")  # a version may have none of the struct's fields (ApiVersionsRequest v0)

    def _write_tags_section(self, struct_cls: type[Struct], tagged: list[Field]) -> None:
        """Each set tagged field is encoded into its own buffer (its size comes first on the wire);
        without unknown tags they are then written in tag order with no intermediate list."""
        src = self.src
        add = src.add
        ordered = sorted(tagged, key=lambda f: f.tag or 0)
        if not ordered:
            add(1, "unk = o._unknown_tagged_fields")
            add(1, "if unk: _write_tags(w, _merge_tags(None, unk))")
            add(1, "else: w.append(0)")
            return
        buffers = []
        add(1, "nt = 0")
        for f in ordered:
            x = src.name("x")
            t = src.name("t")
            buffers.append((f, t))
            add(1, f"{x} = o.{f.name}")
            add(1, f"if {self._differs(struct_cls, f, x)}:")
            if not f.is_array and f.type in FIXED_TYPES:
                if f.type == "uuid":
                    add(2, f"{t} = {x} if type({x}) is _Uuid else {x}.bytes")
                else:
                    add(2, f"{t} = {src.const(struct.Struct('>' + FIXED_TYPES[f.type]), '_S')}.pack({x})")
            else:
                add(2, f"{t} = bytearray()")
                self._write_value(struct_cls, f, x, t, 2, not_null=default_of(f) is None)
            add(2, "nt += 1")
            add(1, f"else: {t} = None")
        add(1, "unk = o._unknown_tagged_fields")
        add(1, "if unk:")
        pairs = ", ".join(f"({f.tag}, {t})" for f, t in buffers)
        add(2, f"_write_tags(w, _merge_tags([p for p in ({pairs},) if p[1] is not None], unk))")
        add(1, "else:")
        add(2, "w.append(nt)")  # at most a handful of known tags: always a one-byte count
        for f, t in buffers:
            add(2, f"if {t} is not None:")
            add(3, f"{t}_n = len({t})")
            add(
                3,
                f"if {t}_n < 128: w += {src.const(encode_unsigned_varint(f.tag or 0), '_tag')}; w.append({t}_n)",
            )
            add(3, f"else: w += {src.const(encode_unsigned_varint(f.tag or 0), '_tag')}; w += _uvb({t}_n)")
            add(3, f"w += {t}")

    def _differs(self, struct_cls: type[Struct], f: Field, x: str) -> str:
        value = default_of(f)
        if value is None:
            return f"{x} is not None"
        if f.is_array:
            return f"({x} is None or len({x}) > 0)"
        if value is _MISSING:
            return f"{x} != {self.src.const(struct_cls._STRUCT_CLASSES[f.name], '_C')}()"
        return f"{x} != {self.src.const(value)}"

    def _write_length(self, n_expr: str, out: str, ind: int, kind: str) -> None:
        add = self.src.add
        if self.flexible:
            m = self.src.name("m")
            add(ind, f"{m} = {n_expr} + 1")
            add(ind, f"if {m} < 128: {out}.append({m})")
            add(ind, f"else: {out} += _uvb({m})")
        elif kind == "string":
            add(ind, f"{out} += _I16.pack({n_expr})")
        else:
            add(ind, f"{out} += _I32.pack({n_expr})")

    def _write_null(self, out: str, ind: int, kind: str) -> None:
        if self.flexible:
            self.src.add(ind, f"{out}.append(0)")
        elif kind == "string":
            self.src.add(ind, f"{out} += b'\\xff\\xff'")
        else:
            self.src.add(ind, f"{out} += b'\\xff\\xff\\xff\\xff'")

    def _write_value(
        self, struct_cls: type[Struct], f: Field, x: str, out: str, ind: int, not_null: bool = False
    ) -> None:
        add = self.src.add
        etype = f.element_type
        where = self._where(struct_cls, f)
        if not f.is_array and etype not in ("string", "bytes"):
            self._write_scalar(struct_cls, f, etype, x, out, ind)
            return
        kind = "array" if f.is_array else etype
        if not not_null:
            add(ind, f"if {x} is None:")
            if f.nullable_in(self.version):
                self._write_null(out, ind + 1, kind)
            else:
                add(ind + 1, f"raise _null_value({where!r})")
            add(ind, "else:")
            ind += 1
        if not f.is_array:
            self._write_blob(etype, x, out, ind)
            return
        self._write_length(f"len({x})", out, ind, "array")
        if etype in FIXED_TYPES:
            if etype == "uuid":
                add(ind, f"for u in {x}: {out} += u if type(u) is _Uuid else u.bytes")
            else:
                code = FIXED_TYPES[etype]
                table = _ARRAY_TABLE_NAMES[code]
                add(ind, f"s = {table}[len({x})] if len({x}) < {_SMALL} else _fa({code!r}, len({x}))")
                add(ind, f"{out} += s.pack(*{x})")
            return
        e = self.src.name("e")
        add(ind, f"for {e} in {x}:")
        if f.is_struct:
            write_fn = self._fns(struct_cls._STRUCT_CLASSES[f.name])[1]
            add(ind + 1, f"{write_fn}({e}, {out})")
        elif etype in ("string", "bytes"):
            add(ind + 1, f"if {e} is None: raise _null_value({where + '[]'!r})")
            self._write_blob(etype, e, out, ind + 1)
        else:
            fn = {"uvarint": "_uvb", "varint": "_evi", "varlong": "_evl"}[etype]
            add(ind + 1, f"{out} += {fn}({e})")

    def _write_blob(self, etype: str, x: str, out: str, ind: int) -> None:
        b = self.src.name("b")
        self.src.add(ind, f"{b} = {x}.encode()" if etype == "string" else f"{b} = {x}")
        self._write_length(f"len({b})", out, ind, etype)
        self.src.add(ind, f"{out} += {b}")

    def _write_scalar(
        self, struct_cls: type[Struct], f: Field, etype: str, x: str, out: str, ind: int
    ) -> None:
        add = self.src.add
        if etype == "uuid":
            add(ind, f"{out} += {x} if type({x}) is _Uuid else {x}.bytes")
        elif etype in FIXED_TYPES:
            s = self.src.const(struct.Struct(">" + FIXED_TYPES[etype]), "_S")
            add(ind, f"{out} += {s}.pack({x})")
        elif etype in ("uvarint", "varint", "varlong"):
            fn = {"uvarint": "_uvb", "varint": "_evi", "varlong": "_evl"}[etype]
            add(ind, f"{out} += {fn}({x})")
        else:
            write_fn = self._fns(struct_cls._STRUCT_CLASSES[f.name])[1]
            add(ind, f"{write_fn}({x}, {out})")


def _generate(cls: type, version: int) -> tuple[Decoder, Encoder]:
    if not cls.LOWEST_VERSION <= version <= cls.HIGHEST_VERSION:  # type: ignore[attr-defined]
        raise UnsupportedVersionError(
            f"{cls.__name__} has versions {cls.LOWEST_VERSION}-{cls.HIGHEST_VERSION}, not {version}"  # type: ignore[attr-defined]
        )
    decoder, encoder = _Gen(cls, version).generate()
    cls._DECODERS[version] = decoder  # type: ignore[attr-defined]
    cls._ENCODERS[version] = encoder  # type: ignore[attr-defined]
    return decoder, encoder


def decoder_for(cls: type, version: int) -> Decoder:
    """The reader of `cls` at `version`, generated on first use."""
    fn = cls._DECODERS.get(version)  # type: ignore[attr-defined]
    return fn if fn is not None else _generate(cls, version)[0]


def encoder_for(cls: type, version: int) -> Encoder:
    """The writer of `cls` at `version`, generated on first use."""
    fn = cls._ENCODERS.get(version)  # type: ignore[attr-defined]
    return fn if fn is not None else _generate(cls, version)[1]


def generated_source(cls: type, version: int) -> str:
    """The Python source generated for `cls` at `version` (for debugging and review)."""
    gen = _Gen(cls, version)
    gen.generate()
    return "\n".join(gen.src.lines)
