"""The controller's decision logic, without I/O.

Managers own slices of the controller's state and change it only by replaying metadata records.
Operations read that state and return a `ControllerResult` (records plus a response); the process
shell appends the records, replays them, and sends the response once they are durable.
"""

from controller.core.controller import ControllerConfig, QuorumControllerCore
from controller.core.result import ControllerResult

__all__ = ["ControllerConfig", "ControllerResult", "QuorumControllerCore"]
