"""Every request model takes any decoded body without crashing: it is accepted, or refused with
INVALID_REQUEST naming the field, never another exception (which the server would turn into
UNKNOWN_SERVER_ERROR). Hypothesis draws arbitrary msgpack-shaped values; the fuzz body maker adds
well-formed bodies with values from the edges of each field's range."""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.errors import Errors, KafkaError
from protocol.rpc import API_SPECS
from protocol.transport import codec
from tests.support.fuzz import BodyMaker

SPECS = sorted(API_SPECS.values(), key=lambda s: s.name)

leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=True)
    | st.text(max_size=20)
    | st.binary(max_size=24)
)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20,
)


def _field_maps(spec_name: str) -> st.SearchStrategy[dict[str, object]]:
    """Maps that use the model's own field names, so validation goes past the first key."""
    names = list(API_SPECS[spec_name].request_model.model_fields) or ["Unknown"]
    return st.dictionaries(st.sampled_from(names), values, max_size=len(names))


def _decode_or_refuse(spec_name: str, data: object, version: int) -> None:
    spec = API_SPECS[spec_name]
    try:
        spec.request_model.from_wire(data, version)
    except KafkaError as e:
        assert e.code is Errors.INVALID_REQUEST, e


@pytest.mark.parametrize("spec_name", [s.name for s in SPECS])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_body_is_accepted_or_refused_with_invalid_request(spec_name: str, data: st.DataObject) -> None:
    spec = API_SPECS[spec_name]
    version = data.draw(st.integers(spec.min_version, spec.max_version))
    body = data.draw(values | _field_maps(spec_name))
    _decode_or_refuse(spec_name, body, version)


def _edge_bodies(spec_name: str, tries: int) -> Iterator[tuple[object, int]]:
    """(decoded body, version) for the fuzz body maker's bodies that the codec decodes."""
    spec = API_SPECS[spec_name]
    # crc32, not hash(): str hashes differ per process, and a failure must be reproducible.
    maker = BodyMaker(zlib.crc32(spec_name.encode()) & 0xFFFF)
    for _ in range(tries):
        body = maker.body(spec)
        if not spec.min_version <= body.version <= spec.max_version:
            continue
        try:
            yield codec.decode(body.data, body.encoding), body.version  # type: ignore[arg-type]
        except KafkaError:
            continue


@pytest.mark.parametrize("spec_name", [s.name for s in SPECS])
def test_edge_value_bodies_decode_or_are_refused(spec_name: str) -> None:
    decoded = 0
    for data, version in _edge_bodies(spec_name, 500):
        _decode_or_refuse(spec_name, data, version)
        decoded += 1
    assert decoded > 100


def test_a_lone_surrogate_in_msgpack_is_refused_by_the_codec() -> None:
    raw = msgpack.packb({"Name": "\ud800"}, unicode_errors="surrogatepass")
    with pytest.raises(KafkaError) as e:
        codec.decode(raw, "msgpack")
    assert e.value.code is Errors.INVALID_REQUEST


def test_raw_surrogate_bytes_in_json_are_refused_by_the_codec() -> None:
    raw = '{"Name": "\ud800"}'.encode("utf-8", "surrogatepass")
    with pytest.raises(KafkaError) as e:
        codec.decode(raw, "json")
    assert e.value.code is Errors.INVALID_REQUEST


def _outcome(spec_name: str, data: object, version: int, piecewise: bool) -> object:
    try:
        msg = API_SPECS[spec_name].request_model.from_wire(data, version, piecewise=piecewise)
    except KafkaError as e:
        assert e.code is Errors.INVALID_REQUEST, e
        return "refused"
    return msg.to_wire(version, "msgpack"), msg.model_fields_set


@pytest.mark.parametrize("spec_name", [s.name for s in SPECS])
def test_large_bodies_validated_piecewise_decode_as_whole_ones_do(spec_name: str) -> None:
    """The server validates a large body struct by struct (one pydantic call would hold the GIL for
    all of it); that must accept and refuse exactly what validating it whole does."""
    compared = 0
    for data, version in _edge_bodies(spec_name, 300):
        whole = _outcome(spec_name, data, version, piecewise=False)
        assert _outcome(spec_name, data, version, piecewise=True) == whole
        compared += 1
    assert compared > 50


@pytest.mark.parametrize(
    ("field", "items", "message"),
    [
        (
            "Listeners",
            [{"Name": "L", "Host": "h", "Port": 1}] * 1001,
            "Listeners: List should have at most 1000",
        ),
        (
            "Listeners",
            [{"Name": "L", "Host": "h", "Port": 1}, 7],
            "Listeners.1: Input should be a valid dictionary",
        ),
        ("Listeners", [{"Name": "L", "Host": "h", "Port": "x"}], "Listeners.0.Port:"),
    ],
)
def test_a_piecewise_refusal_names_the_field_and_item(field: str, items: list[object], message: str) -> None:
    from protocol.rpc.broker_registration import BrokerRegistrationRequest

    body = BrokerRegistrationRequest(BrokerId=1, ClusterId="c").to_wire(2, "msgpack")
    body[field] = items
    with pytest.raises(KafkaError) as e:
        BrokerRegistrationRequest.from_wire(body, 2, piecewise=True)
    assert e.value.code is Errors.INVALID_REQUEST and e.value.message.startswith(message), e.value.message


def _checked(spec_name: str, data: object, version: int) -> object:
    model = API_SPECS[spec_name].request_model
    try:
        msg = model.from_wire(data, version)
    except KafkaError as e:
        return ("refused", e.message)
    return msg.model_dump(), msg.model_fields_set


@pytest.mark.parametrize("spec_name", [s.name for s in SPECS])
def test_the_version_check_decides_as_the_field_by_field_walk_does(
    spec_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request that needs nothing of the version check is passed on set operations alone; anything
    else goes field by field. Both must accept, refuse (with the same message) and drop fields alike,
    at the body's own version and at every other one (fields missing or left over)."""
    from protocol.rpc.message import RpcMessage

    spec = API_SPECS[spec_name]
    cases = [
        (data, version)
        for data, body_version in _edge_bodies(spec_name, 150)
        for version in {body_version, spec.min_version, spec.max_version}
    ]
    fast = [_checked(spec_name, data, version) for data, version in cases]
    monkeypatch.setattr(RpcMessage, "_check_version", RpcMessage._check_version_walk)
    walked = [_checked(spec_name, data, version) for data, version in cases]
    assert fast == walked
    assert any(outcome[0] != "refused" for outcome in fast)


def test_the_fast_version_check_assumes_nothing_of_forms_it_does_not_know() -> None:
    """The set-based check skips a field only when its declared type rules out what the walk looks
    for (a null, a struct or a list): any form it cannot read must count as "may"."""
    from typing import Annotated, Literal, Optional
    from typing import Any as AnyType

    from pydantic import Field

    from protocol.rpc.message import RpcMessage, _admits_none, _may_nest
    from protocol.uuid import Uuid

    class Inner(RpcMessage):
        pass

    struct_forms = [
        Inner,
        list[int],
        list[Inner],
        Optional[Annotated[list[Inner], Field(max_length=5)]],  # noqa: UP045
        Annotated[Annotated[list[Inner], Field(max_length=5)] | None, "versions"],
        AnyType,
        object,
        dict[str, int],
    ]
    assert all(_may_nest(form) for form in struct_forms)
    assert not any(_may_nest(form) for form in (int, str, bool, bytes, Uuid, int | None, Literal[1, 2]))
    null_forms = [int | None, Optional[Annotated[list[Inner], "x"]], AnyType, object, Literal[1, None]]  # noqa: UP045
    assert all(_admits_none(form) for form in null_forms)
    assert not any(_admits_none(form) for form in (int, Inner, list[Inner], Annotated[int, "x"], Literal[1]))
