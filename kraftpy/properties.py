"""Java .properties files, read and written as java.util.Properties does.

Reading: `#`/`!` comment lines, blank lines, `key=value`, `key: value` and `key value`, backslash
escapes (\\t \\n \\r \\f \\uXXXX, and `\\x` for any other x meaning x itself), and line continuations
(a line ending in an odd number of backslashes; the next line's leading whitespace is dropped).
Files are read as UTF-8, falling back to ISO-8859-1 (what Properties.load(InputStream) assumes) for
files that are not valid UTF-8.

Writing follows Properties.store(Writer, comments): comment lines, a date line, then `key=value`
with the characters that would change meaning escaped.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

_WHITESPACE = " \t\f"


class PropertiesError(ValueError):
    """Text that java.util.Properties would reject (a malformed \\uXXXX escape)."""


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, logical line) pairs; comments and blank lines dropped."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        line = lines[i].lstrip(_WHITESPACE)
        i += 1
        if not line or line[0] in "#!":
            continue
        parts = []
        while True:
            trailing = len(line) - len(line.rstrip("\\"))
            if trailing % 2 == 1:
                parts.append(line[:-1])
                if i >= len(lines):
                    break
                line = lines[i].lstrip(_WHITESPACE)
                i += 1
                continue
            parts.append(line)
            break
        out.append((start + 1, "".join(parts)))
    return out


def _unescape(s: str, lineno: int) -> str:
    out = []
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= n:
            break
        c = s[i]
        i += 1
        if c == "u":
            digits = s[i : i + 4]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise PropertiesError(f"line {lineno}: malformed \\uxxxx encoding")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(c, c))
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """Split a logical line at the first unescaped separator, as Properties.load does."""
    i = 0
    n = len(line)
    key_end = n
    value_start = n
    has_sep = False
    while i < n:
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=:":
            key_end = i
            value_start = i + 1
            has_sep = True
            break
        if c in _WHITESPACE:
            key_end = i
            value_start = i + 1
            break
        i += 1
    j = value_start
    while j < n and line[j] in _WHITESPACE:
        j += 1
    if not has_sep and j < n and line[j] in "=:":
        j += 1
        while j < n and line[j] in _WHITESPACE:
            j += 1
    return line[:key_end], line[j:]


def parse_properties(text: str) -> dict[str, str]:
    """Parse .properties text; a key given twice keeps its last value, as Properties does."""
    props: dict[str, str] = {}
    for lineno, line in _logical_lines(text):
        raw_key, raw_value = _split(line)
        props[_unescape(raw_key, lineno)] = _unescape(raw_value, lineno)
    return props


def read_text(path: str | Path) -> str:
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def load_properties(path: str | Path) -> dict[str, str]:
    """Read a .properties file (OSError if it cannot be read, PropertiesError if malformed)."""
    return parse_properties(read_text(path))


def _escape(s: str, is_key: bool) -> str:
    out = []
    for i, c in enumerate(s):
        if c == " ":
            out.append("\\ " if (i == 0 or is_key) else " ")
        elif c in "\\=:#!":
            out.append("\\" + c)
        elif c == "\t":
            out.append("\\t")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\f":
            out.append("\\f")
        else:
            out.append(c)
    return "".join(out)


def java_date(ts: float | None = None) -> str:
    """java.util.Date.toString() in UTC, e.g. 'Tue Oct 22 09:14:03 UTC 2024' (locale-independent)."""
    t = time.gmtime(ts)
    days = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    months = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
    return f"{days[t.tm_wday]} {months[t.tm_mon - 1]} {t.tm_mday:02d} {t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} UTC {t.tm_year}"


def format_properties(props: Mapping[str, str], comments: str | None = "", *, date: bool = True) -> str:
    """Text as Properties.store(writer, comments) writes it; `comments=None` writes no comment line."""
    lines = []
    if comments is not None:
        lines.extend("#" + c for c in comments.split("\n"))
    if date:
        lines.append("#" + java_date())
    for k, v in props.items():
        lines.append(f"{_escape(k, True)}={_escape(v, False)}")
    return "\n".join(lines) + "\n"
