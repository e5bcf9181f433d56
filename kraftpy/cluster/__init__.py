"""A local kraftpy cluster: one controller and N JBOD brokers from generated configs, on plain
directories or real loop-device disks, optionally each node in its own network namespace.

Kept import-light: `python -m kraftpy.cluster.probe` runs inside namespaces on every status poll.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kraftpy.cluster.cluster import LocalCluster
    from kraftpy.cluster.errors import ClusterError
    from kraftpy.cluster.spec import ClusterSpec

__all__ = ["ClusterError", "ClusterSpec", "LocalCluster"]


def __getattr__(name: str) -> Any:
    if name == "LocalCluster":
        from kraftpy.cluster.cluster import LocalCluster

        return LocalCluster
    if name == "ClusterSpec":
        from kraftpy.cluster.spec import ClusterSpec

        return ClusterSpec
    if name == "ClusterError":
        from kraftpy.cluster.errors import ClusterError

        return ClusterError
    raise AttributeError(name)
