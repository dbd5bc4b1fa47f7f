#!/usr/bin/env python3
"""Checks mcpd's deploy assets: the Helm chart (helm/mcpd), the plain
manifests rendered from it (deploy/kubernetes), the Prometheus rules, the
Grafana dashboard and the Dockerfile.

Run it through scripts/check-deploy.sh, which provides a venv with the pinned
helm-python-sdk (Helm's own engine, no helm binary) and kubernetes-validate
(helm/requirements-check.txt). Prints one line per check, `PASS name` or
`FAIL name: reason`, then `deploy: N passed, M failed`; exits 0 only when
nothing failed.

Rendered manifests are validated strictly (unknown fields are errors)
against Kubernetes 1.30, the oldest version the chart supports (Chart.yaml
kubeVersion; the preStop sleep handler needs it), and against the newest
version kubernetes-validate knows.

Options:
  --write-manifests  re-render deploy/kubernetes/ from values-production.yaml
                     (without it, a stale copy fails the check)
  --scrape FILE      a /metrics scrape of a running mcpd: every metric the
                     dashboard and the rules query must be there (`# TYPE`)
  --list-metrics     print the metric names the dashboard and rules query
Environment: MCPD_BIN (default target/debug/mcpd, or $CARGO_TARGET_DIR/debug/mcpd).
"""

from __future__ import annotations

import argparse
import copy
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import traceback
from pathlib import Path

import yaml

import helm_python as helm
from kubernetes_validate import utils as kv

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "helm" / "mcpd"
DEPLOY = ROOT / "deploy"
MANIFESTS = DEPLOY / "kubernetes"
RULES = DEPLOY / "prometheus" / "mcpd-rules.yaml"
RULES_TEST = DEPLOY / "prometheus" / "mcpd-rules.test.yaml"
DASHBOARD = DEPLOY / "grafana" / "mcpd-dashboard.json"
RELEASE = "mcpd"
NAMESPACE = "mcpd"
# The oldest Kubernetes the chart supports, and the newest the validator knows.
KUBE_MIN = "1.30.0"
CRD_KINDS = {"ServiceMonitor", "PrometheusRule", "HTTPRoute"}
# Sections the chart writes that mcpd is gaining; a check-config failure
# naming one of them is reported as such.
NEW_SECTIONS = ("auth", "tls", "rate_limit", "tracing", "skills", "policy")
MANIFEST_HEADER = (
    "# Generated from helm/mcpd with values-production.yaml (release {release}, namespace {ns})\n"
    "# by scripts/check-deploy.sh --write-manifests. Do not edit: change the chart\n"
    "# or the values and re-run it.\n"
)

# [auth] values that pass the chart's checks, for sets that need auth on.
AUTH = {"enabled": True, "resource": "https://mcp.example.com/mcp", "issuer": "https://auth.example.com",
        "authorizationServers": ["https://auth.example.com"],
        "jwksUrl": "https://auth.example.com/.well-known/jwks.json"}
# What check-config's stand-in for a mounted policy ConfigMap holds (mcpd
# refuses a policy directory without a .cedar file).
PLACEHOLDER_POLICY = '@id("placeholder")\npermit(principal, action == Mcp::Action::"resources/read", resource);\n'
# Where each upstreamSecrets Secret is mounted, as <dir>/<name>.
UPSTREAM_SECRETS_DIR = "/etc/mcpd/secrets"

# Cached: every validate() call would otherwise re-read the definitions.
kv.schema_contents = functools.lru_cache(maxsize=None)(kv.schema_contents)


class Fail(Exception):
    """A check's failure, with the reason."""


def need(cond, reason):
    if not cond:
        raise Fail(reason)


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def run(self, name, fn, *args):
        try:
            fn(*args)
        except Fail as e:
            self.fail(name, str(e))
        except Exception as e:  # a bug in the check or an unexpected input
            here = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == __file__]
            where = f" (check_deploy.py:{here[-1].lineno})" if here else ""
            self.fail(name, f"{type(e).__name__}: {e}{where}")
        else:
            self.ok(name)

    def ok(self, name):
        self.passed += 1
        print(f"PASS {name}", flush=True)

    def fail(self, name, reason):
        self.failed += 1
        reason = " ".join(str(reason).split())
        print(f"FAIL {name}: {reason}", flush=True)


# ---------------------------------------------------------------- rendering


def load_values(*files, **overrides):
    values = {}
    for f in files:
        values = deep_merge(values, yaml.safe_load((CHART / f).read_text()) or {})
    return deep_merge(values, overrides.get("set", {}))


def deep_merge(a, b):
    out = copy.deepcopy(a)
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


@functools.lru_cache(maxsize=1)
def chart():
    return helm.Chart.load(str(CHART))


def render(values):
    """Template path -> rendered text (NOTES.txt included)."""
    return chart().render(values, name=RELEASE, namespace=NAMESPACE)


def objects(rendered):
    """(template path, object) for every Kubernetes object rendered."""
    out = []
    for path, text in sorted(rendered.items()):
        if not path.endswith((".yaml", ".yml")):
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                out.append((path, doc))
    return out


def find(objs, kind, name=None):
    return [o for _, o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def one(objs, kind, name=None):
    found = find(objs, kind, name)
    need(len(found) == 1, f"expected one {kind}{' ' + name if name else ''}, found {len(found)}")
    return found[0]


def pod_spec(obj):
    return obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"]


def is_hook(obj):
    return "helm.sh/hook" in (obj["metadata"].get("annotations") or {})


def mcpd_container(deploy):
    cs = [c for c in pod_spec(deploy)["containers"] if c["name"] == "mcpd"]
    need(len(cs) == 1, "the Deployment has no container named mcpd")
    return cs[0]


def container_env(container, placeholders=True):
    """The container's environment as Kubernetes builds it: $(VAR) expanded,
    Secret references replaced by placeholders of the right shape."""
    env = {}
    for e in container.get("env", []):
        name = e["name"]
        if "value" in e:
            env[name] = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                               lambda m: env.get(m.group(1), m.group(0)), e["value"])
        elif "secretKeyRef" in e.get("valueFrom", {}):
            env[name] = secret_placeholder(name, e["valueFrom"]["secretKeyRef"]["key"])
        else:
            env[name] = "placeholder"
    return env


def secret_placeholder(var, key):
    if var == "MCPD_STORE_REDIS_URL":
        return "redis://:placeholder@redis.placeholder:6379/0"
    if var == "MCPD_STATELESS_STATE_KEYS":
        return "k1:" + "A" * 43 + "="
    return "placeholder-" + re.sub(r"[^A-Za-z0-9]", "", key)


def mcpd_config(objs):
    """(toml text, parsed config with MCPD_* env overrides) of the release."""
    deploy = one(objs, "Deployment")
    c = mcpd_container(deploy)
    args = c.get("args", [])
    need("--config" in args, "mcpd is not started with --config")
    path = args[args.index("--config") + 1]
    mount = [m for m in c.get("volumeMounts", []) if m["mountPath"] == path]
    need(mount, f"--config {path} is not a mounted file")
    vol = [v for v in pod_spec(deploy)["volumes"] if v["name"] == mount[0]["name"]]
    need(vol and "configMap" in vol[0], f"{path} does not come from a ConfigMap")
    cm = one(objs, "ConfigMap", vol[0]["configMap"]["name"])
    key = mount[0].get("subPath", "mcpd.toml")
    need(key in cm.get("data", {}), f"ConfigMap {cm['metadata']['name']} has no key {key}")
    text = cm["data"][key]
    cfg = tomllib.loads(text)
    for var, value in container_env(c).items():
        m = re.fullmatch(r"MCPD_(SERVER|ADMIN|STORE)_(\w+)", var)
        if m:
            cfg.setdefault(m.group(1).lower(), {})[m.group(2).lower()] = value
    return text, cfg


def port_of(addr, key):
    m = re.fullmatch(r"(.+):(\d+)", addr or "")
    need(m, f"{key} {addr!r} is not host:port")
    return m.group(1), int(m.group(2))


def resolve(container, port):
    """A probe/Service port (name or number) -> container port number."""
    if isinstance(port, int):
        return port
    for p in container.get("ports", []):
        if p.get("name") == port:
            return p["containerPort"]
    raise Fail(f"container {container['name']} has no port named {port!r}")


def labels_match(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())


# ---------------------------------------------------------------- scenarios


def scenarios():
    """Name -> values. Every example values file, the defaults, two sets
    that reach the templates' other branches, the defaults with the chart's
    Ingress (nginx, HAProxy), with skills from each kind of source, with
    Cedar policies from a ConfigMap (reloaded, and loaded once), and with
    gateway upstreams whose credentials come from mounted Secrets and from
    the environment."""
    return {
        "default": {},
        "dev": load_values("values-dev.yaml"),
        "production": load_values("values-production.yaml"),
        # Scale-out with the bundled Redis (password from a Secret), static
        # JWKS keys from a Secret, Gateway API, NetworkPolicy, PDB.
        "bundled-redis": {
            "replicaCount": 2,
            "redis": {"bundled": {"enabled": True, "persistence": {"enabled": True, "size": "2Gi"}},
                      "existingSecret": "mcpd-redis", "existingSecretPasswordKey": "password"},
            "mcpd": {"stateKeys": {"existingSecret": "mcpd-state-keys"}},
            "auth": {"enabled": True, "jwksSecret": {"name": "mcpd-jwks"}, "issuer": "https://auth.example.com",
                     "authorizationServers": ["https://auth.example.com"]},
            "httpRoute": {"enabled": True, "hostnames": ["mcp.example.com"],
                          "parentRefs": [{"name": "public", "namespace": "gateway", "sectionName": "https"}]},
            "networkPolicy": {"enabled": True},
            "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
            "metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": False},
                        "grafanaDashboard": {"enabled": True}},
        },
        # mcpd terminating TLS behind Traefik, the Redis URL in a Secret,
        # HPA on memory, rate limits, opaque tokens introspected (client
        # secret from a Secret) and DPoP required.
        "mcpd-tls": {
            "tls": {"enabled": True, "existingSecret": "mcpd-tls"},
            "auth": {"enabled": True, "issuer": "https://auth.example.com",
                     "authorizationServers": ["https://auth.example.com"], "dpop": "required",
                     "introspection": {"url": "https://auth.example.com/introspect", "clientId": "mcpd",
                                       "existingSecret": "mcpd-introspection"}},
            "ingress": {"enabled": True, "className": "traefik", "controller": "traefik",
                        "tls": [{"secretName": "mcp-tls", "hosts": ["mcp.example.com"]}]},
            "redis": {"existingSecret": "mcpd-redis", "existingSecretUrlKey": "url", "cluster": True},
            "mcpd": {"stateKeys": {"existingSecret": "mcpd-state-keys"}, "port": 8443, "adminPort": 9464},
            "autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 4,
                            "targetCPUUtilizationPercentage": None, "targetMemoryUtilizationPercentage": 80},
            "rateLimit": {"enabled": True, "requestsPerSecond": 5, "requestBurst": 10},
            "service": {"type": "LoadBalancer", "port": 443},
        },
        # The defaults with the chart's Ingress turned on (ingress-nginx):
        # anonymous clients must be told apart by the header it overwrites.
        "default-ingress": {"ingress": {"enabled": True}},
        # The HAProxy Ingress, which sets that header only when told to.
        "ingress-haproxy": {"ingress": {"enabled": True, "className": "haproxy", "controller": "haproxy"}},
        # Skills from a ConfigMap, its flat keys mapped into skill folders
        # (a nested skill path too), reloaded every 30 s.
        "skills-configmap": {"skills": {"enabled": True, "reloadSecs": 30, "configMap": {
            "name": "mcpd-skills", "items": [
                {"key": "pdf.SKILL.md", "path": "pdf/SKILL.md"},
                {"key": "pdf.forms.md", "path": "pdf/references/FORMS.md"},
                {"key": "refunds.SKILL.md", "path": "acme/billing/refunds/SKILL.md"}]}}},
        # Skills from any other volume (a PVC holding the whole tree), loaded once.
        "skills-volume": {"skills": {"enabled": True, "reloadSecs": 0,
                                     "volume": {"persistentVolumeClaim": {"claimName": "mcpd-skills"}}}},
        # Cedar policies from a ConfigMap, reloaded every 30 s, with tenants
        # told to upstreams in a header of our own.
        "policy-configmap": {"auth": dict(AUTH, tenantClaim="org_id", tenantHeader="X-Tenant"),
                             "policy": {"enabled": True, "reloadSecs": 30, "configMap": {"name": "mcpd-policies"}}},
        # Loaded once, at start; tenants without the header.
        "policy-load-once": {"auth": dict(AUTH, tenantClaim="tid", tenantHeader=""),
                             "policy": {"enabled": True, "reloadSecs": 0, "configMap": {"name": "mcpd-policies"}}},
        # [[upstream]] from mcpd.config, their [upstream.credentials] from
        # two mounted Secrets (a client secret, a whole header value) and
        # from a variable set from a third Secret through extraEnv.
        "upstream-credentials": {
            "upstreamSecrets": ["crm", "billing"],
            "mcpd": {"config": {"upstream": [
                {"id": "crm", "url": "https://crm.internal.example/mcp", "required": True,
                 "credentials": {"type": "client_credentials", "client_id": "mcpd-gateway", "scope": "crm:read",
                                 "client_secret_file": f"{UPSTREAM_SECRETS_DIR}/crm/client_secret"}},
                {"id": "billing", "url": "https://billing.internal.example/mcp", "headers": {"X-Caller": "mcpd"},
                 "credentials": {"type": "static", "value_file": f"{UPSTREAM_SECRETS_DIR}/billing/token"}},
                {"id": "search", "url": "https://search.internal.example/mcp", "protocol": "auto",
                 "credentials": {"type": "client_credentials", "client_id": "mcpd-gateway",
                                 "client_secret_env": "SEARCH_CLIENT_SECRET"}},
            ]}},
            "extraEnv": [{"name": "SEARCH_CLIENT_SECRET",
                          "valueFrom": {"secretKeyRef": {"name": "search", "key": "client_secret"}}}],
        },
    }


# ---------------------------------------------------------------- per-scenario checks


def check_lint(values):
    report = helm.lint(str(CHART), values, strict=True, namespace=NAMESPACE, kube_version="v" + KUBE_MIN)
    problems = [f"{m['path']}: {m['error'].strip()}" for m in report["messages"] if m["severity"] >= 2]
    problems += [e.strip() for e in report.get("errors", []) if e.strip() and not any(e.strip() in p for p in problems)]
    need(not problems, "; ".join(problems))


def check_kube_validate(objs):
    errors = []
    versions = sorted({KUBE_MIN, kv.latest_version()})
    for path, o in objs:
        for version in versions:
            try:
                kv.validate(o, version, strict=True)
            except kv.SchemaNotFoundError:
                if o["kind"] not in CRD_KINDS:
                    errors.append(f"{path}: no schema for {o['kind']} {o['apiVersion']} in Kubernetes {version}")
            except kv.ValidationError as e:
                where = ".".join(str(p) for p in e.path)
                errors.append(f"{path} {o['kind']}/{o['metadata']['name']} (k8s {version}) {where}: {e.message}")
    need(not errors, "; ".join(errors[:5]))


def check_crds(objs):
    """CRD kinds have no schema in kubernetes-validate: check what we rely on."""
    for o in find(objs, "ServiceMonitor"):
        need(o["apiVersion"] == "monitoring.coreos.com/v1", "ServiceMonitor apiVersion")
        spec = o["spec"]
        svcs = [s for s in find(objs, "Service") if labels_match(spec["selector"]["matchLabels"], s["metadata"].get("labels", {}))]
        need(len(svcs) == 1, f"ServiceMonitor selects {len(svcs)} Services (want the metrics Service only)")
        svc = svcs[0]
        need(spec.get("namespaceSelector", {}).get("matchNames") == [NAMESPACE], "ServiceMonitor namespaceSelector")
        need(spec.get("jobLabel") and svc["metadata"]["labels"].get(spec["jobLabel"]) == "mcpd",
             "ServiceMonitor jobLabel must give job=\"mcpd\" (the rules and dashboard select it)")
        names = {p["name"] for p in svc["spec"]["ports"]}
        for ep in spec["endpoints"]:
            need(ep["port"] in names, f"ServiceMonitor endpoint port {ep['port']!r} not in Service {svc['metadata']['name']}")
            need(ep.get("path") == "/metrics", "ServiceMonitor path must be /metrics")
            for k in ("interval", "scrapeTimeout"):
                need(re.fullmatch(r"(\d+(ms|s|m|h))+", ep.get(k, "30s")), f"ServiceMonitor {k} is not a duration")
    for o in find(objs, "PrometheusRule"):
        need(o["apiVersion"] == "monitoring.coreos.com/v1", "PrometheusRule apiVersion")
        want = yaml.safe_load(RULES.read_text())["groups"]
        need(o["spec"]["groups"] == want, "PrometheusRule groups differ from deploy/prometheus/mcpd-rules.yaml")
    for o in find(objs, "HTTPRoute"):
        need(o["apiVersion"] == "gateway.networking.k8s.io/v1", "HTTPRoute apiVersion")
        spec = o["spec"]
        need(spec.get("parentRefs") and all("name" in p for p in spec["parentRefs"]), "HTTPRoute needs parentRefs with names")
        svc = one(objs, "Service", spec["rules"][0]["backendRefs"][0]["name"])
        for rule in spec["rules"]:
            for ref in rule["backendRefs"]:
                need(ref["name"] == svc["metadata"]["name"] and ref["port"] in [p["port"] for p in svc["spec"]["ports"]],
                     f"HTTPRoute backendRef {ref} matches no Service port")
            for k, v in rule.get("timeouts", {}).items():
                need(k in ("request", "backendRequest") and re.fullmatch(r"(\d+(ms|s|m|h))+", v), f"HTTPRoute timeouts.{k}={v!r}")


def check_ports_and_probes(objs):
    _, cfg = mcpd_config(objs)
    deploy = one(objs, "Deployment")
    c = mcpd_container(deploy)
    host, listen = port_of(cfg.get("server", {}).get("listen"), "server.listen")
    need(host in ("0.0.0.0", "[::]", "::"), f"server.listen binds {host}: unreachable from other pods (use 0.0.0.0)")
    admin = cfg.get("admin", {}).get("listen")
    need(admin, "admin.listen is not set: no /metrics")
    ahost, aport = port_of(admin, "admin.listen")
    need(ahost in ("0.0.0.0", "[::]", "::"), f"admin.listen binds {ahost}")
    need(resolve(c, "http") == listen, f"container port http={resolve(c, 'http')} but server.listen port is {listen}")
    need(resolve(c, "metrics") == aport, f"container port metrics={resolve(c, 'metrics')} but admin.listen port is {aport}")
    tls = bool(cfg.get("tls", {}).get("cert_file"))
    for kind, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        probe = c.get(kind)
        need(probe and "httpGet" in probe, f"no {kind} with httpGet")
        g = probe["httpGet"]
        need(g["path"] == path, f"{kind} path {g['path']!r}, want {path}")
        p = resolve(c, g["port"])
        need(p in (listen, aport), f"{kind} port {p} is neither server.listen ({listen}) nor admin.listen ({aport})")
        want_scheme = "HTTPS" if tls and p == listen else "HTTP"
        need(g.get("scheme", "HTTP") == want_scheme, f"{kind} scheme {g.get('scheme', 'HTTP')}, want {want_scheme} ([tls] {'on' if tls else 'off'})")
    pod_labels = deploy["spec"]["template"]["metadata"]["labels"]
    need(labels_match(deploy["spec"]["selector"]["matchLabels"], pod_labels), "Deployment selector does not match its pod labels")
    services = [s for s in find(objs, "Service") if labels_match(s["spec"]["selector"], pod_labels)]
    need(services, "no Service selects mcpd's pods")
    main = one(objs, "Service", deploy["metadata"]["name"])
    for s in services:
        for p in s["spec"]["ports"]:
            target = resolve(c, p.get("targetPort", p["port"]))
            want = aport if s is not main else listen
            need(target == want, f"Service {s['metadata']['name']} port {p['name']} -> {target}, want {want}")
    need(all(resolve(c, p["targetPort"]) != aport for p in main["spec"]["ports"]), "the main Service exposes the admin port")
    need(any(resolve(c, p["targetPort"]) == aport for s in services for p in s["spec"]["ports"]), "no Service reaches the admin port")
    for ing in find(objs, "Ingress"):
        for rule in ing["spec"]["rules"]:
            for p in rule["http"]["paths"]:
                b = p["backend"]["service"]
                need(b["name"] == main["metadata"]["name"], f"Ingress backend {b['name']} is not the main Service")
                svc_port = [sp for sp in main["spec"]["ports"] if sp.get("name") == b["port"].get("name") or sp["port"] == b["port"].get("number")]
                need(svc_port, f"Ingress backend port {b['port']} not on Service {b['name']}")
    for np in find(objs, "NetworkPolicy"):
        if labels_match(np["spec"]["podSelector"]["matchLabels"], pod_labels):
            for rule in np["spec"].get("ingress", []):
                for p in rule.get("ports", []):
                    resolve(c, p["port"])
    # The bundled Redis: mcpd's URL names its Service and port.
    for sts in find(objs, "StatefulSet"):
        rc = pod_spec(sts)["containers"][0]
        rsvc = [s for s in find(objs, "Service") if labels_match(s["spec"]["selector"], sts["spec"]["template"]["metadata"]["labels"])]
        need(len(rsvc) == 1, "the bundled Redis needs exactly one Service")
        url = cfg["store"].get("redis_url", "")
        m = re.fullmatch(r"redis://(?:[^@]*@)?([^:/]+):(\d+)(/\d+)?", url)
        need(m, f"store.redis_url {url!r} is not a redis:// URL")
        need(m.group(1) == rsvc[0]["metadata"]["name"], f"store.redis_url host {m.group(1)} is not the Redis Service")
        sp = [p for p in rsvc[0]["spec"]["ports"] if p["port"] == int(m.group(2))]
        need(sp and resolve(rc, sp[0]["targetPort"]) == 6379, "store.redis_url port does not reach Redis' 6379")


def check_security(objs):
    for kind in ("Deployment", "StatefulSet", "Pod"):
        for o in find(objs, kind):
            spec = pod_spec(o)
            psc = spec.get("securityContext", {})
            where = f"{kind}/{o['metadata']['name']}"
            need(psc.get("runAsNonRoot") is True, f"{where}: pod runAsNonRoot")
            need(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"{where}: pod seccomp RuntimeDefault")
            need(spec.get("automountServiceAccountToken") is False, f"{where}: automountServiceAccountToken should be false")
            for c in spec["containers"] + spec.get("initContainers", []):
                sc = c.get("securityContext", {})
                need(sc.get("readOnlyRootFilesystem") is True, f"{where}/{c['name']}: readOnlyRootFilesystem")
                need(sc.get("allowPrivilegeEscalation") is False, f"{where}/{c['name']}: allowPrivilegeEscalation")
                need(sc.get("capabilities", {}).get("drop") == ["ALL"], f"{where}/{c['name']}: capabilities.drop [ALL]")
                need(sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True, f"{where}/{c['name']}: runAsNonRoot")
                need(sc.get("seccompProfile", psc.get("seccompProfile", {})).get("type") == "RuntimeDefault", f"{where}/{c['name']}: seccomp")
                need(c.get("resources", {}).get("requests"), f"{where}/{c['name']}: no resource requests")


def check_labels(objs):
    want = ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
            "app.kubernetes.io/managed-by", "app.kubernetes.io/component", "helm.sh/chart")
    for path, o in objs:
        labels = o["metadata"].get("labels", {})
        missing = [k for k in want if k not in labels]
        need(not missing, f"{o['kind']}/{o['metadata']['name']} lacks {', '.join(missing)}")
        need(o["metadata"].get("namespace") == NAMESPACE, f"{o['kind']}/{o['metadata']['name']} has no namespace")
        need(len(o["metadata"]["name"]) <= 63, f"{o['kind']} name {o['metadata']['name']} is longer than 63")
    deploy = one(objs, "Deployment")
    pod_labels = deploy["spec"]["template"]["metadata"]["labels"]
    for kind in ("PodDisruptionBudget",):
        for o in find(objs, kind):
            need(labels_match(o["spec"]["selector"]["matchLabels"], pod_labels), f"{kind} does not select mcpd's pods")
    for o in find(objs, "HorizontalPodAutoscaler"):
        ref = o["spec"]["scaleTargetRef"]
        need(ref["kind"] == "Deployment" and ref["name"] == deploy["metadata"]["name"], "HPA does not target the Deployment")
        need("replicas" not in deploy["spec"], "with an HPA the Deployment must not set replicas (every upgrade would reset it)")
    for tsc in pod_spec(deploy).get("topologySpreadConstraints", []):
        need(labels_match(tsc["labelSelector"]["matchLabels"], pod_labels), "a topology spread constraint does not select mcpd's pods")


def check_shutdown(objs):
    _, cfg = mcpd_config(objs)
    deploy = one(objs, "Deployment")
    c = mcpd_container(deploy)
    grace = int(cfg.get("server", {}).get("shutdown_grace_secs", 10))
    sleep = int(c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0))
    tgps = pod_spec(deploy).get("terminationGracePeriodSeconds", 30)
    need(tgps > sleep + grace, f"terminationGracePeriodSeconds {tgps} <= preStop sleep {sleep} + server.shutdown_grace_secs {grace}")
    need("exec" not in c.get("lifecycle", {}).get("preStop", {}), "preStop exec needs a shell the distroless image does not have")
    strat = deploy["spec"].get("strategy", {}).get("rollingUpdate", {})
    need(strat.get("maxUnavailable") in (0, "0", "0%"), "rolling updates should add pods before removing any (maxUnavailable 0)")


def check_config_accepted(objs, bin_path):
    """The ConfigMap's mcpd.toml, with the container's environment, passes
    `mcpd --check-config`. Files mcpd reads from mounted Secrets get
    placeholders of the right kind (a whole Secret, such as an
    upstreamSecrets one, a placeholder for each of its files mcpd.toml
    names: mcpd reads an [upstream.credentials] *_file at --check-config);
    other mounted directories (the skills and the policies, which mcpd
    requires to exist) get local stand-ins, with a placeholder file for each
    ConfigMap item, and a placeholder policy in a directory policy.files
    names (mcpd refuses one without a .cedar file)."""
    need(bin_path.is_file() and os.access(bin_path, os.X_OK), f"{bin_path} not found: build mcpd (cargo build -p mcpd-server) or set MCPD_BIN")
    text, cfg = mcpd_config(objs)
    policy_dirs = {f.rstrip("/") for f in cfg.get("policy", {}).get("files", [])}
    deploy = one(objs, "Deployment")
    c = mcpd_container(deploy)
    with tempfile.TemporaryDirectory(prefix="mcpd-check-") as tmp:
        tmp = Path(tmp)
        volumes = {v["name"]: v for v in pod_spec(deploy).get("volumes", [])}
        for m in c.get("volumeMounts", []):
            vol = volumes.get(m["name"], {})
            if m.get("subPath") or "emptyDir" in vol:
                continue  # mcpd.toml itself, scratch space
            local = tmp / m["mountPath"].strip("/")
            local.mkdir(parents=True, exist_ok=True)
            for item in vol.get("secret", {}).get("items", []):
                placeholder_file(local / item["path"], item["key"])
            if "secret" in vol and not vol["secret"].get("items"):
                for key in set(re.findall(r'"' + re.escape(m["mountPath"].rstrip("/")) + r'/([^"/]+)"', text)):
                    placeholder_file(local / key, key)
            for item in vol.get("configMap", {}).get("items", []):
                (local / item["path"]).parent.mkdir(parents=True, exist_ok=True)
                (local / item["path"]).write_text("placeholder\n")
            if m["mountPath"].rstrip("/") in policy_dirs:
                (local / "placeholder.cedar").write_text(PLACEHOLDER_POLICY)
            # The mount point as a whole string ("/etc/mcpd/skills") or a
            # path's prefix ("/etc/mcpd/tls/tls.crt").
            text = re.sub(r'(?<=")' + re.escape(m["mountPath"].rstrip("/")) + r'(?=[/"])', str(local), text)
        (tmp / "mcpd.toml").write_text(text)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp)}
        env.update(container_env(c))
        args = list(c.get("args", []))
        args[args.index("--config") + 1] = str(tmp / "mcpd.toml")
        p = subprocess.run([str(bin_path), *args, "--check-config"], env=env, capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
            msg = msg[-1] if msg else f"exit {p.returncode}"
            new = [s for s in NEW_SECTIONS if re.search(rf"\b{s}\b", msg) and f"[{s}]" in text]
            hint = f" (this mcpd does not accept the [{new[0]}] section yet)" if new and "unknown field" in msg else ""
            raise Fail(f"exit {p.returncode}: {msg}{hint}")
        # An MCPD_* variable the chart sets that mcpd would ignore.
        ignored = [l for l in p.stderr.splitlines() if "names no configuration key" in l]
        need(not ignored, f"the container sets a variable mcpd ignores: {ignored[:1]}")


def placeholder_file(path, key):
    """A stand-in for a Secret's file: a self-signed certificate and key, a
    JWKS, or text."""
    cache = Path(os.environ.get("MCPD_DEPLOY_CACHE", "/tmp/mcpd-deploy-cache")) / "placeholders"
    cache.mkdir(parents=True, exist_ok=True)
    crt, pem = cache / "tls.crt", cache / "tls.key"
    if key.endswith((".crt", ".key", ".json")) and not (crt.exists() and pem.exists()) and shutil.which("openssl"):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650",
                        "-subj", "/CN=mcpd.placeholder", "-keyout", str(pem), "-out", str(crt)],
                       capture_output=True, check=True)
    if key.endswith(".crt") and crt.exists():
        shutil.copy(crt, path)
    elif key.endswith(".key") and pem.exists():
        shutil.copy(pem, path)
    elif key.endswith(".json"):
        path.write_text(json.dumps({"keys": [jwk_from_pem(pem)]} if pem.exists() else {"keys": []}))
    else:
        path.write_text("placeholder\n")


def jwk_from_pem(pem):
    import base64
    out = subprocess.run(["openssl", "rsa", "-in", str(pem), "-noout", "-modulus"], capture_output=True, text=True, check=True).stdout
    n = bytes.fromhex(out.strip().split("=", 1)[1])
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    return {"kty": "RSA", "kid": "placeholder", "use": "sig", "alg": "RS256", "n": b64(n), "e": b64(b"\x01\x00\x01")}


def check_helm_test(objs, values):
    """The `helm test` Pod runs the release's image as `mcpd doctor` against
    the main Service's URL (scheme, port, path), holding a stream past the
    keep-alive, and names the public resource when auth is on."""
    pods = [o for o in find(objs, "Pod") if is_hook(o)]
    if not values.get("tests", {}).get("enabled", True):
        need(not pods, "tests.enabled is false, but a test Pod renders")
        return
    need(len(pods) == 1, f"expected one helm test Pod, found {len(pods)}")
    pod = pods[0]
    need(pod["metadata"]["annotations"]["helm.sh/hook"] == "test", "the test Pod's hook is not `test`")
    need(pod["spec"].get("restartPolicy") == "Never", "the test Pod must not restart (its exit status is the result)")
    deploy = one(objs, "Deployment")
    c = pod["spec"]["containers"][0]
    need(c["image"] == mcpd_container(deploy)["image"], f"the test Pod runs {c['image']}, not the release's image")
    args = c.get("args", [])
    need(args[:1] == ["doctor"], f"the test Pod does not run `mcpd doctor`: {args}")
    _, cfg = mcpd_config(objs)
    main = one(objs, "Service", deploy["metadata"]["name"])
    tls = bool(cfg.get("tls", {}).get("cert_file"))
    m = re.fullmatch(r"(https?)://([^:/]+):(\d+)(/.*)", args[1] if len(args) > 1 else "")
    need(m, f"the doctor's URL {args[1:2]} is not scheme://service:port/path")
    need(m.group(1) == ("https" if tls else "http"), f"the doctor uses {m.group(1)} but [tls] is {'on' if tls else 'off'}")
    need(m.group(2) == main["metadata"]["name"], f"the doctor asks {m.group(2)}, not the Service {main['metadata']['name']}")
    need(int(m.group(3)) in [p["port"] for p in main["spec"]["ports"]], f"port {m.group(3)} is not a port of the Service")
    need(m.group(4) == cfg.get("http", {}).get("path", "/mcp"), f"path {m.group(4)} is not http.path")
    hosts = cfg.get("http", {}).get("allowed_hosts", [])
    need(m.group(2) in hosts or "*" in hosts, f"{m.group(2)} is not in http.allowed_hosts: mcpd would answer the doctor 403")
    idle = int(args[args.index("--idle-secs") + 1]) if "--idle-secs" in args else 90
    keep_alive = int(cfg.get("http", {}).get("keep_alive_secs", 15))
    need(idle > keep_alive, f"--idle-secs {idle} does not outlast http.keep_alive_secs {keep_alive}")
    auth = cfg.get("auth", {})
    if auth.get("enabled"):
        need("--resource" in args and args[args.index("--resource") + 1] == auth.get("resource"),
             "with auth on, the doctor must be told the public resource (--resource = auth.resource)")


def check_skills(rendered, objs, values):
    """With skills.enabled, the one source the values name is mounted
    read-only (and whole: a subPath mount is never updated, so edits would
    not be reloaded) at the directory mcpd.toml's skills.dir names, with
    skills.reload_secs from skills.reloadSecs: a ConfigMap with its items,
    each file in a skill folder; any other volume source as given. Without
    it, nothing is mounted and no [skills] written, and NOTES warns when a
    source is set anyway."""
    s = deep_merge(chart_defaults(), values)["skills"]
    _, cfg = mcpd_config(objs)
    deploy = one(objs, "Deployment")
    c = mcpd_container(deploy)
    volumes = {v["name"]: v for v in pod_spec(deploy)["volumes"]}
    skills_dir = cfg.get("skills", {}).get("dir", "")
    notes = next((t for p, t in rendered.items() if p.endswith("NOTES.txt")), "")
    warned = "skills.enabled is false" in notes
    if not s["enabled"]:
        need(not skills_dir, f"skills.enabled is false, but mcpd.toml sets skills.dir = {skills_dir!r}")
        need("skills" not in volumes, "skills.enabled is false, but a skills volume is mounted")
        source = bool(s["configMap"]["name"] or s["volume"])
        need(warned == source, f"NOTES {'warns' if warned else 'does not warn'} that skills.enabled is false "
                               f"(a source is {'set' if source else 'not set'})")
        return
    need(not warned, "NOTES warns that skills.enabled is false, but it is true")
    need(skills_dir, "skills.enabled, but mcpd.toml sets no skills.dir")
    mounts = [m for m in c.get("volumeMounts", []) if m["mountPath"].rstrip("/") == skills_dir.rstrip("/")]
    need(len(mounts) == 1, f"skills.dir {skills_dir} is not where a volume is mounted (found {len(mounts)} mounts)")
    m = mounts[0]
    need(m.get("readOnly") is True, f"the skills volume is mounted at {skills_dir} without readOnly: true")
    need(not m.get("subPath"), "the skills volume is mounted with subPath: the kubelet never updates it, so edits would not be reloaded")
    need(cfg["skills"].get("reload_secs") == s["reloadSecs"],
         f"skills.reload_secs is {cfg['skills'].get('reload_secs')}, skills.reloadSecs {s['reloadSecs']}")
    vol = volumes.get(m["name"], {})
    if s["configMap"]["name"]:
        want = {"name": s["configMap"]["name"], "items": s["configMap"]["items"]}
        need(vol.get("configMap") == want, f"the skills volume is {vol}, not the ConfigMap {want}")
        top = [i["path"] for i in want["items"] if "/" not in i["path"].strip("/")]
        need(not top, f"ConfigMap items at the top of the directory, in no skill folder: {top}")
        need(any(i["path"].endswith("/SKILL.md") for i in want["items"]), "no item is a skill folder's SKILL.md")
    else:
        want = dict(s["volume"], name=m["name"])
        need(vol == want, f"the skills volume is {vol}, not skills.volume {want}")


def check_policy(rendered, objs, values):
    """With policy.enabled, the ConfigMap policy.configMap.name is mounted
    read-only and whole (no subPath, which the kubelet never updates; no
    items, which would hide a new key) at the one directory mcpd.toml's
    policy.files names, with policy.reload_secs from policy.reloadSecs, and
    [auth] is on. Without it, nothing is mounted and no [policy] is written
    (other than a user's own mcpd.config.policy), and NOTES warns when a
    ConfigMap is named anyway."""
    merged = deep_merge(chart_defaults(), values)
    p = merged["policy"]
    _, cfg = mcpd_config(objs)
    deploy = one(objs, "Deployment")
    c = mcpd_container(deploy)
    volumes = {v["name"]: v for v in pod_spec(deploy)["volumes"]}
    notes = next((t for path, t in rendered.items() if path.endswith("NOTES.txt")), "")
    warned = "policy.enabled is false" in notes
    if not p["enabled"]:
        own = (merged["mcpd"]["config"] or {}).get("policy", {})
        need(cfg.get("policy", {}) == own, f"policy.enabled is false, but mcpd.toml has [policy] {cfg.get('policy')}")
        named = [n for n, v in volumes.items() if n == "policies"
                 or (p["configMap"]["name"] and v.get("configMap", {}).get("name") == p["configMap"]["name"])]
        need(not named, f"policy.enabled is false, but the policy volume is mounted ({named})")
        need(warned == bool(p["configMap"]["name"]),
             f"NOTES {'warns' if warned else 'does not warn'} that policy.enabled is false "
             f"(policy.configMap.name is {'set' if p['configMap']['name'] else 'not set'})")
        return
    need(not warned, "NOTES warns that policy.enabled is false, but it is true")
    need(cfg.get("auth", {}).get("enabled") is True, "policy.enabled without [auth] enabled: mcpd refuses [policy]")
    files = cfg.get("policy", {}).get("files", [])
    need(len(files) == 1, f"policy.enabled, but mcpd.toml's policy.files is {files!r} (want the one mounted directory)")
    policy_dir = files[0].rstrip("/")
    mounts = [m for m in c.get("volumeMounts", []) if m["mountPath"].rstrip("/") == policy_dir]
    need(len(mounts) == 1, f"policy.files {files[0]} is not where a volume is mounted (found {len(mounts)} mounts)")
    m = mounts[0]
    need(m.get("readOnly") is True, f"the policy volume is mounted at {policy_dir} without readOnly: true")
    need(not m.get("subPath"), "the policy volume is mounted with subPath: the kubelet never updates it, so edits would not be reloaded")
    vol = volumes.get(m["name"], {})
    want = {"name": p["configMap"]["name"]}
    need(vol.get("configMap") == want, f"the policy volume is {vol}, not the whole ConfigMap {want}")
    need(cfg["policy"].get("reload_secs") == p["reloadSecs"],
         f"policy.reload_secs is {cfg['policy'].get('reload_secs')}, policy.reloadSecs {p['reloadSecs']}")
    need(f"ConfigMap {p['configMap']['name']}" in notes, "NOTES does not name the policy ConfigMap")


def check_upstream_credentials(rendered, objs, values):
    """mcpd.config.upstream is mcpd.toml's [[upstream]], unchanged. Each
    upstreamSecrets Secret is mounted once, whole (no items, which would
    hide a new key; no subPath) and read-only at /etc/mcpd/secrets/<name>;
    nothing else is mounted there, and nothing at all when the list is
    empty. Every [upstream.credentials] *_file under that directory is a key
    of a listed Secret (a file directly in its directory), and NOTES names
    the Secrets."""
    merged = deep_merge(chart_defaults(), values)
    names = merged["upstreamSecrets"]
    _, cfg = mcpd_config(objs)
    want_upstreams = (merged["mcpd"]["config"] or {}).get("upstream", [])
    need(cfg.get("upstream", []) == want_upstreams,
         f"mcpd.toml's [[upstream]] is {cfg.get('upstream')}, not mcpd.config.upstream {want_upstreams}")
    deploy = one(objs, "Deployment")
    c = mcpd_container(deploy)
    volumes = {v["name"]: v for v in pod_spec(deploy)["volumes"]}
    base = UPSTREAM_SECRETS_DIR
    mounts = [m for m in c.get("volumeMounts", []) if (m["mountPath"].rstrip("/") + "/").startswith(base + "/")]
    paths = sorted(m["mountPath"].rstrip("/") for m in mounts)
    want = sorted(f"{base}/{n}" for n in names)
    need(paths == want, f"mounted under {base}: {paths or 'nothing'}, want {want or 'nothing'} (upstreamSecrets {names})")
    need(len({m["name"] for m in mounts}) == len(mounts), f"two mounts under {base} share a volume: {[m['name'] for m in mounts]}")
    for m in mounts:
        name = m["mountPath"].rstrip("/").rsplit("/", 1)[1]
        need(m.get("readOnly") is True, f"the Secret {name} is mounted at {m['mountPath']} without readOnly: true")
        need(not m.get("subPath"), f"the Secret {name} is mounted with subPath (one file, never updated)")
        vol = volumes.get(m["name"], {})
        need(vol.get("secret") == {"secretName": name}, f"the volume at {m['mountPath']} is {vol}, not the whole Secret {name}")
    for u in cfg.get("upstream", []):
        for key, path in (u.get("credentials") or {}).items():
            if key.endswith("_file") and str(path).startswith(base + "/"):
                parts = path[len(base) + 1:].split("/")
                need(len(parts) == 2 and parts[0] in names and parts[1],
                     f"upstream {u.get('id')!r}: credentials.{key} {path} is not a key of a Secret in upstreamSecrets "
                     f"{names} (mcpd would stop at start: no such file)")
    notes = next((t for path, t in rendered.items() if path.endswith("NOTES.txt")), "")
    told = "Upstream credentials:" in notes
    need(told == bool(names) and all(n in notes for n in names),
         f"NOTES {'names' if told else 'does not name'} the upstream Secrets (upstreamSecrets {names})")


def check_tenant(objs, values):
    """With auth on, auth.tenantClaim becomes auth.tenant_claim (left out
    when empty: no tenants) and auth.tenantHeader auth.tenant_header ("" too:
    no header)."""
    a = deep_merge(chart_defaults(), values)["auth"]
    _, cfg = mcpd_config(objs)
    auth = cfg.get("auth", {})
    if not a["enabled"]:
        need(not {"tenant_claim", "tenant_header"} & set(auth), f"auth.enabled is false, but [auth] has {auth}")
        return
    need(auth.get("tenant_claim", "") == a["tenantClaim"],
         f"auth.tenantClaim {a['tenantClaim']!r} but mcpd.toml has tenant_claim {auth.get('tenant_claim')!r}")
    # mcpd's default is left out (the ConfigMap, and so the pods, unchanged).
    need(auth.get("tenant_header", "X-Mcpd-Tenant") == a["tenantHeader"]
         and ("tenant_header" in auth) == (a["tenantHeader"] != "X-Mcpd-Tenant"),
         f"auth.tenantHeader {a['tenantHeader']!r} but mcpd.toml has tenant_header {auth.get('tenant_header')!r}")


def check_ingress_sse(objs, values):
    ings = find(objs, "Ingress")
    if not ings:
        return
    ing = ings[0]
    ann = ing["metadata"].get("annotations", {})
    controller = values.get("ingress", {}).get("controller", "nginx")
    if controller == "nginx":
        need(ann.get("nginx.ingress.kubernetes.io/proxy-buffering") == "off", "nginx proxy-buffering must be off for SSE")
        for k in ("proxy-read-timeout", "proxy-send-timeout"):
            v = int(ann.get(f"nginx.ingress.kubernetes.io/{k}", "60"))
            need(v >= 3600, f"nginx {k} {v}s is shorter than an SSE stream / a long tool call")
    elif controller == "haproxy":
        need(ann.get("haproxy.org/timeout-server"), "haproxy timeout-server must be raised for SSE")
    _, cfg = mcpd_config(objs)
    hosts = cfg.get("http", {}).get("allowed_hosts", [])
    for rule in ing["spec"]["rules"]:
        need(rule["host"] in hosts or "*" in hosts, f"ingress host {rule['host']} is not in http.allowed_hosts (mcpd would answer 403)")
    for t in ing["spec"].get("tls", []):
        need(t.get("secretName"), "ingress TLS entry without secretName")


# The header each ingress controller the chart knows overwrites with the
# address it saw (so a client cannot choose it): ingress-nginx sets X-Real-IP
# to $remote_addr; Traefik deletes a client's X-Real-Ip (peers outside its
# trustedIPs) and sets the peer's; HAProxy sets none, so the chart has it set
# one (HAPROXY_SET_HEADER). mcpd reads the first address of the header named
# by rate_limit.client_ip_header.
INGRESS_CLIENT_IP_HEADER = {"nginx": "X-Real-IP", "traefik": "X-Real-IP", "haproxy": "X-Real-IP"}
HAPROXY_SET_HEADER = "haproxy.org/request-set-header"


@functools.lru_cache(maxsize=1)
def chart_defaults():
    return yaml.safe_load((CHART / "values.yaml").read_text())


def check_client_ip(rendered, objs, values):
    """Anonymous clients are told apart the way values.yaml says: behind the
    chart's Ingress by the header its controller overwrites (with "auto"),
    directly by the peer address, and NOTES warns when a proxy's clients
    would share one client's limits."""
    _, cfg = mcpd_config(objs)
    header = cfg.get("rate_limit", {}).get("client_ip_header", "")
    # None: left to the chart's default, which must get this right by itself.
    setting = values.get("rateLimit", {}).get("clientIpHeader")
    ings = find(objs, "Ingress")
    controller = deep_merge(chart_defaults(), values)["ingress"]["controller"]
    if setting not in (None, "auto"):
        need(header == setting, f"rateLimit.clientIpHeader {setting!r} but mcpd.toml has client_ip_header {header!r}")
    elif ings and controller in INGRESS_CLIENT_IP_HEADER:
        want = INGRESS_CLIENT_IP_HEADER[controller]
        need(header == want, f"behind the chart's {controller} Ingress mcpd must read {want} (the header the controller "
                             f"overwrites), but client_ip_header is {header!r}: every anonymous client would share one "
                             "client's limits")
    elif not ings:
        need(header == "", f"with no Ingress, mcpd must use the peer address, but client_ip_header is {header!r} "
                           "(a header nothing overwrites lets a client choose its own limits)")
    if ings and controller == "haproxy" and header:
        ann = ings[0]["metadata"].get("annotations", {})
        lines = [l.split(None, 1) for l in ann.get(HAPROXY_SET_HEADER, "").splitlines() if l.strip()]
        sets = {l[0].lower(): l[1] if len(l) > 1 else "" for l in lines}
        need(sets.get(header.lower()) in ("%[src]", '"%[src]"'),
             f"mcpd reads {header}, but the HAProxy Ingress does not overwrite it with %[src] ({HAPROXY_SET_HEADER}: "
             f"{ann.get(HAPROXY_SET_HEADER)!r})")
    notes = next((t for p, t in rendered.items() if p.endswith("NOTES.txt")), "")
    proxied = bool(ings or find(objs, "HTTPRoute"))
    warned = "rateLimit.clientIpHeader names no" in notes
    should = proxied and not header and not cfg.get("auth", {}).get("enabled")
    need(warned == should, f"NOTES {'warns' if warned else 'does not warn'} about clients sharing the proxy's limits "
                           f"(proxy: {proxied}, client_ip_header: {header!r})")


def rust_defaults(path, struct):
    """`field: literal` pairs of `impl Default for <struct>` in a Rust file."""
    text = (ROOT / path).read_text()
    m = re.search(rf"impl Default for {struct} \{{(.*?)\n\}}", text, re.S)
    need(m, f"no `impl Default for {struct}` in {path}")
    return {k: float(v.replace("_", "")) for k, v in re.findall(r"^\s*(\w+): ([\d_.]+),", m.group(1), re.M)}


def check_rate_limit_defaults():
    """What values.yaml says of the rate limits holds against mcpd's code:
    its numbers are mcpd's defaults (so enabled true or false behave alike),
    the default render leaves the limits to mcpd, 0 turns a rate off and a
    burst below 1 is derived, and the numbers quoted in the comments are
    mcpd's."""
    rl = rust_defaults("crates/mcpd/src/config/rate_limit.rs", "RateLimitSection")
    limits = rust_defaults("crates/mcpd-core/src/limits.rs", "Limits")
    keys = {"requestsPerSecond": "requests_per_second", "requestBurst": "request_burst",
            "sessionsPerMinute": "sessions_per_minute", "sessionBurst": "session_burst"}
    ours = chart_defaults()["rateLimit"]
    for value, key in keys.items():
        need(float(ours[value]) == rl[key], f"rateLimit.{value} is {ours[value]} but mcpd's default {key} is {rl[key]:g}")
    # Default render: no [rate_limit] limits written (mcpd's apply).
    _, cfg = mcpd_config(objects(render({})))
    need(not set(cfg.get("rate_limit", {})) & set(keys.values()),
         f"the default render writes rate limits: {cfg.get('rate_limit')}")
    # enabled with the chart's numbers writes mcpd's defaults.
    _, cfg = mcpd_config(objects(render({"rateLimit": {"enabled": True}})))
    for key in keys.values():
        need(float(cfg["rate_limit"][key]) == rl[key], f"rateLimit.enabled writes {key} = {cfg['rate_limit'][key]}, not mcpd's {rl[key]:g}")
    # "0 = no limit" and "below 1: derived", as the code decides them.
    code = (ROOT / "crates/mcpd/src/config/rate_limit.rs").read_text()
    for rate, burst in (("requests_per_second", "request_burst"), ("sessions_per_minute", "session_burst")):
        need(f"(self.{rate} > 0.0).then(" in code, f"{rate} 0 no longer means no limit in rate_limit.rs")
        need(f"self.{burst} >= 1.0" in code, f"{burst} below 1 is no longer derived in rate_limit.rs")
    # The numbers quoted in values.yaml's rateLimit comments.
    text = (CHART / "values.yaml").read_text()
    block = text[text.index("# Rate limits"):text.index("\nrateLimit:")]
    for n in (rl["sessions_per_minute"], rl["session_burst"], limits["max_sessions_per_client"]):
        need(f"{int(n):,}" in block, f"values.yaml's rateLimit comment does not quote mcpd's default {int(n):,}")


# ---------------------------------------------------------------- chart-wide checks


def expect_render_error(values, *needles):
    try:
        render(values)
    except (helm.HelmRenderError, helm.HelmValuesError) as e:
        msg = str(e)
        for n in needles:
            need(n.lower() in msg.lower(), f"the error does not say {n!r}: {msg.strip()[:200]}")
        return
    raise Fail(f"values {json.dumps(values)} were accepted")


@functools.lru_cache(maxsize=1)
def chart_without_schema():
    """The chart without values.schema.json: what the templates refuse on
    their own (helm install --skip-schema-validation)."""
    with tempfile.TemporaryDirectory(prefix="mcpd-chart-") as tmp:
        shutil.copytree(CHART, Path(tmp) / "mcpd", ignore=shutil.ignore_patterns("values.schema.json"))
        return helm.Chart.load(str(Path(tmp) / "mcpd"))


def expect_template_refusal(values, *needles):
    """The templates themselves refuse values the schema refuses too."""
    try:
        chart_without_schema().render(values, name=RELEASE, namespace=NAMESPACE)
    except helm.HelmRenderError as e:
        msg = str(e)
        for n in needles:
            need(n.lower() in msg.lower(), f"the error does not say {n!r}: {msg.strip()[:300]}")
        return
    raise Fail(f"without the schema, the templates accepted {json.dumps(values)}")


def check_schema_rejects(values, *needles):
    try:
        chart().validate_schema(values)
    except helm.HelmValuesError as e:
        msg = str(e)
        for n in needles:
            need(n in msg, f"the message does not name {n!r}: {msg.strip()}")
    else:
        raise Fail(f"schema accepted {json.dumps(values)}")
    expect_render_error(values, *needles)


def values_doc():
    return yaml.compose((CHART / "values.yaml").read_text())


def value_paths(node=None, schema=None, prefix=""):
    """(dotted path, key node) for every chart-structured value in values.yaml:
    keys the schema lists as properties (children of free-form maps, such as
    resources or securityContext, are contents, not values)."""
    if node is None:
        node = values_doc()
        schema = json.loads((CHART / "values.schema.json").read_text())
    out = []
    if not isinstance(node, yaml.MappingNode):
        return out
    props = schema.get("properties")
    for k, v in node.value:
        path = f"{prefix}{k.value}"
        if props is None or k.value not in props:
            continue
        out.append((path, k))
        out += value_paths(v, props[k.value], path + ".")
    return out


def check_values_commented():
    lines = (CHART / "values.yaml").read_text().splitlines()
    schema = json.loads((CHART / "values.schema.json").read_text())
    doc = yaml.safe_load((CHART / "values.yaml").read_text())
    need(set(doc) <= set(schema["properties"]), f"values.yaml keys missing from the schema: {sorted(set(doc) - set(schema['properties']))}")
    bare = [p for p, k in value_paths() if not lines[k.start_mark.line - 1].strip().startswith("#")]
    need(not bare, f"values without a comment above them: {', '.join(bare)}")


def check_values_in_readme():
    readme = (CHART / "README.md").read_text()
    missing = [p for p, _ in value_paths() if f"`{p}`" not in readme]
    need(not missing, f"helm/mcpd/README.md does not list: {', '.join(missing)}")


def check_checksum_rolls():
    a = render({})
    b = render({"mcpd": {"config": {"limits": {"max_sessions": 123}}}})
    ann = lambda r: one(objects(r), "Deployment")["spec"]["template"]["metadata"]["annotations"].get("checksum/config")
    need(ann(a), "no checksum/config annotation on the pod template")
    need(ann(a) != ann(b), "changing mcpd.toml does not change the pod template (pods would not roll)")
    need(ann(a) == ann(render({})), "the checksum is not stable across renders")


def check_monitoring_toggles():
    names = lambda v: {o["kind"] for _, o in objects(render(v))}
    need(not names({}) & {"ServiceMonitor", "PrometheusRule"},
         "with enabled: auto and no monitoring.coreos.com/v1 API, no ServiceMonitor/PrometheusRule may render")
    on = {"metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}}}
    need({"ServiceMonitor", "PrometheusRule"} <= names(on), "enabled: true must render the ServiceMonitor and PrometheusRule")


def check_identical(a, b):
    need(a.read_bytes() == b.read_bytes(), f"{b.relative_to(ROOT)} differs from {a.relative_to(ROOT)}: copy it over")


def check_promtool(*args):
    need(shutil.which("promtool"), "promtool not found (apt-get install prometheus)")
    p = subprocess.run(["promtool", *args], capture_output=True, text=True, cwd=ROOT, timeout=60)
    need(p.returncode == 0, (p.stdout + p.stderr).strip()[-400:])


def dashboard_exprs(dash):
    exprs = []
    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                exprs.append(t["expr"])
            walk(p.get("panels", []))
    walk(dash["panels"])
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if v.get("type") == "query" and q:
            exprs.append(q)
    return exprs


def rule_exprs():
    return [r["expr"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def queried_metrics():
    """Metric family names the dashboard and rules query: a histogram's
    _bucket/_sum/_count series are named by their family (mcpd's counters end
    in _total, so nothing else ends that way)."""
    dash = json.loads(DASHBOARD.read_text())
    names = set()
    for e in dashboard_exprs(dash) + rule_exprs():
        for m in re.findall(r"\b((?:mcpd|mcp_server|mcp_client|process)_[a-z0-9_]+)\b", e):
            names.add(re.sub(r"_(bucket|sum|count)$", "", m))
    return sorted(names)


def check_dashboard():
    dash = json.loads(DASHBOARD.read_text())
    need(dash.get("uid") and dash.get("title"), "dashboard needs uid and title")
    ids, n = set(), 0
    def walk(panels):
        nonlocal n
        for p in panels:
            need(p["id"] not in ids, f"duplicate panel id {p['id']}")
            ids.add(p["id"])
            if p["type"] != "row":
                n += 1
                need(p.get("targets"), f"panel {p['title']!r} has no queries")
                for t in p["targets"]:
                    need(t.get("expr") and t.get("datasource", {}).get("uid") == "${datasource}", f"panel {p['title']!r}: query without expr or datasource variable")
                    need(t["expr"].count("(") == t["expr"].count(")"), f"panel {p['title']!r}: unbalanced parentheses")
            walk(p.get("panels", []))
    walk(dash["panels"])
    vars_ = {v["name"] for v in dash["templating"]["list"]}
    need({"datasource", "job", "namespace", "pod"} <= vars_, f"dashboard variables: {sorted(vars_)}")
    text = json.dumps(dash)
    for want in ("mcpd_sessions_active", "mcp_server_operation_duration_seconds_bucket", "mcpd_sse_streams_open",
                 "mcpd_store_up", "mcpd_auth_rejections_total", "mcpd_http_requests_total"):
        need(want in text, f"the dashboard does not show {want}")
    need(n >= 10, f"only {n} panels")


def registered_metrics():
    """Metric names registered in mcpd's source (string literals)."""
    names = set()
    for f in (ROOT / "crates").glob("*/src/**/*.rs"):
        names |= set(re.findall(r'"((?:mcpd|mcp_server|mcp_client|process)_[a-z0-9_]+)"', f.read_text(errors="replace")))
    return names


def check_metrics_registered():
    known = registered_metrics()
    missing = [m for m in queried_metrics() if m not in known]
    need(not missing, f"queried but registered nowhere in crates/: {', '.join(missing)}")


def check_scrape(path):
    text = Path(path).read_text()
    families = set(re.findall(r"^# TYPE (\S+) \S+", text, re.M))
    missing = [m for m in queried_metrics() if m not in families]
    need(not missing, f"not in the scrape ({len(families)} families): {', '.join(missing)}")


def check_dockerfile():
    df = (DEPLOY / "Dockerfile").read_text()
    froms = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", df, re.M | re.I)
    need(len(froms) >= 2, "the Dockerfile must be multi-stage")
    need(re.match(r"(docker\.io/(library/)?)?rust:1\.95", froms[0][0]), f"build stage FROM {froms[0][0]}, want rust:1.95")
    need(froms[-1][0].startswith("gcr.io/distroless/cc-debian12") and "nonroot" in froms[-1][0], f"runtime FROM {froms[-1][0]}")
    need("bookworm" in froms[0][0], "the build stage must be Debian 12 (bookworm) like distroless/cc-debian12, or the binary may need a newer glibc")
    need(re.search(r"cargo build --release -p mcpd-server --locked", df), "no `cargo build --release -p mcpd-server --locked`")
    need(re.search(r"^USER\s+(nonroot|65532)", df, re.M), "no USER nonroot")
    need(re.search(r'^ENTRYPOINT\s+\["/usr/local/bin/mcpd"\]', df, re.M), "ENTRYPOINT must be the mcpd binary (exec form)")
    ignore = [l.strip() for l in (ROOT / ".dockerignore").read_text().splitlines() if l.strip() and not l.startswith("#")]
    for pat in ("target", ".git"):
        need(any(l.strip("/") == pat for l in ignore), f".dockerignore does not exclude {pat}")
    for keep in ("Cargo.lock", "crates", "loadtest"):
        need(not any(l.strip("/") == keep for l in ignore), f".dockerignore excludes {keep}, which the build needs")


# ---------------------------------------------------------------- plain manifests


def manifest_files():
    """File name -> text of deploy/kubernetes/ as rendered from production values."""
    rendered = render(load_values("values-production.yaml"))
    out = {}
    for path, text in sorted(rendered.items()):
        if not path.endswith(".yaml"):
            continue
        docs = [d.strip("\n") for d in re.split(r"^---\s*$", text, flags=re.M)]
        docs = ["\n".join(l.rstrip() for l in d.splitlines()).strip("\n") for d in docs]
        docs = [d for d in docs if any(l.strip() and not l.lstrip().startswith("#") for l in d.splitlines())]
        if not docs:
            continue
        # Hooks (the `helm test` Pod) run under Helm only, not from plain manifests.
        docs = [d for d in docs if not is_hook(yaml.safe_load(d))]
        if not docs:
            continue
        kinds = {yaml.safe_load(d)["kind"] for d in docs}
        sub = "monitoring/" if kinds & {"ServiceMonitor", "PrometheusRule"} else ""
        name = sub + Path(path).name
        out[name] = MANIFEST_HEADER.format(release=RELEASE, ns=NAMESPACE) + "---\n" + "\n---\n".join(docs) + "\n"
    return out


def existing_manifests():
    return {str(p.relative_to(MANIFESTS)): p.read_text() for p in sorted(MANIFESTS.rglob("*.yaml"))}


def write_manifests():
    want = manifest_files()
    for name in existing_manifests():
        if name not in want:
            (MANIFESTS / name).unlink()
    for name, text in want.items():
        (MANIFESTS / name).parent.mkdir(parents=True, exist_ok=True)
        (MANIFESTS / name).write_text(text)


def check_manifests_current():
    want, have = manifest_files(), existing_manifests()
    stale = sorted(n for n in set(want) | set(have) if want.get(n) != have.get(n))
    need(not stale, f"deploy/kubernetes is stale ({', '.join(stale)}): run scripts/check-deploy.sh --write-manifests")


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write-manifests", action="store_true")
    ap.add_argument("--scrape", metavar="FILE")
    ap.add_argument("--list-metrics", action="store_true")
    args = ap.parse_args()
    if args.list_metrics:
        print("\n".join(queried_metrics()))
        return 0
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    bin_path = Path(os.environ.get("MCPD_BIN") or target / "debug" / "mcpd")
    if not bin_path.is_absolute():
        bin_path = (Path.cwd() / bin_path).resolve()
    r = Report()
    print(f"# chart {CHART.relative_to(ROOT)}, Helm {helm.helm_sdk_version()} (helm-python-sdk), "
          f"Kubernetes {KUBE_MIN} and {kv.latest_version()} schemas, mcpd {bin_path}", flush=True)

    r.run("chart.values-commented", check_values_commented)
    r.run("chart.values-in-readme", check_values_in_readme)
    r.run("chart.schema-accepts-defaults", lambda: chart().validate_schema({}))
    for name, values in scenarios().items():
        try:
            rendered = render(values)
            objs = objects(rendered)
        except Exception as e:
            r.fail(f"render[{name}]", e)
            continue
        r.ok(f"render[{name}]")
        r.run(f"lint[{name}]", check_lint, values)
        r.run(f"kube-validate[{name}]", check_kube_validate, objs)
        r.run(f"crd-fields[{name}]", check_crds, objs)
        r.run(f"ports-probes[{name}]", check_ports_and_probes, objs)
        r.run(f"security[{name}]", check_security, objs)
        r.run(f"labels[{name}]", check_labels, objs)
        r.run(f"shutdown[{name}]", check_shutdown, objs)
        r.run(f"ingress-sse[{name}]", check_ingress_sse, objs, values)
        r.run(f"client-ip[{name}]", check_client_ip, rendered, objs, values)
        r.run(f"helm-test[{name}]", check_helm_test, objs, values)
        r.run(f"skills[{name}]", check_skills, rendered, objs, values)
        r.run(f"policy[{name}]", check_policy, rendered, objs, values)
        r.run(f"tenant[{name}]", check_tenant, objs, values)
        r.run(f"upstream-credentials[{name}]", check_upstream_credentials, rendered, objs, values)
        r.run(f"check-config[{name}]", check_config_accepted, objs, bin_path)

    r.run("refuse.memory-store-replicas", expect_render_error, {"replicaCount": 3},
          "3 replicas with the in-memory store", "sessions and SSE event logs live inside one process")
    r.run("refuse.memory-store-autoscaling", expect_render_error, {"autoscaling": {"enabled": True}},
          "in-memory store", "Redis")
    r.run("refuse.replicas-without-state-keys", expect_render_error,
          {"replicaCount": 2, "redis": {"url": "redis://redis:6379"}}, "stateKeys.existingSecret")
    r.run("refuse.short-termination-grace", expect_render_error, {"terminationGracePeriodSeconds": 10},
          "must exceed lifecycle.preStopSleepSeconds + mcpd.shutdownGraceSeconds")
    r.run("refuse.auth-without-keys", expect_render_error, {"auth": {"enabled": True, "resource": "https://x/mcp"}},
          "auth.jwksUrl")
    r.run("refuse.introspection-without-secret", expect_render_error,
          {"auth": {"enabled": True, "resource": "https://x/mcp", "issuer": "https://idp",
                    "authorizationServers": ["https://idp"],
                    "introspection": {"url": "https://idp/introspect", "clientId": "mcpd"}}},
          "auth.introspection.existingSecret")
    r.run("refuse.auth-without-issuer", expect_render_error,
          {"auth": {"enabled": True, "resource": "https://x/mcp", "jwksUrl": "https://idp/jwks",
                    "authorizationServers": ["https://idp"]}}, "auth.issuer")
    r.run("refuse.listen-in-config", expect_render_error, {"mcpd": {"config": {"server": {"listen": "0.0.0.0:1"}}}},
          "mcpd.port")
    r.run("refuse.skills-without-source", expect_render_error, {"skills": {"enabled": True}},
          "skills.enabled needs the skill folders", "skills.configMap.name", "skills.volume")
    r.run("refuse.skills-both-sources", expect_render_error,
          {"skills": {"enabled": True, "volume": {"persistentVolumeClaim": {"claimName": "mcpd-skills"}},
                      "configMap": {"name": "mcpd-skills", "items": [{"key": "a", "path": "a/SKILL.md"}]}}},
          "skills.configMap or skills.volume, not both")
    r.run("refuse.skills-configmap-without-items", expect_render_error,
          {"skills": {"enabled": True, "configMap": {"name": "mcpd-skills"}}}, "skills.configMap.items is empty")
    r.run("refuse.skills-volume-with-name", expect_render_error,
          {"skills": {"enabled": True, "volume": {"name": "x", "emptyDir": {}}}}, "skills.volume is a volume source without a name")
    r.run("refuse.skills-dir-in-config", expect_render_error,
          {"skills": {"enabled": True, "volume": {"emptyDir": {}}}, "mcpd": {"config": {"skills": {"dir": "/srv/skills"}}}},
          "remove mcpd.config.skills.dir")
    r.run("refuse.policy-without-auth", expect_render_error,
          {"policy": {"enabled": True, "configMap": {"name": "mcpd-policies"}}},
          "policy.enabled needs auth.enabled", "mcpd refuses [policy] without [auth]")
    r.run("refuse.policy-without-configmap", expect_render_error, {"auth": AUTH, "policy": {"enabled": True}},
          "policy.enabled needs policy.configMap.name", "kubectl create configmap mcpd-policies --from-file=analysts.cedar")
    r.run("refuse.policy-files-in-config", expect_render_error,
          {"auth": AUTH, "policy": {"enabled": True, "configMap": {"name": "mcpd-policies"}},
           "mcpd": {"config": {"policy": {"files": ["/srv/policies"]}}}},
          "remove mcpd.config.policy.files")
    r.run("refuse.upstream-secret-bad-name", expect_template_refusal, {"upstreamSecrets": ["crm", "crm.eu"]},
          'upstreamSecrets[1] "crm.eu" cannot be mounted', "DNS-1123 label of at most 47 characters")
    r.run("refuse.upstream-secret-too-long", expect_template_refusal, {"upstreamSecrets": ["c" * 48]},
          "upstreamSecrets[0]", "at most 47 characters")
    r.run("refuse.upstream-secret-duplicate", expect_template_refusal, {"upstreamSecrets": ["crm", "billing", "crm"]},
          'upstreamSecrets lists "crm" twice')
    r.run("schema.upstream-secret-bad-name", check_schema_rejects, {"upstreamSecrets": ["CRM"]}, "/upstreamSecrets/0")
    r.run("schema.upstream-secret-duplicate", check_schema_rejects, {"upstreamSecrets": ["crm", "crm"]},
          "/upstreamSecrets")
    r.run("schema.upstream-without-id", check_schema_rejects,
          {"mcpd": {"config": {"upstream": [{"url": "https://crm.internal.example/mcp"}]}}}, "/mcpd/config/upstream/0")
    r.run("schema.policy-configmap-items", check_schema_rejects,
          {"policy": {"enabled": True, "configMap": {"name": "mcpd-policies", "items": [{"key": "a.cedar", "path": "a.cedar"}]}}},
          "/policy/configMap")
    r.run("schema.bad-tenant-header", check_schema_rejects, {"auth": {"tenantHeader": "X Tenant"}}, "/auth/tenantHeader")
    r.run("schema.skills-item-outside-folder", check_schema_rejects,
          {"skills": {"enabled": True, "configMap": {"name": "mcpd-skills", "items": [{"key": "a", "path": "SKILL.md"}]}}},
          "/skills/configMap/items/0/path")
    r.run("schema.replicaCount-string", check_schema_rejects, {"replicaCount": "three"}, "/replicaCount", "want integer")
    r.run("schema.unknown-key", check_schema_rejects, {"replicas": 3}, "replicas")
    r.run("schema.bad-toolset", check_schema_rejects, {"mcpd": {"toolset": "everything"}}, "/mcpd/toolset")
    r.run("schema.bad-port", check_schema_rejects, {"mcpd": {"port": 70000}}, "/mcpd/port")
    r.run("schema.bad-redis-url", check_schema_rejects, {"redis": {"url": "localhost:6379"}}, "/redis/url")
    r.run("schema.bad-serviceMonitor-toggle", check_schema_rejects, {"metrics": {"serviceMonitor": {"enabled": "yes"}}},
          "/metrics/serviceMonitor/enabled")
    r.run("chart.config-checksum-rolls-pods", check_checksum_rolls)
    r.run("chart.monitoring-toggles", check_monitoring_toggles)
    r.run("chart.rate-limit-defaults", check_rate_limit_defaults)

    r.run("rules.chart-copy-identical", check_identical, RULES, CHART / "files" / "mcpd-rules.yaml")
    r.run("dashboard.chart-copy-identical", check_identical, DASHBOARD, CHART / "files" / "mcpd-dashboard.json")
    r.run("rules.promtool-check", check_promtool, "check", "rules", str(RULES.relative_to(ROOT)))
    r.run("rules.promtool-test", check_promtool, "test", "rules", str(RULES_TEST.relative_to(ROOT)))
    r.run("dashboard.structure", check_dashboard)
    r.run("metrics.registered-in-source", check_metrics_registered)
    if args.scrape:
        r.run("metrics.in-scrape", check_scrape, args.scrape)
    r.run("docker.dockerfile", check_dockerfile)
    if args.write_manifests:
        r.run("manifests.written", write_manifests)
    r.run("manifests.up-to-date", check_manifests_current)
    print(f"deploy: {r.passed} passed, {r.failed} failed")
    return 0 if r.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
