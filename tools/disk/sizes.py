"""Human sizes ("256M", "1G", "4096") to bytes and back."""

from __future__ import annotations

import re

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(?:i?B)?\s*$", re.IGNORECASE)


def parse_size(text: str | int) -> int:
    """Bytes in `text`; binary units, as losetup and mkfs read them ("256M" == 256 MiB)."""
    if isinstance(text, int):
        if text <= 0:
            raise ValueError(f"size must be positive, got {text}")
        return text
    m = _SIZE.match(text)
    if m is None:
        raise ValueError(f"not a size: {text!r} (use e.g. 256M, 1G or a byte count)")
    value = int(m.group(1)) * _UNITS[m.group(2).upper()]
    if value <= 0:
        raise ValueError(f"size must be positive, got {text!r}")
    return value


def format_size(n: int) -> str:
    for unit in ("T", "G", "M", "K"):
        scale = _UNITS[unit]
        if n >= scale:
            value = n / scale
            return f"{value:.0f}{unit}" if value == int(value) or value >= 100 else f"{value:.1f}{unit}"
    return f"{n}B"
