"""`kraftpy migrate`: the operator's side of a ZooKeeper to KRaft migration (KIP-866) of a local cluster.

`plan` decides, without I/O, what each step does to which node and when a step may run; `runner`
does it with processes and HTTP probes through `LocalCluster`.
"""
