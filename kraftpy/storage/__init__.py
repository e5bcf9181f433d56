"""Storage identity: meta.properties, the per-node ensemble of dirs, formatting, bootstrap metadata."""

from kraftpy.storage.atomic import atomic_write, fsync_dir
from kraftpy.storage.ensemble import EnsembleError, MetaPropertiesEnsemble, VerificationFlag
from kraftpy.storage.meta_properties import (
    META_PROPERTIES,
    MetaProperties,
    MetaPropertiesError,
    MetaPropertiesVersion,
    read_meta_properties,
    write_meta_properties,
)
from kraftpy.storage.startup import NodeDirs, initialize_log_dirs

__all__ = [
    "META_PROPERTIES",
    "EnsembleError",
    "MetaProperties",
    "MetaPropertiesEnsemble",
    "MetaPropertiesError",
    "MetaPropertiesVersion",
    "NodeDirs",
    "VerificationFlag",
    "atomic_write",
    "fsync_dir",
    "initialize_log_dirs",
    "read_meta_properties",
    "write_meta_properties",
]
