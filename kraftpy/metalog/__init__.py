"""The durable metadata log, `<metadata.log.dir>/__cluster_metadata-0`, in Kafka's own layout.

Segments of record batches v2, leader-epoch-checkpoint, quorum-state, partition.metadata and
snapshots `<end offset>-<epoch>.checkpoint` (reference section 8). `MetadataLog` is synchronous
and file-level: a process runs it on one dedicated thread; `GroupCommitLog` is the asyncio face.
"""
