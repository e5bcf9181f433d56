"""metadata.version feature levels (MetadataVersion) and parsing of release names like 3.9 or 3.7-IV2."""

from __future__ import annotations

# (release, feature level) in order; a bare release ("3.7") means its last IV.
METADATA_VERSIONS: tuple[tuple[str, int], ...] = (
    ("3.0-IV1", 1),
    ("3.1-IV0", 2),
    ("3.2-IV0", 3),
    ("3.3-IV0", 4),
    ("3.3-IV1", 5),
    ("3.3-IV2", 6),
    ("3.3-IV3", 7),
    ("3.4-IV0", 8),
    ("3.5-IV0", 9),
    ("3.5-IV1", 10),
    ("3.5-IV2", 11),
    ("3.6-IV0", 12),
    ("3.6-IV1", 13),
    ("3.6-IV2", 14),
    ("3.7-IV0", 15),
    ("3.7-IV1", 16),
    ("3.7-IV2", 17),
    ("3.7-IV3", 18),
    ("3.7-IV4", 19),
    ("3.8-IV0", 20),
    ("3.9-IV0", 21),
    ("4.0-IV0", 22),
)

MINIMUM_BOOTSTRAP_LEVEL = 4  # 3.3-IV0
JBOD_LEVEL = 17  # 3.7-IV2: directory assignment
LATEST_PRODUCTION_LEVEL = 21  # 3.9-IV0
LATEST_LEVEL = METADATA_VERSIONS[-1][1]

_BY_NAME = {name: level for name, level in METADATA_VERSIONS}
_BY_LEVEL = {level: name for name, level in METADATA_VERSIONS}
for _name, _level in METADATA_VERSIONS:
    _BY_NAME[_name.split("-")[0]] = _level  # later IVs overwrite earlier: bare release = last IV


class UnknownReleaseError(ValueError):
    pass


def level_for_release(release: str) -> int:
    """'3.9' -> 21, '3.7-IV2' -> 17 (case-insensitive IV); UnknownReleaseError for anything else."""
    text = release.strip()
    if "-" in text:
        base, iv = text.split("-", 1)
        text = f"{base}-{iv.upper()}"
    level = _BY_NAME.get(text)
    if level is None:
        known = ", ".join(name for name, _ in METADATA_VERSIONS)
        raise UnknownReleaseError(
            f"Unknown metadata.version '{release}'. Supported metadata.version are {known}"
        )
    return level


def release_for_level(level: int) -> str:
    return _BY_LEVEL.get(level, f"unknown level {level}")
