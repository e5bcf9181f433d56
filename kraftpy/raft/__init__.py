"""A sans-IO Raft core for a KRaft quorum of controllers (KIP-595 elections, pull replication, KIP-630 snapshots).

Nothing here touches a socket, a disk or a clock: `RaftCore` takes messages and the time in ms and
returns one `Ready` holding what to persist (quorum-state, log truncations and appends, snapshots),
what to send and what is committed. The shell persists before it sends, so a vote or an epoch change
is on disk before anyone hears of it.

- `messages.py`  the RPCs as frozen values with Kafka's field names, and log entries / snapshot ids
- `state.py`     the persisted quorum-state, the roles and the table of allowed role changes
- `log_view.py`  the little the core knows about its log: start, end, epochs per offset range, snapshot id,
                 and the leader's validation / the follower's truncation that depend only on it
- `backoff.py`   election timeout and backoffs as pure functions of the settings and a seeded RNG
- `config.py`    the `controller.quorum.*` timeouts
- `cleaning.py`  the minute after which the shell applies metadata retention to the log
- `ready.py`     the output of one step
- `core.py`      the state machine
- `memory_log.py` an in-memory log that applies a `Ready` (for tests and the simulation)
"""
