"""The meta.properties of all of a node's directories, loaded and checked together (MetaPropertiesEnsemble).

Loading sorts each dir into one bucket: empty (no meta.properties), error (unreadable or invalid;
the dir is offline as far as the caller is concerned) or loaded. `verify` is pure and raises
EnsembleError with Kafka's messages on the first inconsistency.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum, auto
from pathlib import Path

from kraftpy.storage.meta_properties import (
    MetaProperties,
    MetaPropertiesError,
    MetaPropertiesVersion,
    read_meta_properties,
    write_meta_properties,
)
from protocol.uuid import Uuid, random_directory_id


class EnsembleError(RuntimeError):
    """The node's directories disagree, or a required one is missing: refuse to start or format."""


class VerificationFlag(Enum):
    REQUIRE_AT_LEAST_ONE_VALID = auto()
    REQUIRE_METADATA_LOG_DIR = auto()
    REQUIRE_V0 = auto()


@dataclass(frozen=True)
class MetaPropertiesEnsemble:
    empty_log_dirs: frozenset[str] = frozenset()
    error_log_dirs: Mapping[str, str] = field(default_factory=dict)  # dir -> why it could not be read
    log_dir_props: Mapping[str, MetaProperties] = field(default_factory=dict)
    metadata_log_dir: str | None = None

    @classmethod
    def load(cls, log_dirs: Iterable[str], metadata_log_dir: str | None = None) -> MetaPropertiesEnsemble:
        """Read every dir's meta.properties (the metadata dir included). Never raises for a single dir."""
        dirs = sorted({*log_dirs, *([metadata_log_dir] if metadata_log_dir else [])})
        empty: set[str] = set()
        errors: dict[str, str] = {}
        props: dict[str, MetaProperties] = {}
        for d in dirs:
            try:
                props[d] = read_meta_properties(d)
            except (FileNotFoundError, NotADirectoryError):
                # A missing dir or a missing file both mean "not formatted" to Kafka's loader,
                # unless the path itself is not a directory.
                if Path(d).exists() and not Path(d).is_dir():
                    errors[d] = f"{d} is not a directory"
                else:
                    empty.add(d)
            except MetaPropertiesError as e:
                errors[d] = f"invalid meta.properties: {e}"
            except OSError as e:
                errors[d] = f"I/O error: {e.strerror or e}"
        return cls(frozenset(empty), errors, props, metadata_log_dir)

    @property
    def all_dirs(self) -> list[str]:
        return sorted({*self.empty_log_dirs, *self.error_log_dirs, *self.log_dir_props})

    def cluster_id(self) -> str | None:
        for d in sorted(self.log_dir_props):
            cid = self.log_dir_props[d].cluster_id
            if cid is not None:
                return cid
        return None

    def node_id(self) -> int | None:
        for d in sorted(self.log_dir_props):
            nid = self.log_dir_props[d].node_id
            if nid is not None:
                return nid
        return None

    def directory_ids(self) -> dict[Uuid, str]:
        return {p.directory_id: d for d, p in self.log_dir_props.items() if p.directory_id is not None}

    def verify(
        self,
        expected_cluster_id: str | None,
        expected_node_id: int | None,
        flags: Iterable[VerificationFlag] = (),
    ) -> None:
        flags = set(flags)
        if VerificationFlag.REQUIRE_AT_LEAST_ONE_VALID in flags and not self.log_dir_props:
            raise EnsembleError("No readable meta.properties files found.")
        cluster_id = expected_cluster_id
        node_id = expected_node_id
        seen_ids: dict[Uuid, str] = {}
        for d in sorted(self.log_dir_props):
            meta = self.log_dir_props[d]
            if VerificationFlag.REQUIRE_V0 in flags and meta.version is not MetaPropertiesVersion.V0:
                raise EnsembleError(
                    f"Found unexpected version in {d}/meta.properties. ZK-based brokers that are not migrating only support version 0 (which is implicit when the `version` field is missing)."
                )
            if meta.cluster_id is not None:
                if cluster_id is None:
                    cluster_id = meta.cluster_id
                elif meta.cluster_id != cluster_id:
                    raise EnsembleError(
                        f"Invalid cluster.id in: {d}. Expected {cluster_id}, but read {meta.cluster_id}"
                    )
            if meta.node_id is not None:
                if node_id is None:
                    node_id = meta.node_id
                elif meta.node_id != node_id:
                    raise EnsembleError(
                        f"Stored node id {meta.node_id} doesn't match previous node id {node_id} in {d}. "
                        "If you moved your data, make sure your configured node id matches. If you intend to "
                        "create a new node, you should remove all data in your data directories."
                    )
            if meta.directory_id is not None:
                if meta.directory_id.is_reserved():
                    raise EnsembleError(f"Invalid reserved directory ID {meta.directory_id} found in {d}")
                other = seen_ids.get(meta.directory_id)
                if other is not None:
                    raise EnsembleError(
                        f"Duplicate directory ID {meta.directory_id} found. It was the ID of {other}, but also of {d}"
                    )
                seen_ids[meta.directory_id] = d
        if VerificationFlag.REQUIRE_METADATA_LOG_DIR in flags:
            if self.metadata_log_dir is None:
                raise EnsembleError("No metadata log directory was specified.")
            if self.metadata_log_dir in self.error_log_dirs:
                raise EnsembleError(
                    f"Encountered I/O error in metadata log directory {self.metadata_log_dir}. Cannot continue."
                )

    def with_generated_directory_ids(self) -> tuple[MetaPropertiesEnsemble, dict[str, MetaProperties]]:
        """Give every loaded dir lacking a directory.id a fresh, unique, unreserved one.

        Returns the new ensemble and the files to write (dir -> new meta.properties); writing is the caller's.
        """
        taken = set(self.directory_ids())
        changed: dict[str, MetaProperties] = {}
        props = dict(self.log_dir_props)
        for d in sorted(props):
            if props[d].directory_id is None:
                new_id = random_directory_id(taken)
                taken.add(new_id)
                props[d] = changed[d] = props[d].with_directory_id(new_id)
        return (
            MetaPropertiesEnsemble(self.empty_log_dirs, self.error_log_dirs, props, self.metadata_log_dir),
            changed,
        )


def write_all(changes: Mapping[str, MetaProperties]) -> dict[str, str]:
    """Write each file; returns {dir: error} for dirs whose write failed (the others were written)."""
    failed: dict[str, str] = {}
    for d, meta in sorted(changes.items()):
        try:
            write_meta_properties(d, meta)
        except OSError as e:
            failed[d] = f"I/O error writing meta.properties: {e.strerror or e}"
    return failed
