"""What a local cluster is made of: the spec a person asks for, and the plan of nodes derived from it.

Pure values, no I/O: `plan_nodes(spec, work_dir, ports)` decides every node's id, address, dirs, config
and log path, so `up`, `status`, `down`, the demo and the tests all agree on where things are.

Layout under the work dir:

    cluster.json                       state (tools.cluster.state)
    config/<node>.properties           generated Kafka-style configs
    logs/<node>.log                    each process's stdout and stderr
    controller-3000/meta ...           each controller's metadata.log.dir (3000, 3001, ...)
    broker-1/meta                      a broker's metadata.log.dir
    broker-1/logs-0 ...                plain log dirs (embedded default)
    broker-1/disk-0/data ...           with --real-disks: the log dir inside the disk's mount
    disks/                             tools.disk state, images
    security/                          with --secure: CA, node and admin certificates, client configs
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Controllers take ids 3000, 3001, ... so they never collide with broker ids 1..N.
CONTROLLER_ID = 3000
MAX_CONTROLLERS = 9
CONTROLLER_LISTENER = "CONTROLLER"
BROKER_LISTENER = "PLAINTEXT"
"""A KRaft broker's Kafka-protocol listener; in ZooKeeper mode, the broker's only (HTTP) listener."""
RPC_LISTENER = "RPC"
"""A KRaft broker's HTTP RPC listener (rpc.listener.name)."""
LOOPBACK = "127.0.0.1"
# Multi-host mode: every node has its own address, so every node can use the usual port.
SUBNET = "10.200.0.0/24"
SUBNET_PREFIX = "10.200.0."
HOST_OFFSET = 10
CONTROLLER_PORT = 9093
BROKER_PORT = 9091
KAFKA_PORT = 9092
ZOOKEEPER_PORT = 2181
ZOOKEEPER_NODE = "zookeeper"
DEFAULT_WORK_DIR = Path("work") / "cluster"
WORK_ENV = "KRAFTPY_WORK"
DATA_SUBDIR = "data"
SECURITY_SUBDIR = "security"
SASL_LISTENER = "SASL_SSL"
"""A secure KRaft broker's Kafka-protocol listener (SASL_SSL with SCRAM), instead of PLAINTEXT."""
ADMIN_USER = "admin"
"""CN of the operator's certificate (admin.properties): a super user."""
CLIENT_USER = "client"
"""The SCRAM user of client.properties, for Kafka's clients."""

# Faster than Kafka's defaults so a laptop demo reacts within seconds; tests and the benchmark
# override them as their scenario needs (the benchmark keeps the 2000 ms heartbeat).
FAST_BROKER_SETTINGS: Mapping[str, str] = {
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",
    "replica.lag.time.max.ms": "5000",
    "log.dir.probe.interval.ms": "200",
}


@dataclass(frozen=True)
class ClusterSpec:
    """What `kraftpy cluster up` was asked for."""

    brokers: int = 3
    dirs: int = 3
    controllers: int = 3
    real_disks: bool = False
    multi_host: bool = False
    fs: tuple[str, ...] = ("ext4",)
    disk_size: str | None = None
    restart: str = "no"  # or "on-failure"
    # With real_disks: also put each broker's metadata.log.dir on its own disk (to fail it).
    metadata_disks: bool = False
    broker_config: Mapping[str, str] = field(default_factory=lambda: dict(FAST_BROKER_SETTINGS))
    controller_config: Mapping[str, str] = field(default_factory=dict)
    # Local mode: controllers on base_port, base_port+1, ..., then the brokers; None picks free ports.
    base_port: int | None = None
    # ZooKeeper mode (KIP-112): one ZooKeeper server and ZooKeeper-mode brokers, no KRaft controllers.
    zookeeper: bool = False
    # TLS with client certificates between nodes and for kraftpy's tools, SASL_SSL for Kafka's
    # clients, ACLs (SecurityLayout says where the files are).
    secure: bool = False

    @property
    def servers(self) -> int:
        """Nodes that are not brokers: the controllers, or the ZooKeeper server in ZooKeeper mode."""
        return 1 if self.zookeeper else self.controllers

    def __post_init__(self) -> None:
        if not 1 <= self.brokers <= 50:
            raise ValueError(f"--brokers must be between 1 and 50, not {self.brokers}")
        if not 1 <= self.controllers <= MAX_CONTROLLERS:
            raise ValueError(f"--controllers must be between 1 and {MAX_CONTROLLERS}, not {self.controllers}")
        if not 1 <= self.dirs <= 16:
            raise ValueError(f"--dirs must be between 1 and 16, not {self.dirs}")
        if self.restart not in ("no", "on-failure"):
            raise ValueError(f"restart policy must be 'no' or 'on-failure', not {self.restart!r}")
        bad = [f for f in self.fs if f not in ("ext4", "xfs")]
        if bad or not self.fs:
            raise ValueError(f"filesystems must be ext4 or xfs, not {', '.join(bad) or 'none'}")
        if self.secure and self.zookeeper:
            raise ValueError("--secure is for KRaft clusters: ZooKeeper mode runs without TLS")
        if self.secure and self.multi_host:
            raise ValueError("--secure runs on 127.0.0.1 only: it cannot be combined with --multi-host")
        if self.controller_config and self.zookeeper:
            raise ValueError("--controller-config is for KRaft clusters: ZooKeeper mode has no controllers")

    def to_json(self) -> dict[str, object]:
        return {
            "brokers": self.brokers,
            "dirs": self.dirs,
            "controllers": self.controllers,
            "real_disks": self.real_disks,
            "multi_host": self.multi_host,
            "fs": list(self.fs),
            "disk_size": self.disk_size,
            "restart": self.restart,
            "metadata_disks": self.metadata_disks,
            "broker_config": dict(self.broker_config),
            "controller_config": dict(self.controller_config),
            "base_port": self.base_port,
            "zookeeper": self.zookeeper,
            "secure": self.secure,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> ClusterSpec:
        return cls(
            brokers=int(d["brokers"]),  # type: ignore[call-overload]
            dirs=int(d["dirs"]),  # type: ignore[call-overload]
            # A state file written before clusters had a quorum describes one controller.
            controllers=int(d.get("controllers", 1)),  # type: ignore[call-overload]
            real_disks=bool(d["real_disks"]),
            multi_host=bool(d["multi_host"]),
            fs=tuple(d.get("fs") or ("ext4",)),  # type: ignore[arg-type]
            disk_size=d.get("disk_size"),  # type: ignore[arg-type]
            restart=str(d.get("restart", "no")),
            metadata_disks=bool(d.get("metadata_disks", False)),
            broker_config=dict(d.get("broker_config") or {}),  # type: ignore[call-overload]
            controller_config=dict(d.get("controller_config") or {}),  # type: ignore[call-overload]
            base_port=d.get("base_port"),  # type: ignore[arg-type]
            zookeeper=bool(d.get("zookeeper", False)),
            secure=bool(d.get("secure", False)),
        )


@dataclass(frozen=True)
class DirPlan:
    """One broker log dir; with real disks `disk` names its tools.disk disk and `mountpoint` its mount."""

    path: str
    index: int
    disk: str | None = None
    mountpoint: str | None = None
    fs: str | None = None


@dataclass(frozen=True)
class NodePlan:
    name: str
    node_id: int
    role: str  # "controller" or "broker"
    host: str
    port: int
    config: str
    log: str
    metadata_dir: str
    log_dirs: tuple[DirPlan, ...] = ()
    netns: str | None = None
    host_index: int = 0  # 1-based index of the node's namespace (multi-host), its switch port p<index>
    metadata_disk: DirPlan | None = None  # the disk under metadata_dir, when it has one
    kafka_port: int | None = None  # a KRaft broker's Kafka-protocol listener (PLAINTEXT)

    @property
    def url(self) -> str:
        if self.role == "zookeeper":
            return f"zk://{self.host}:{self.port}"
        return f"http://{self.host}:{self.port}"

    @property
    def listener(self) -> str:
        if self.role == "zookeeper":
            return f"{self.host}:{self.port}"
        if self.role == "controller":
            return f"{CONTROLLER_LISTENER}://{self.host}:{self.port}"
        if self.kafka_port is None:
            return f"{BROKER_LISTENER}://{self.host}:{self.port}"
        return f"{RPC_LISTENER}://{self.host}:{self.port},{BROKER_LISTENER}://{self.host}:{self.kafka_port}"

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def kafka_bootstrap(self) -> str | None:
        """host:port of the broker's Kafka-protocol listener, for Kafka's clients and tools."""
        return f"{self.host}:{self.kafka_port}" if self.kafka_port is not None else None

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "node_id": self.node_id,
            "role": self.role,
            "host": self.host,
            "port": self.port,
            "config": self.config,
            "log": self.log,
            "metadata_dir": self.metadata_dir,
            "log_dirs": [_dir_json(d) for d in self.log_dirs],
            "netns": self.netns,
            "host_index": self.host_index,
            "metadata_disk": _dir_json(self.metadata_disk) if self.metadata_disk else None,
            "kafka_port": self.kafka_port,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> NodePlan:
        return cls(
            name=str(d["name"]),
            node_id=int(d["node_id"]),  # type: ignore[call-overload]
            role=str(d["role"]),
            host=str(d["host"]),
            port=int(d["port"]),  # type: ignore[call-overload]
            config=str(d["config"]),
            log=str(d["log"]),
            metadata_dir=str(d["metadata_dir"]),
            log_dirs=tuple(DirPlan(**x) for x in d.get("log_dirs") or ()),  # type: ignore[attr-defined]
            netns=d.get("netns"),  # type: ignore[arg-type]
            host_index=int(d.get("host_index") or 0),  # type: ignore[call-overload]
            metadata_disk=DirPlan(**d["metadata_disk"]) if d.get("metadata_disk") else None,  # type: ignore[arg-type]
            kafka_port=d.get("kafka_port"),  # type: ignore[arg-type]
        )


def _dir_json(d: DirPlan) -> dict[str, object]:
    return {"path": d.path, "index": d.index, "disk": d.disk, "mountpoint": d.mountpoint, "fs": d.fs}


@dataclass(frozen=True)
class SecurityLayout:
    """Where a secure cluster's TLS files are: `<work dir>/security/`, owner-only.

    ca.pem, ca.key.pem                 the cluster's private CA (tools.cluster.certs)
    node-<id>.keystore.pem, .pem       each node's key and certificate (CN=node-<id>)
    admin.keystore.pem, admin.pem      the operator's client certificate (CN=admin, a super user)
    admin.properties                   --command-config for kraftpy's tools
    client.properties                  SASL_SSL settings for Kafka's clients (kcat -F)
    """

    dir: Path

    @classmethod
    def of(cls, work_dir: str | os.PathLike[str]) -> SecurityLayout:
        return cls(Path(os.path.abspath(work_dir)) / SECURITY_SUBDIR)

    @property
    def ca(self) -> Path:
        return self.dir / "ca.pem"

    def keystore(self, name: str) -> Path:
        """Key and certificate chain of `name` (node-<id> or admin), as tools.cluster.certs writes them."""
        return self.dir / f"{name}.keystore.pem"

    def node_keystore(self, node_id: int) -> Path:
        return self.keystore(node_name(node_id))

    @property
    def admin_properties(self) -> Path:
        return self.dir / "admin.properties"

    @property
    def client_properties(self) -> Path:
        return self.dir / "client.properties"


def node_name(node_id: int) -> str:
    """A node's certificate CN, and so its principal's name (User:node-<id>)."""
    return f"node-{node_id}"


def default_work_dir() -> Path:
    env = os.environ.get(WORK_ENV)
    return Path(env) if env else DEFAULT_WORK_DIR


def node_address(index: int) -> str:
    """Address of the node in namespace `<prefix>-n<index>` (1-based)."""
    return f"{SUBNET_PREFIX}{HOST_OFFSET + index}"


def plan_nodes(
    spec: ClusterSpec,
    work_dir: Path,
    ports: Sequence[int] | None = None,
    netns_prefix: str | None = None,
) -> list[NodePlan]:
    """Controllers 3000.. first, then brokers 1..N. Local mode takes `ports` (one per node, controllers
    first, then, when given, one per KRaft broker for its Kafka-protocol listener); multi-host mode gives the i-th node the address 10.200.0.(10+i) in namespace `<prefix>-n<i>`."""
    work_dir = Path(os.path.abspath(work_dir))
    count = spec.brokers + spec.servers
    if spec.multi_host:
        if not netns_prefix:
            raise ValueError("multi-host mode needs a namespace prefix")
    elif ports is None or len(ports) < count:
        raise ValueError(f"need {count} ports for {count} nodes")

    def addr(i: int, default_port: int) -> tuple[str, int, str | None]:
        if spec.multi_host:
            return node_address(i + 1), default_port, f"{netns_prefix}-n{i + 1}"
        assert ports is not None
        return LOOPBACK, ports[i], None

    nodes: list[NodePlan] = []
    if spec.zookeeper:
        host, port, ns = addr(0, ZOOKEEPER_PORT)
        nodes.append(
            NodePlan(
                name=ZOOKEEPER_NODE,
                node_id=0,
                role="zookeeper",
                host=host,
                port=port,
                config=str(work_dir / "config" / "zoo.cfg"),
                log=str(work_dir / "logs" / f"{ZOOKEEPER_NODE}.log"),
                metadata_dir=str(work_dir / ZOOKEEPER_NODE / "data"),
                netns=ns,
                host_index=1,
            )
        )
    for c in range(0 if spec.zookeeper else spec.controllers):
        host, port, ns = addr(c, CONTROLLER_PORT)
        node_id = CONTROLLER_ID + c
        name = f"controller-{node_id}"
        nodes.append(
            NodePlan(
                name=name,
                node_id=node_id,
                role="controller",
                host=host,
                port=port,
                **_node_files(work_dir, name),
                metadata_dir=str(work_dir / name / "meta"),
                netns=ns,
                host_index=c + 1,
            )
        )
    for b in range(1, spec.brokers + 1):
        host, port, ns = addr(spec.servers + b - 1, BROKER_PORT)
        kafka_port = None
        if not spec.zookeeper:
            if spec.multi_host:
                kafka_port = KAFKA_PORT
            elif ports is not None and len(ports) >= count + b:
                kafka_port = ports[count + b - 1]
        name = f"broker-{b}"
        base = work_dir / name
        dirs = []
        for d in range(spec.dirs):
            if spec.real_disks:
                mnt = base / f"disk-{d}"
                dirs.append(
                    DirPlan(
                        path=str(mnt / DATA_SUBDIR),
                        index=d,
                        disk=f"b{b}d{d}",
                        mountpoint=str(mnt),
                        fs=spec.fs[d % len(spec.fs)],
                    )
                )
            else:
                dirs.append(DirPlan(path=str(base / f"logs-{d}"), index=d))
        meta_disk = None
        if spec.real_disks and spec.metadata_disks:
            mnt = base / "meta-disk"
            meta_disk = DirPlan(
                path=str(mnt / DATA_SUBDIR), index=-1, disk=f"b{b}meta", mountpoint=str(mnt), fs="ext4"
            )
        nodes.append(
            NodePlan(
                name=name,
                node_id=b,
                role="broker",
                host=host,
                port=port,
                **_node_files(work_dir, name),
                metadata_dir=meta_disk.path if meta_disk else str(base / "meta"),
                log_dirs=tuple(dirs),
                netns=ns,
                host_index=spec.servers + b,
                metadata_disk=meta_disk,
                kafka_port=kafka_port,
            )
        )
    return nodes


def _node_files(work_dir: Path, name: str) -> dict[str, str]:
    """Where a node's generated config and its log go."""
    return {
        "config": str(work_dir / "config" / f"{name}.properties"),
        "log": str(work_dir / "logs" / f"{name}.log"),
    }


def client_netns(prefix: str, spec: ClusterSpec) -> str:
    """The namespace clients (status probes, producers, consumers) run in: one past the last node."""
    return f"{prefix}-n{client_host_index(spec)}"


def client_host_index(spec: ClusterSpec) -> int:
    return spec.brokers + spec.servers + 1
