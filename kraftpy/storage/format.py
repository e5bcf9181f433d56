"""`kraftpy storage format` without the command line: plan (read and check only), then write.

Everything that can be checked is checked in `plan_format`, before a single byte is written, so a
refused format leaves every existing file as it was. `execute_format` then, per empty dir, creates it,
writes bootstrap.checkpoint and finally meta.properties (the file that marks a dir formatted), each
atomically. Messages follow Kafka's Formatter.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftpy.config import KafkaConfig
from kraftpy.storage.ensemble import EnsembleError, MetaPropertiesEnsemble
from kraftpy.storage.meta_properties import MetaProperties, MetaPropertiesVersion, write_meta_properties
from kraftpy.storage.metadata_version import (
    JBOD_LEVEL,
    LATEST_PRODUCTION_LEVEL,
    MINIMUM_BOOTSTRAP_LEVEL,
    UnknownReleaseError,
    level_for_release,
    release_for_level,
)
from protocol.uuid import InvalidUuidError, Uuid, random_directory_id


class FormatError(RuntimeError):
    """Formatting refused; nothing was written."""


@dataclass
class FormatPlan:
    cluster_id: str
    node_id: int
    metadata_log_dir: str
    metadata_version_level: int
    to_format: dict[str, MetaProperties] = field(default_factory=dict)
    already_formatted: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    extra_records: list[Any] = field(default_factory=list)
    """Records the cluster starts with besides its feature levels (`--add-scram`)."""

    @property
    def metadata_version(self) -> str:
        return release_for_level(self.metadata_version_level)


def _writable(path: Path) -> str | None:
    """Why `path` cannot become a formatted dir, or None. Walks up to the first existing ancestor."""
    if path.exists():
        if not path.is_dir():
            return f"{path} exists and is not a directory"
        if not os.access(path, os.W_OK | os.X_OK):
            return f"{path} is not writable"
        return None
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot create {path}: {parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot create {path}: {parent} is not writable"
    return None


def plan_format(
    cfg: KafkaConfig,
    cluster_id: str,
    *,
    ignore_formatted: bool = False,
    release_version: str | None = None,
    add_scram: Sequence[str] = (),
) -> FormatPlan:
    """Decide what to write; raises FormatError (or ConfigError) and reads only."""
    cfg.require_kraft()
    try:
        Uuid.from_string(cluster_id)
    except InvalidUuidError as e:
        raise FormatError(f"Cluster ID string {cluster_id} does not appear to be a valid UUID: {e}") from None
    if release_version is None:
        level = LATEST_PRODUCTION_LEVEL
    else:
        try:
            level = level_for_release(release_version)
        except UnknownReleaseError as e:
            raise FormatError(str(e)) from None
    if level < MINIMUM_BOOTSTRAP_LEVEL:
        raise FormatError(
            f"The metadata.version {release_for_level(level)} is not supported by this tool; "
            f"the minimum is {release_for_level(MINIMUM_BOOTSTRAP_LEVEL)}."
        )
    if len(cfg.log_dir_list) > 1 and level < JBOD_LEVEL:
        raise FormatError(
            "Multiple log directories (aka JBOD) are not supported in the current MetadataVersion "
            f"{release_for_level(level)}. Need {release_for_level(JBOD_LEVEL)} or higher"
        )

    extra = _scram_records(add_scram, level)
    metadata_dir = cfg.metadata_log_dir_path
    ensemble = MetaPropertiesEnsemble.load(cfg.all_dirs, metadata_dir)
    try:
        ensemble.verify(cluster_id, cfg.node_id)
    except EnsembleError as e:
        raise FormatError(str(e)) from None
    plan = FormatPlan(cluster_id, cfg.node_id, metadata_dir, level, extra_records=extra)
    plan.already_formatted = sorted(ensemble.log_dir_props)
    if plan.already_formatted and not ignore_formatted:
        raise FormatError(
            f"Log directory {plan.already_formatted[0]} is already formatted. "
            "Use --ignore-formatted to ignore this directory and format the others."
        )
    for d in sorted(ensemble.error_log_dirs):
        plan.messages.append(f"I/O error trying to read log directory {d}. Ignoring...")
    if not ensemble.empty_log_dirs and not ensemble.log_dir_props:
        raise FormatError("No available log directories to format.")
    if not ensemble.empty_log_dirs:
        plan.messages.append("All of the log directories are already formatted.")
        return plan
    for d in sorted(ensemble.empty_log_dirs):
        problem = _writable(Path(d))
        if problem:
            raise FormatError(f"Cannot format log directory {d}: {problem}")
    taken = set(ensemble.directory_ids())
    for d in sorted(ensemble.empty_log_dirs):
        dir_id = random_directory_id(taken)
        taken.add(dir_id)
        plan.to_format[d] = MetaProperties(
            version=MetaPropertiesVersion.V1, cluster_id=cluster_id, node_id=cfg.node_id, directory_id=dir_id
        )
    return plan


def _scram_records(arguments: Sequence[str], level: int) -> list[Any]:
    """UserScramCredentialRecords for `--add-scram` arguments (Kafka's ScramParser)."""
    from kraftpy.security.scram import SCRAM_LEVEL, credential_record, parse_scram_argument
    from protocol.framing import ApiMessageAndVersion

    if arguments and level < SCRAM_LEVEL:
        raise FormatError(
            f"SCRAM is only supported in metadata.version {release_for_level(SCRAM_LEVEL)} or later, "
            f"not {release_for_level(level)}"
        )
    out: list[Any] = []
    seen: set[tuple[str, int]] = set()
    for text in arguments:
        try:
            name, mechanism, credential = parse_scram_argument(text)
        except ValueError as e:
            raise FormatError(str(e)) from None
        if (name, mechanism) in seen:
            raise FormatError(f"--add-scram names {mechanism.mechanism_name} for user {name} twice")
        seen.add((name, mechanism))
        out.append(ApiMessageAndVersion(credential_record(name, mechanism, credential), 0))
    return out


def execute_format(plan: FormatPlan, log: list[str] | None = None) -> None:
    """Write the planned dirs; OSError propagates (dirs already written stay formatted, the rest stay empty)."""
    from kraftpy.storage.bootstrap import write_bootstrap_checkpoint

    for d, meta in sorted(plan.to_format.items()):
        kind = "metadata" if d == plan.metadata_log_dir else "data"
        if log is not None:
            log.append(f"Formatting {kind} directory {d} with metadata.version {plan.metadata_version}.")
        Path(d).mkdir(parents=True, exist_ok=True)
        write_bootstrap_checkpoint(d, plan.metadata_version_level, extra=plan.extra_records)
        write_meta_properties(d, meta)
