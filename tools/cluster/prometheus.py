"""A Prometheus configuration that scrapes a local cluster and loads kraftpy's alert rules.

Prometheus reads YAML, and JSON is YAML, so the configuration is written with the standard library.
Each node is a target labelled with its name and role; ZooKeeper is not scraped (it has no /metrics).
"""

from __future__ import annotations

import json
from pathlib import Path

from tools.cluster.spec import ADMIN_USER, NodePlan, SecurityLayout

ALERT_RULES = Path(__file__).resolve().parents[2] / "ops" / "prometheus" / "kraftpy-alerts.yml"


def targets(nodes: list[NodePlan]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for n in nodes:
        if n.role == "zookeeper":
            continue
        out.append({"targets": [f"{n.host}:{n.port}"], "labels": {"node": n.name, "role": n.role}})
    return out


def scrape_config(
    nodes: list[NodePlan],
    *,
    interval: str = "15s",
    rules: Path | None = ALERT_RULES,
    security: SecurityLayout | None = None,
) -> str:
    """The configuration text; `interval` is both the scrape and the rule evaluation interval.
    `security`: a secure cluster's files, scraped over TLS with its admin certificate."""
    job: dict[str, object] = {"job_name": "kraftpy", "static_configs": targets(nodes)}
    if security is not None:
        job["scheme"] = "https"
        # Go's key loader skips the certificate that follows the key in the keystore file.
        job["tls_config"] = {
            "ca_file": str(security.ca),
            "cert_file": str(security.dir / f"{ADMIN_USER}.pem"),
            "key_file": str(security.keystore(ADMIN_USER)),
        }
    config: dict[str, object] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": [job],
    }
    if rules is not None:
        config["rule_files"] = [str(rules)]
    return json.dumps(config, indent=2) + "\n"
