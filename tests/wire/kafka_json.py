"""Kafka's own message schemas, read from the JSON files kafka-python ships (a pinned dev dependency),
and a field-by-field comparison of them with the schemas our wire codec derives from the RPC models."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.schema import Field, MessageSchema, Versions

OWN_TAGS = 10000


def kafka_schema(name: str) -> dict[str, Any]:
    """Kafka's JSON schema of `name` (e.g. "FetchRequest"), common structs resolved."""
    load_json = pytest.importorskip(
        "kafka.protocol.schemas.load_json", reason="kafka-python is not installed"
    )
    return load_json.load_json(name)


def _in(spec: str | None, version: int) -> bool:
    return spec is not None and version in Versions.parse(spec)


def _kafka_type(t: str) -> str:
    if t.startswith("[]"):
        inner = t[2:]
        return "[]" + ("struct" if inner[:1].isupper() else _kafka_type(inner))
    if t[:1].isupper():
        return "struct"
    return "bytes" if t == "records" else t


def _our_type(f: Field) -> str:
    t = f.type
    if t.startswith("[]"):
        return "[]" + ("struct" if f.is_struct else t[2:])
    return "struct" if f.is_struct else t


def differences(ours: MessageSchema, theirs: dict[str, Any], versions: range) -> list[str]:
    """Every way `ours` would put different bytes on the wire than Kafka at one of `versions`."""
    out: list[str] = []
    for v in versions:
        if ours.flexible_in(v) != _in(theirs["flexibleVersions"], v):
            out.append(f"v{v}: flexible differs")
        flexible = ours.flexible_in(v)
        _compare(ours.fields, theirs.get("fields", []), v, flexible, ours.name, out)
    return out


def _compare(
    ours: tuple[Field, ...], theirs: list[dict[str, Any]], v: int, flexible: bool, where: str, out: list[str]
) -> None:
    # kraftpy's own tagged fields (tags from OWN_TAGS up), which Kafka's readers skip
    mine = [f for f in ours if f.present_in(v) and not (f.tagged_in(v) and (f.tag or 0) >= OWN_TAGS)]
    kafka = [f for f in theirs if _in(f.get("versions"), v)]
    # names do not travel; Kafka spells a few in camelCase (CreateTopics' timeoutMs)
    names_mine = [f.name.lower() for f in mine]
    names_kafka = [f["name"].lower() for f in kafka]
    if names_mine != names_kafka:
        out.append(f"v{v} {where}: fields {names_mine} != Kafka's {names_kafka}")
        return
    for m, k in zip(mine, kafka, strict=True):
        at = f"v{v} {where}.{m.name}"
        if _our_type(m) != _kafka_type(k["type"]):
            out.append(f"{at}: type {m.type} != {k['type']}")
        if m.nullable_in(v) != _in(k.get("nullableVersions"), v):
            out.append(f"{at}: nullable differs")
        k_tagged = flexible and _in(k.get("taggedVersions"), v)
        if m.tagged_in(v) != k_tagged:
            out.append(f"{at}: tagged differs")
        elif k_tagged and m.tag != k.get("tag"):
            out.append(f"{at}: tag {m.tag} != {k.get('tag')}")
        if m.fields or k.get("fields"):
            _compare(m.fields, k.get("fields", []), v, flexible, f"{where}.{m.name}", out)
