"""ZooKeeper failures as one family of errors, translated from kazoo's at one edge (`client._call`)."""

from __future__ import annotations


class ZkError(Exception):
    def __init__(self, message: str, *, path: str | None = None, index: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.index = index
        """In a failed multi-op: the position of the operation that failed."""


class ZkUnavailableError(ZkError):
    """No session could be established (ZooKeeper down, wrong address)."""


class ZkNoNodeError(ZkError):
    pass


class ZkNodeExistsError(ZkError):
    pass


class ZkBadVersionError(ZkError):
    pass


class ZkNotEmptyError(ZkError):
    pass


class ZkSessionExpiredError(ZkError):
    pass


class ZkConnectionLossError(ZkError):
    pass
