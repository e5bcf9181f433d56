"""`kraftpy cluster up --secure` without processes: what each node's config says, the files under
`<work dir>/security/`, and the spec refusing the modes it does not cover."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from kraftpy.config import KafkaConfig
from kraftpy.properties import load_properties
from kraftpy.security.authorizer import bound_node_id, parse_super_users
from kraftpy.security.principal_mapping import SslPrincipalMapper
from tools.client.security import load_client_context
from tools.cluster.configs import node_properties
from tools.cluster.secure import client_bindings, create_files, read_client_password, scram_arguments
from tools.cluster.spec import ClusterSpec, NodePlan, SecurityLayout, plan_nodes


def plan(tmp_path: Path, **kw: object) -> tuple[ClusterSpec, list[NodePlan]]:
    spec = ClusterSpec(brokers=2, dirs=1, controllers=1, secure=True, **kw)  # type: ignore[arg-type]
    ports = list(range(30000, 30005))
    return spec, plan_nodes(spec, tmp_path, ports)


def config(tmp_path: Path, node: NodePlan, nodes: list[NodePlan], spec: ClusterSpec) -> KafkaConfig:
    props = node_properties(node, nodes, spec, SecurityLayout.of(tmp_path))
    # What the node itself would load: every key valid, every TLS listener with a PEM keystore.
    return KafkaConfig.from_properties(props, f"{node.name}.properties")


def test_controllers_serve_tls_with_client_certificates_and_check_acls(tmp_path: Path) -> None:
    spec, nodes = plan(tmp_path)
    controller = nodes[0]
    cfg = config(tmp_path, controller, nodes, spec)
    layout = SecurityLayout.of(tmp_path)
    assert cfg.security_protocol_name("CONTROLLER") == "SSL"
    assert cfg.ssl_client_auth == "required"
    assert (cfg.ssl_keystore_type, cfg.ssl_truststore_type) == ("PEM", "PEM")
    assert cfg.ssl_keystore_location == str(layout.dir / "node-3000.keystore.pem")
    assert cfg.ssl_truststore_location == str(layout.dir / "ca.pem")
    assert cfg.authorizer_class_name == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert parse_super_users(cfg.super_users) == {
        "User:node-3000",
        "User:node-1",
        "User:node-2",
        "User:admin",
    }
    assert bound_node_id("User:node-2", cfg.kraftpy_node_principal_template) == 2
    assert bound_node_id("User:admin", cfg.kraftpy_node_principal_template) is None


def test_brokers_map_rpc_to_ssl_and_kafka_clients_to_sasl_ssl(tmp_path: Path) -> None:
    spec, nodes = plan(tmp_path)
    broker = nodes[1]
    cfg = config(tmp_path, broker, nodes, spec)
    assert [(e.name, cfg.security_protocol_name(e.name)) for e in cfg.listener_list] == [
        ("RPC", "SSL"),
        ("SASL_SSL", "SASL_SSL"),
    ]
    assert cfg.security_protocol_name("CONTROLLER") == "SSL"
    assert cfg.rpc_listener_name == "RPC" and cfg.inter_broker_listener_name == "RPC"
    assert cfg.sasl_enabled_mechanisms == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    # Kafka's clients bring a password, not a certificate; the RPC listener keeps requiring one.
    assert cfg.listener_config("SASL_SSL").ssl_client_auth == "none"
    assert cfg.listener_config("RPC").ssl_client_auth == "required"
    assert cfg.ssl_keystore_location == str(SecurityLayout.of(tmp_path).node_keystore(1))
    assert cfg.kafka_listeners and cfg.kafka_listeners[0].name == "SASL_SSL"


def test_principals_are_the_certificates_common_names(tmp_path: Path) -> None:
    spec, nodes = plan(tmp_path)
    cfg = config(tmp_path, nodes[1], nodes, spec)
    mapper = SslPrincipalMapper(cfg.ssl_principal_mapping_rules)
    assert mapper.name("CN=node-1,O=kraftpy") == "node-1"
    assert mapper.name("CN=admin,O=kraftpy") == "admin"
    # a name without a CN first is kept whole (DEFAULT), so it matches no super user
    assert mapper.name("O=kraftpy") == "O=kraftpy"


def test_what_the_spec_asks_for_wins_over_the_secure_defaults(tmp_path: Path) -> None:
    spec, nodes = plan(tmp_path, broker_config={"super.users": "User:ops"})
    props = node_properties(nodes[1], nodes, spec, SecurityLayout.of(tmp_path))
    assert props["super.users"] == "User:ops"


def test_a_plain_cluster_is_unchanged_and_a_secure_one_needs_its_layout(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=1, dirs=1, controllers=1)
    nodes = plan_nodes(spec, tmp_path, list(range(30000, 30003)))
    props = node_properties(nodes[1], nodes, spec)
    assert props["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,RPC:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    assert not any(k.startswith(("ssl.", "sasl.", "authorizer.")) for k in props)
    secure, secure_nodes = plan(tmp_path)
    with pytest.raises(ValueError, match="layout"):
        node_properties(secure_nodes[0], secure_nodes, secure)


@pytest.mark.parametrize(
    ("kw", "message"), [({"zookeeper": True}, "ZooKeeper"), ({"multi_host": True}, "--multi-host")]
)
def test_secure_is_refused_where_it_is_not_supported(kw: dict[str, bool], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ClusterSpec(secure=True, **kw)  # type: ignore[arg-type]


def test_the_spec_remembers_it_is_secure() -> None:
    spec = ClusterSpec(secure=True)
    assert ClusterSpec.from_json(spec.to_json()).secure
    # a state file from before --secure existed
    old = {k: v for k, v in ClusterSpec().to_json().items() if k != "secure"}
    assert not ClusterSpec.from_json(old).secure


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_security_files_are_owner_only_and_what_the_configs_name(tmp_path: Path) -> None:
    spec, nodes = plan(tmp_path)
    layout = SecurityLayout.of(tmp_path)
    made = create_files(layout, nodes)
    assert mode(layout.dir) == 0o700
    files = sorted(layout.dir.iterdir())
    assert files and all(mode(f) == 0o600 for f in files)
    for node in nodes:
        props = node_properties(node, nodes, spec, layout)
        assert Path(props["ssl.keystore.location"]).is_file()
        assert Path(props["ssl.truststore.location"]) == layout.ca
        cert = x509.load_pem_x509_certificate(Path(props["ssl.keystore.location"]).read_bytes())
        assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == f"node-{node.node_id}"
    admin = x509.load_pem_x509_certificate(layout.keystore("admin").read_bytes())
    assert admin.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "admin"
    # kraftpy's tools take admin.properties as it is
    assert load_client_context(layout.admin_properties) is not None
    client = load_properties(layout.client_properties)
    assert client == {
        "bootstrap.servers": "127.0.0.1:30003,127.0.0.1:30004",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "client",
        "sasl.password": made.client_password,
        "ssl.ca.location": str(layout.ca),
    }
    assert read_client_password(layout) == made.client_password
    assert len(made.client_password) >= 20
    assert scram_arguments(made.client_password) == [
        f"SCRAM-SHA-512=[name=client,password={made.client_password}]"
    ]
    # a second cluster in the same work dir gets a new password and CA
    again = create_files(layout, nodes)
    assert again.client_password != made.client_password


def test_the_client_may_produce_consume_and_create_any_topic() -> None:
    granted = {(b.resource_type.name, b.resource_name, b.operation.name) for b in client_bindings()}
    assert granted == {
        ("TOPIC", "*", "READ"),
        ("TOPIC", "*", "WRITE"),
        ("TOPIC", "*", "DESCRIBE"),
        ("TOPIC", "*", "CREATE"),
        ("GROUP", "*", "READ"),
    }
    assert {(b.principal, b.host, b.permission.name) for b in client_bindings()} == {
        ("User:client", "*", "ALLOW")
    }


def test_prometheus_scrapes_a_secure_cluster_with_the_admin_certificate(tmp_path: Path) -> None:
    import json

    from tools.cluster.prometheus import scrape_config

    _spec, nodes = plan(tmp_path)
    layout = SecurityLayout.of(tmp_path)
    job = json.loads(scrape_config(nodes, security=layout))["scrape_configs"][0]
    assert job["scheme"] == "https"
    assert job["tls_config"] == {
        "ca_file": str(layout.ca),
        "cert_file": str(layout.dir / "admin.pem"),
        "key_file": str(layout.keystore("admin")),
    }
    assert "scheme" not in json.loads(scrape_config(nodes))["scrape_configs"][0]
