"""The ZooKeeper-mode controller (KIP-112 as designed): run by the broker that wins `/controller`.

`core.py` is sans-IO, after Kafka's KafkaController with its partition and replica state machines:
each event (broker changes, topic changes, a log-dir event notification, a LeaderAndIsr answer,
AlterPartition, ControlledShutdown) returns a `ZkControllerResult` holding the ZooKeeper writes to
make and the requests to send once they succeed. ZooKeeper-backed state moves only when the shell
hands the writes back through `replay`, after ZooKeeper took them; the shell (`shell.py`, in the
broker process) does the ZooKeeper and RPC I/O.
"""
