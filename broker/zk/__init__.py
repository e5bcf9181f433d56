"""The broker in ZooKeeper mode (KIP-112 as designed).

The same log dirs, log manager and data plane as in KRaft mode; what differs is where their input
comes from. The broker registers under `/brokers/ids`, may win `/controller` and then runs the
ZooKeeper-mode controller (`controller.zk`), learns its partitions from LeaderAndIsr and StopReplica
(fed to the one replica manager) and its metadata cache from UpdateMetadata, and tells the
controller of a failed log dir through `/log_dir_event_notification`.
"""
