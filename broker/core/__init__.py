"""The broker's decisions, as plain objects: no sockets, no disks, no clock of their own.

- `broker_state` – Kafka's BrokerState values;
- `lifecycle` – registration, heartbeats, fencing wishes, offline dirs, controlled shutdown;
- `assignments` – the AssignReplicasToDirs queue (ready / in flight, batching, backoff);
- `placement` – the KIP-858 replica decision table and the choice of a dir for a new replica;
- `local_logs` – what the partition dirs found at startup mean (strays, leftovers, duplicates);
- `log_placement` – the replicas hosted here, where their logs live, and the plan to get them there
  (the LogManager's decisions);
- `metadata_fetch` – the broker as a Raft observer of `__cluster_metadata` (Fetch, FetchSnapshot).
"""
