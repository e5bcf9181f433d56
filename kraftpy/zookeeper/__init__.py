"""An asyncio ZooKeeper client (on kazoo) for ZooKeeper mode: every call off the event loop."""

from kraftpy.zookeeper.client import CheckOp, CreateOp, DeleteOp, SetOp, ZkClient, ZnodeStat
from kraftpy.zookeeper.errors import (
    ZkBadVersionError,
    ZkConnectionLossError,
    ZkError,
    ZkNodeExistsError,
    ZkNoNodeError,
    ZkNotEmptyError,
    ZkSessionExpiredError,
    ZkUnavailableError,
)

__all__ = [
    "CheckOp",
    "CreateOp",
    "DeleteOp",
    "SetOp",
    "ZkBadVersionError",
    "ZkClient",
    "ZkConnectionLossError",
    "ZkError",
    "ZkNoNodeError",
    "ZkNodeExistsError",
    "ZkNotEmptyError",
    "ZkSessionExpiredError",
    "ZkUnavailableError",
    "ZnodeStat",
]
