"""Kafka-style .properties for controller-only and broker-only nodes, with Kafka's property names.

The plain builders take ids, addresses and dirs; the `NodePlan` ones (what `kraftpy cluster` plans) add
the defaults a demo cluster runs with, and `secure_properties` what a `--secure` cluster adds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.cluster.spec import (
    ADMIN_USER,
    BROKER_LISTENER,
    CONTROLLER_LISTENER,
    LOOPBACK,
    RPC_LISTENER,
    SASL_LISTENER,
    ClusterSpec,
    NodePlan,
    SecurityLayout,
    node_name,
)

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CN_RULES = "RULE:^CN=([^,]+).*$/$1/,DEFAULT"
"""ssl.principal.mapping.rules naming a certificate's holder by its CN alone (User:node-1, User:admin)."""
NODE_PRINCIPAL_TEMPLATE = "User:node-{id}"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def voters_string(voters: Mapping[int, str | int]) -> str:
    """controller.quorum.voters for {node id: port on 127.0.0.1, or "host:port"}."""
    return ",".join(
        f"{node}@{where if isinstance(where, str) else f'{LOOPBACK}:{where}'}"
        for node, where in sorted(voters.items())
    )


def controller_props(
    *, node_id: int, port: int, metadata_dir: str | Path, voters: str, host: str = LOOPBACK
) -> dict[str, str]:
    """A controller-only node serving CONTROLLER://host:port, its metadata log in `metadata_dir`."""
    return {
        "process.roles": "controller",
        "node.id": str(node_id),
        "controller.quorum.voters": voters,
        "controller.listener.names": CONTROLLER_LISTENER,
        "listeners": f"{CONTROLLER_LISTENER}://{host}:{port}",
        "log.dirs": str(metadata_dir),
        "metadata.log.dir": str(metadata_dir),
    }


def broker_props(
    *,
    node_id: int,
    port: int,
    log_dirs: Sequence[str | Path],
    voters: str,
    metadata_dir: str | Path | None = None,
    rack: str | None = None,
    host: str = LOOPBACK,
    kafka_port: int | None = None,
    rpc_listener: str = RPC_LISTENER,
    kafka_listener: str = BROKER_LISTENER,
) -> dict[str, str]:
    """A broker-only node with `log_dirs` (JBOD when more than one): the HTTP RPC on
    `rpc_listener`://host:port and, with `kafka_port`, Kafka's protocol on
    `kafka_listener`://host:kafka_port (PLAINTEXT unless the protocol map is replaced)."""
    listeners = [f"{rpc_listener}://{host}:{port}"]
    protocols = [f"{CONTROLLER_LISTENER}:PLAINTEXT", f"{rpc_listener}:PLAINTEXT"]
    if kafka_port is not None:
        listeners.append(f"{kafka_listener}://{host}:{kafka_port}")
        protocols.append(f"{kafka_listener}:PLAINTEXT")
    props = {
        "process.roles": "broker",
        "node.id": str(node_id),
        "controller.quorum.voters": voters,
        "controller.listener.names": CONTROLLER_LISTENER,
        "listeners": ",".join(listeners),
        "listener.security.protocol.map": ",".join(protocols),
        "rpc.listener.name": rpc_listener,
        "inter.broker.listener.name": rpc_listener,
        "log.dirs": ",".join(str(d) for d in log_dirs),
    }
    if metadata_dir is not None:
        props["metadata.log.dir"] = str(metadata_dir)
    if rack is not None:
        props["broker.rack"] = rack
    return props


def zk_broker_props(
    *,
    broker_id: int,
    port: int,
    log_dirs: Sequence[str | Path],
    zookeeper: str,
    rack: str | None = None,
    host: str = LOOPBACK,
) -> dict[str, str]:
    """A ZooKeeper-mode broker (no process.roles) serving PLAINTEXT://host:port with `log_dirs`."""
    props = {
        "broker.id": str(broker_id),
        "zookeeper.connect": zookeeper,
        "listeners": f"{BROKER_LISTENER}://{host}:{port}",
        "inter.broker.listener.name": BROKER_LISTENER,
        "listener.security.protocol.map": f"{BROKER_LISTENER}:PLAINTEXT",
        "log.dirs": ",".join(str(d) for d in log_dirs),
    }
    if rack is not None:
        props["broker.rack"] = rack
    return props


def with_extra(props: dict[str, str], extra: Mapping[str, object] | None) -> dict[str, str]:
    """`props` overridden by `extra`, its values written as a .properties file holds them."""
    for key, value in (extra or {}).items():
        props[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return props


def quorum_voters(nodes: Sequence[NodePlan]) -> str:
    """controller.quorum.voters naming every controller of the plan."""
    return voters_string({n.node_id: n.bootstrap for n in nodes if n.role == "controller"})


SHARED_BROKER_TIMINGS = ("broker.session.timeout.ms", "broker.heartbeat.interval.ms")
"""Broker settings a controller reads too."""


def controller_properties(node: NodePlan, voters: str, spec: ClusterSpec) -> dict[str, str]:
    props = controller_props(
        node_id=node.node_id,
        port=node.port,
        metadata_dir=node.metadata_dir,
        voters=voters,
        host=node.host,
    )
    props["listener.security.protocol.map"] = f"{CONTROLLER_LISTENER}:PLAINTEXT"
    # The controllers fence a broker whose heartbeats stop for broker.session.timeout.ms and give a
    # heartbeat half of broker.heartbeat.interval.ms in their queue; the brokers bound their own
    # waits by the one and send at the other: both sides read the values the spec gives.
    for key in SHARED_BROKER_TIMINGS:
        value = spec.broker_config.get(key)
        if value is not None:
            props[key] = value
    props.update(spec.controller_config)
    return props


def broker_properties(
    node: NodePlan,
    voters: str,
    spec: ClusterSpec,
    rpc_listener: str = RPC_LISTENER,
    kafka_listener: str = BROKER_LISTENER,
) -> dict[str, str]:
    props = broker_props(
        node_id=node.node_id,
        port=node.port,
        log_dirs=[d.path for d in node.log_dirs],
        voters=voters,
        metadata_dir=node.metadata_dir,
        host=node.host,
        kafka_port=node.kafka_port,
        rpc_listener=rpc_listener,
        kafka_listener=kafka_listener,
    )
    props["num.partitions"] = "3"
    props["default.replication.factor"] = str(min(3, spec.brokers))
    props["min.insync.replicas"] = str(min(2, spec.brokers))
    # a laptop cluster: fewer offsets partitions than Kafka's 50, and no wait for more members on a
    # group's first rebalance (as Kafka's own config/server.properties)
    props["offsets.topic.num.partitions"] = "10"
    props["offsets.topic.replication.factor"] = str(min(3, spec.brokers))
    props["group.initial.rebalance.delay.ms"] = "0"
    props.update(spec.broker_config)
    return props


def zookeeper_properties(node: NodePlan) -> dict[str, str]:
    """zoo.cfg of a standalone ZooKeeper: its data under the work dir, no admin server, the four-letter
    words the tools probe with."""
    return {
        "tickTime": "1000",
        "dataDir": node.metadata_dir,
        "clientPort": str(node.port),
        "clientPortAddress": node.host,
        "maxClientCnxns": "0",
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "ruok,srvr,mntr,stat",
    }


def zookeeper_connect(nodes: Sequence[NodePlan]) -> str | None:
    """zookeeper.connect for the plan's ZooKeeper node, None for a KRaft cluster."""
    zk = next((n for n in nodes if n.role == "zookeeper"), None)
    return f"{zk.host}:{zk.port}" if zk is not None else None


def zk_broker_properties(node: NodePlan, connect: str, spec: ClusterSpec) -> dict[str, str]:
    props = zk_broker_props(
        broker_id=node.node_id,
        port=node.port,
        log_dirs=[d.path for d in node.log_dirs],
        zookeeper=connect,
        host=node.host,
    )
    props["num.partitions"] = "3"
    props["default.replication.factor"] = str(min(3, spec.brokers))
    props["min.insync.replicas"] = str(min(2, spec.brokers))
    # The KRaft timings of the spec have ZooKeeper-mode equivalents: a broker is dead when its session is.
    session = spec.broker_config.get("broker.session.timeout.ms")
    if session is not None:
        props["zookeeper.session.timeout.ms"] = str(max(int(session), 2000))
    props.update({k: v for k, v in spec.broker_config.items() if not k.startswith("broker.")})
    return props


MIGRATION_ENABLE = "zookeeper.metadata.migration.enable"


def migration_controller_properties(
    node: NodePlan, voters: str, connect: str, spec: ClusterSpec
) -> dict[str, str]:
    """A KRaft controller taking over a ZooKeeper-mode cluster (KIP-866): it reads and dual-writes
    ZooKeeper, and sends LeaderAndIsr and UpdateMetadata to the ZooKeeper-mode brokers over their
    inter-broker listener, so it must know that listener's name and protocol too."""
    props = controller_properties(node, voters, spec)
    props["listener.security.protocol.map"] = f"{CONTROLLER_LISTENER}:PLAINTEXT,{BROKER_LISTENER}:PLAINTEXT"
    props["inter.broker.listener.name"] = BROKER_LISTENER
    props["zookeeper.connect"] = connect
    props[MIGRATION_ENABLE] = "true"
    return props


def migrating_zk_broker_properties(
    node: NodePlan, connect: str, voters: str, spec: ClusterSpec
) -> dict[str, str]:
    """A ZooKeeper-mode broker in migration mode: still a ZooKeeper broker (broker.id, zookeeper.connect),
    also registered with the KRaft quorum, so it needs the controllers' address and listener and
    the KRaft heartbeat timings the plain ZooKeeper config leaves out."""
    props = zk_broker_properties(node, connect, spec)
    props["listener.security.protocol.map"] = f"{BROKER_LISTENER}:PLAINTEXT,{CONTROLLER_LISTENER}:PLAINTEXT"
    props["controller.quorum.voters"] = voters
    props["controller.listener.names"] = CONTROLLER_LISTENER
    props[MIGRATION_ENABLE] = "true"
    props.update({k: v for k, v in spec.broker_config.items() if k.startswith("broker.")})
    return props


def migrated_broker_properties(node: NodePlan, voters: str, spec: ClusterSpec) -> dict[str, str]:
    """A broker born in ZooKeeper mode restarted as a KRaft broker: node.id = its broker.id, the same
    listener and log dirs. No metadata.log.dir: its log dirs are the ones it formatted (meta.properties
    written in ZooKeeper mode), and a KRaft broker refuses an unformatted metadata dir, so the
    metadata log stays in the first log dir as in Kafka's migration guide. The HTTP RPC stays on the
    listener named PLAINTEXT: brokers still in ZooKeeper mode reach it by that name."""
    props = broker_properties(node, voters, spec, rpc_listener=BROKER_LISTENER)
    del props["metadata.log.dir"]
    return props


def secure_properties(node: NodePlan, nodes: Sequence[NodePlan], layout: SecurityLayout) -> dict[str, str]:
    """What a `--secure` cluster adds to a KRaft node's config: its CONTROLLER and RPC listeners SSL
    with client certificates required, each peer named by its certificate's CN; the broker's
    Kafka listener SASL_SSL with SCRAM; ACLs checked, with every node and the admin as super users;
    and a node's principal bound to its id, so one node cannot speak for another."""
    supers = [f"User:{node_name(n.node_id)}" for n in nodes if n.role in ("controller", "broker")]
    props = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(layout.node_keystore(node.node_id)),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(layout.ca),
        "ssl.client.auth": "required",
        "ssl.principal.mapping.rules": CN_RULES,
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": ";".join([*supers, f"User:{ADMIN_USER}"]),
        "kraftpy.node.principal.template": NODE_PRINCIPAL_TEMPLATE,
    }
    if node.role == "controller":
        props["listener.security.protocol.map"] = f"{CONTROLLER_LISTENER}:SSL"
        return props
    protocols = [f"{CONTROLLER_LISTENER}:SSL", f"{RPC_LISTENER}:SSL"]
    if node.kafka_port is not None:
        protocols.append(f"{SASL_LISTENER}:SASL_SSL")
        props["sasl.enabled.mechanisms"] = ",".join(SCRAM_MECHANISMS)
        # Kafka's clients authenticate there with SCRAM, not a certificate (KIP-684: a SASL_SSL
        # listener asks for one only when its own ssl.client.auth says so).
        props[f"listener.name.{SASL_LISTENER.lower()}.ssl.client.auth"] = "none"
    props["listener.security.protocol.map"] = ",".join(protocols)
    return props


def node_properties(
    node: NodePlan, nodes: Sequence[NodePlan], spec: ClusterSpec, security: SecurityLayout | None = None
) -> dict[str, str]:
    """A node's config; a `spec.secure` cluster's needs the `security` layout of its files."""
    if node.role == "zookeeper":
        return zookeeper_properties(node)
    connect = zookeeper_connect(nodes)
    if connect is not None:
        return zk_broker_properties(node, connect, spec)
    if spec.secure and security is None:
        raise ValueError("a secure cluster's configs need the layout of its TLS files")
    voters = quorum_voters(nodes)
    if node.role == "controller":
        props = controller_properties(node, voters, spec)
    else:
        kafka_listener = SASL_LISTENER if spec.secure else BROKER_LISTENER
        props = broker_properties(node, voters, spec, kafka_listener=kafka_listener)
    if spec.secure and security is not None:
        extra = spec.controller_config if node.role == "controller" else spec.broker_config
        # what the spec asks for explicitly still wins, as it does over the other defaults
        props.update({k: v for k, v in secure_properties(node, nodes, security).items() if k not in extra})
    return props


def write_config(path: str | Path, props: Mapping[str, str], title: str | None = None) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    # Plain `key=value` lines as people write them; Java's reader takes ':' in a value as is.
    lines = [f"# {title}"] if title else []
    lines += [f"{k}={v.replace(chr(92), chr(92) * 2)}" for k, v in props.items()]
    p.write_text("\n".join(lines) + "\n")
    return p


def write_controller_config(
    path: Path,
    *,
    node_id: int,
    port: int,
    metadata_dir: Path,
    voters: Mapping[int, int] | None = None,
    extra: Mapping[str, object] | None = None,
) -> Path:
    """A controller on 127.0.0.1:`port`; a single voter unless `voters` ({id: port}) are given."""
    props = controller_props(
        node_id=node_id, port=port, metadata_dir=metadata_dir, voters=voters_string(voters or {node_id: port})
    )
    return write_config(path, with_extra(props, extra))


def write_broker_config(
    path: Path,
    *,
    node_id: int,
    port: int,
    log_dirs: Sequence[Path],
    voters: Mapping[int, int],
    metadata_dir: Path | None = None,
    rack: str | None = None,
    extra: Mapping[str, object] | None = None,
    kafka_port: int | None = None,
) -> Path:
    """A broker on 127.0.0.1:`port` (and Kafka's protocol on `kafka_port`) with `log_dirs`,
    controllers at `voters` ({id: port})."""
    props = broker_props(
        node_id=node_id,
        port=port,
        log_dirs=log_dirs,
        voters=voters_string(voters),
        metadata_dir=metadata_dir,
        rack=rack,
        kafka_port=kafka_port,
    )
    return write_config(path, with_extra(props, extra))
