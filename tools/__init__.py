"""kraftpy's operator tools: the `kraftpy` command, the client, local clusters, disks and the Spark job.

Servers never import this package; it builds on the shared core in `kraftpy/` and on `protocol/`.
"""
