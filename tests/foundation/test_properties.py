"""Java .properties parsing and writing."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftpy.properties import PropertiesError, format_properties, load_properties, parse_properties

SAMPLE = r"""# a comment
! another comment
   # indented comment

a=1
b : 2
c   3
d=multi \
    line \
      continued
e=ends with backslash\\
f=\u0041\tB
g
h\ key=value with \= and \: escaped
  i=  leading spaces dropped, trailing kept\u0020\u0020
j=first
j=second
k:=colon then equals
url=PLAINTEXT://host:9092
"""


def test_parse_java_rules() -> None:
    p = parse_properties(SAMPLE)
    assert p["a"] == "1"
    assert p["b"] == "2"
    assert p["c"] == "3"
    assert p["d"] == "multi line continued"
    assert p["e"] == "ends with backslash\\"
    assert p["f"] == "A\tB"
    assert p["g"] == ""
    assert p["h key"] == "value with = and : escaped"
    assert p["i"] == "leading spaces dropped, trailing kept  "
    assert p["j"] == "second"
    assert p["k"] == "=colon then equals"
    assert p["url"] == "PLAINTEXT://host:9092"
    assert not any(k.startswith(("#", "!")) for k in p)


def test_crlf_and_continuation_at_end_of_file() -> None:
    assert parse_properties("a=1\r\nb=2\r\n") == {"a": "1", "b": "2"}
    assert parse_properties("a=x\\") == {"a": "x"}


def test_comment_line_ending_in_backslash_does_not_continue() -> None:
    assert parse_properties("# comment \\\na=1\n") == {"a": "1"}


def test_malformed_unicode_escape() -> None:
    with pytest.raises(PropertiesError):
        parse_properties("a=\\u12G4\n")


def test_format_like_properties_store() -> None:
    text = format_properties({"node.id": "1", "cluster.id": "abc"}, comments="")
    lines = text.splitlines()
    assert lines[0] == "#"
    assert lines[1].startswith("#") and "UTC" in lines[1]
    assert lines[2:] == ["node.id=1", "cluster.id=abc"]


def test_read_file_latin1_fallback(tmp_path: Path) -> None:
    f = tmp_path / "x.properties"
    f.write_bytes("name=caf\xe9\n".encode("latin-1"))
    assert load_properties(f) == {"name": "café"}
    f.write_text("name=café\n", encoding="utf-8")
    assert load_properties(f) == {"name": "café"}


text_st = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x0b\x1c\x1d\x1e\x85\u2028\u2029"),
    max_size=30,
)


@given(st.dictionaries(text_st.filter(lambda k: k != ""), text_st, max_size=8))
def test_write_then_read_round_trips(props: dict[str, str]) -> None:
    assert parse_properties(format_properties(props)) == props
