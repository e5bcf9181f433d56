"""Which controller is active, as a broker learns it (Kafka: the Raft observer's LeaderAndEpoch that
NodeToControllerChannelManager sends to).

The broker starts knowing only `controller.quorum.voters`. Every Fetch answer names the leader and
its epoch (CurrentLeader); a hint never moves the epoch back. A controller that answers
NOT_CONTROLLER or cannot be reached is not the leader: the broker forgets it and tries the next
voter in turn, so it finds the leader even when it starts while a controller is down.
"""

from __future__ import annotations

from collections.abc import Sequence


class ControllerLeader:
    def __init__(self, voters: Sequence[int]) -> None:
        if not voters:
            raise ValueError("no controller to talk to: controller.quorum.voters is empty")
        self.voters = sorted(voters)
        self.leader_id = -1
        self.leader_epoch = -1
        self._next = 0  # where the round robin goes when no leader is known

    def target(self) -> int:
        """The controller to send the next request to."""
        if self.leader_id in self.voters:
            return self.leader_id
        return self.voters[self._next % len(self.voters)]

    def learn(self, leader_id: int, leader_epoch: int) -> bool:
        """A CurrentLeader hint; True when it changed who we send to."""
        if leader_epoch < self.leader_epoch:
            return False
        if leader_epoch == self.leader_epoch and leader_id < 0:
            return False  # a voter that does not know the leader of the epoch we know adds nothing
        changed = leader_id != self.leader_id
        self.leader_id, self.leader_epoch = leader_id, leader_epoch
        return changed

    def failed(self, voter: int) -> None:
        """`voter` answered NOT_CONTROLLER or could not be reached: look elsewhere."""
        if voter == self.leader_id:
            self.leader_id = -1
        if voter in self.voters:
            self._next = self.voters.index(voter) + 1
        else:
            self._next += 1
