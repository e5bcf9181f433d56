#!/bin/sh
# One-shot step before the cluster starts: write meta.properties (cluster id, node id, directory ids)
# into every log dir and metadata dir of every node, as `kafka-storage.sh format` does for Kafka.
# Runs as root because fresh named volumes are root-owned; hands them to the runtime user after.
set -eu
: "${KRAFTPY_CLUSTER_ID:?set KRAFTPY_CLUSTER_ID}"
for config in /etc/kraftpy/*.properties; do
    echo "format: $config"
    kraftpy storage format --cluster-id "$KRAFTPY_CLUSTER_ID" --config "$config" --ignore-formatted
done
chown -R 10001:10001 /var/lib/kraftpy
