"""A local kraftpy cluster: one controller and N JBOD brokers from generated configs, on plain
directories or real loop-device disks, optionally each node in its own network namespace.

Kept import-light: `python -m tools.cluster.probe` runs inside namespaces on every status poll.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tools.cluster.cluster import LocalCluster
    from tools.cluster.errors import ClusterError
    from tools.cluster.spec import ClusterSpec

__all__ = ["ClusterError", "ClusterSpec", "LocalCluster"]


def __getattr__(name: str) -> Any:
    if name == "LocalCluster":
        from tools.cluster.cluster import LocalCluster

        return LocalCluster
    if name == "ClusterSpec":
        from tools.cluster.spec import ClusterSpec

        return ClusterSpec
    if name == "ClusterError":
        from tools.cluster.errors import ClusterError

        return ClusterError
    raise AttributeError(name)
