"""The deployment files, checked by parsing (no cluster, no Docker engine here): the alerting rules use only
metrics a worker serves and exist once, the Kubernetes resources point at each other, the settings load."""

from __future__ import annotations

import re
import runpy
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from stream_guard.agents.metrics import WorkerMetrics
from stream_guard.config.load import build_config, check_environment, load, variables
from stream_guard.config.score_model import DEFAULT_MODEL
from stream_guard.wire.deadletter import HEADROOM_BYTES
from stream_guard.ops.latency import LatencyRegistry
from stream_guard.ops.monitoring.metrics import Snapshot, TenantMetrics
from stream_guard.ops.monitoring.windows import DayCounts

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
METRIC_RE = re.compile(r"\b(?:stream_guard|process|python)_[a-z_]+\b")


def _docs(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def _served() -> set[str]:
    """Every series name a worker (with tenant monitoring) serves, once each metric has a sample."""
    metrics = WorkerMetrics(LatencyRegistry())
    metrics.observe("rag.answers", 0, 3.0, 12.0, "accept")
    metrics.judged(0.4, ["faithfulness"])
    for counter, label in ((metrics.dead_letters, "judge"), (metrics.alerts, "drift"), (metrics.tombstones, "t"),
                           (metrics.alerts_suppressed, "drift"), (metrics.pruned, "alerts-sent"),
                           (metrics.clock_ignored, "future"), (metrics.send_errors, "t")):
        counter.labels(label).inc()
    metrics.latency.set_lag("rag.answers", 0, 1)
    tenants = TenantMetrics(["acme"])
    tenants.update("acme", Snapshot.of(DayCounts(answers=1, claims=1), DayCounts(answers=1, claims=1), 1, review=(1, 0)))
    tenants.counted("acme", "counted")
    tenants.alerted("acme", "rate_shift", "high")
    names: set[str] = set()
    for text in (metrics.text().decode(), tenants.text()):
        for family in text_string_to_metric_families(text):
            names.add(family.name)
            names.update(sample.name for sample in family.samples)
    return names


def test_every_alerting_rule_uses_only_served_metrics_and_has_a_severity_and_a_summary():
    doc = yaml.safe_load((DEPLOY / "prometheus" / "stream-guard-rules.yaml").read_text())
    assert [g["name"] for g in doc["groups"]] == ["stream-guard-platform", "stream-guard-tenants"]
    served = _served()
    rules = [rule for group in doc["groups"] for rule in group["rules"]]
    assert len({r["alert"] for r in rules}) == len(rules)  # each rule once
    for rule in rules:
        used = set(METRIC_RE.findall(rule["expr"])) - {"stream_guard"}
        assert (used or "up{" in rule["expr"]) and used <= served, (rule["alert"], used - served)
        assert rule["labels"]["severity"] in ("warning", "high", "critical") and rule["annotations"]["summary"]
        assert rule["expr"].count("(") == rule["expr"].count(")")
        assert "for" not in rule or re.fullmatch(r"\d+[smhd]", rule["for"])
    platform = {r["alert"] for r in doc["groups"][0]["rules"]}
    # The alerts deploy/OPERATIONS.md used to list as prose.
    assert {"StreamGuardWorkerDown", "StreamGuardConsumerLag", "StreamGuardLatencyBudget", "StreamGuardDeadLetterRate",
            "StreamGuardDeadLettersFromBugs", "StreamGuardNoVerdicts"} <= platform


def test_the_prometheusrule_is_generated_from_the_rules_file():
    render = runpy.run_path(str(DEPLOY / "render_prometheusrule.py"))["render"]
    assert (K8S / "prometheusrule.yaml").read_text() == render(), "run `make deploy-rules`"
    [resource] = _docs(K8S / "prometheusrule.yaml")
    rules_file = yaml.safe_load((DEPLOY / "prometheus" / "stream-guard-rules.yaml").read_text())
    assert resource["kind"] == "PrometheusRule" and resource["spec"]["groups"] == rules_file["groups"]


def test_compose_prometheus_loads_the_same_rules_file():
    prometheus = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    mounts = compose["services"]["prometheus"]["volumes"]
    [mount] = [m for m in mounts if m.startswith("./deploy/prometheus/stream-guard-rules.yaml:")]
    assert mount.split(":")[1] in prometheus["rule_files"]
    assert {c["job_name"] for c in prometheus["scrape_configs"]} >= {"stream-guard"}


def _configmaps() -> tuple[dict[str, Any], dict[str, str]]:
    docs = {d["metadata"]["name"]: d for d in _docs(K8S / "configmap.yaml")}
    return tomllib.loads(docs["stream-guard-config"]["data"]["stream-guard.toml"]), docs["stream-guard-env"]["data"]


def test_the_kubernetes_settings_load_and_the_resources_point_at_each_other():
    toml, env = _configmaps()
    check_environment(env)
    settings = load(toml, env).stream
    build_config(None, None, None, env=env)
    assert settings.broker and settings.log_format == "json"
    # A threshold pinned here would silently move the operating point away from the calibrated one.
    assert "flag_threshold" not in toml.get("detector", {})
    assert load(toml, env).detector.flag_threshold == DEFAULT_MODEL.threshold
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")

    [service] = _docs(K8S / "service.yaml")
    [statefulset] = _docs(K8S / "statefulset.yaml")
    [monitor] = _docs(K8S / "servicemonitor.yaml")
    [scaled] = _docs(K8S / "scaledobject.yaml")
    assert monitor["kind"] == "ServiceMonitor"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= {p["name"] for p in service["spec"]["ports"]}
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"

    assert scaled["kind"] == "ScaledObject"
    target = scaled["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("StatefulSet", statefulset["metadata"]["name"])
    assert "replicas" not in statefulset["spec"]  # KEDA owns the count
    assert scaled["spec"]["maxReplicaCount"] == settings.partitions  # more workers would get no partition
    triggers = [t["metadata"] for t in scaled["spec"]["triggers"]]
    assert {t["topic"] for t in triggers} == {settings.topics.answers, settings.by_question_topic}
    assert {t["consumerGroup"] for t in triggers} == {settings.app_id}
    assert {t["bootstrapServers"] for t in triggers} == {settings.broker}
    image = statefulset["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.endswith(":" + kustomization["images"][0]["newTag"])
    # Other workers fetch dashboard pages from a pod by its name under the headless Service, which must be
    # the StatefulSet's serviceName; $(VAR) only expands a variable defined earlier in the list.
    assert service["spec"]["clusterIP"] == "None" and statefulset["spec"]["serviceName"] == service["metadata"]["name"]
    names = [e["name"] for e in statefulset["spec"]["template"]["spec"]["containers"][0]["env"]]
    advertised = next(e for e in statefulset["spec"]["template"]["spec"]["containers"][0]["env"]
                      if e["name"] == "STREAM_GUARD_ADVERTISED_HOST")
    assert advertised["value"] == f"$(STREAM_GUARD_WORKER_NAME).{service['metadata']['name']}"
    assert names.index("STREAM_GUARD_WORKER_NAME") < names.index("STREAM_GUARD_ADVERTISED_HOST")


def test_compose_workers_have_a_broker_and_the_dead_letter_topic_takes_what_it_carries():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    worker_env = {k: str(v) for k, v in compose["services"]["worker-1"]["environment"].items()}
    resolved = {k: re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", v) for k, v in worker_env.items()}
    check_environment(resolved)
    settings = load(env=resolved).stream
    assert settings.broker
    assert {"STREAM_GUARD_MONITOR_SESSION_SECRET", "STREAM_GUARD_MONITOR_REVIEW_SALT"} <= worker_env.keys()
    script = compose["services"]["topics"]["command"][0]
    created = set(re.findall(r"--topic (\S+)", script))
    assert created == {settings.topics.answers, *settings.topics.outputs(), settings.topics.review,
                       settings.topics.labels}
    dlq = re.search(r"--topic guard\.dlq .*?max\.message\.bytes=(\d+)", script)
    assert dlq and int(dlq.group(1)) >= settings.max_message_bytes + HEADROOM_BYTES


def test_kubernetes_runs_tenant_monitoring_with_its_secrets_from_a_secret():
    """The [monitor] table loads as the worker loads it, and the session secret and review salt reach the
    worker from a Secret (never from the ConfigMap); the workers may fetch dashboard pages from each other."""
    toml, env = _configmaps()
    [statefulset] = _docs(K8S / "statefulset.yaml")
    container = statefulset["spec"]["template"]["spec"]["containers"][0]
    from_secrets = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"]
                    if "secretKeyRef" in e.get("valueFrom", {})}
    secrets = {"STREAM_GUARD_MONITOR_SESSION_SECRET", "STREAM_GUARD_MONITOR_REVIEW_SALT"}
    assert secrets <= from_secrets.keys() and secrets <= variables().keys()
    assert {from_secrets[name]["name"] for name in secrets} == {"stream-guard-monitor"}
    assert not any(from_secrets[name].get("optional") for name in secrets)
    assert not secrets & env.keys() and "session_secret" not in toml["monitor"]
    monitor = load(toml, {**env, **{name: "from-the-secret-0123456789abcdef0123" for name in secrets}}).monitor
    assert monitor.enabled and monitor.session_secret == "from-the-secret-0123456789abcdef0123" and monitor.review_salt

    [policy] = _docs(K8S / "networkpolicy.yaml")
    sources = [peer for rule in policy["spec"]["ingress"] for peer in rule["from"]]
    workers = statefulset["spec"]["template"]["metadata"]["labels"]
    assert any(peer.get("podSelector", {}).get("matchLabels", {}).items() <= workers.items()
               and "namespaceSelector" not in peer for peer in sources)


@pytest.mark.parametrize("path", sorted([*DEPLOY.rglob("*.yaml"), *DEPLOY.rglob("*.yml"), REPO / "docker-compose.yml"]))
def test_every_deployment_yaml_parses(path: Path):
    assert _docs(path)
    assert "answers-by-question" not in path.read_text() or path.name == "configmap.yaml"


def test_no_stream_guard_variable_in_the_deploy_files_is_unknown():
    text = "\n".join(p.read_text() for p in [*DEPLOY.rglob("*.y*ml"), REPO / "Dockerfile", REPO / "docker-compose.yml"])
    check_environment({name: "" for name in re.findall(r"STREAM_GUARD_[A-Z0-9_]*[A-Z0-9]", text)})
