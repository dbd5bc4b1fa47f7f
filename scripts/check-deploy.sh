#!/usr/bin/env bash
# Checks the Helm chart and the deploy assets (see scripts/check_deploy.py):
# lint, render and validate the chart with each example values file, check
# ports, probes, security settings and what the chart refuses, run the
# rendered mcpd.toml through `mcpd --check-config`, check the Prometheus rules
# (promtool) and the Grafana dashboard, and that deploy/kubernetes/ is up to
# date.
#
#   scripts/check-deploy.sh                    # check (exit 0 when all pass)
#   scripts/check-deploy.sh --write-manifests  # re-render deploy/kubernetes/, then check
#   scripts/check-deploy.sh --scrape FILE      # also: every queried metric is in a /metrics scrape
#   scripts/check-deploy.sh --list-metrics     # the metric names the dashboard and rules use
#
# Environment: MCPD_BIN (default: ${CARGO_TARGET_DIR:-target}/debug/mcpd),
# MCPD_DEPLOY_CACHE (default /tmp/mcpd-deploy-cache: the Python venv with the
# pins of helm/requirements-check.txt, rebuilt when they change).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${MCPD_DEPLOY_CACHE:-/tmp/mcpd-deploy-cache}
export MCPD_DEPLOY_CACHE=$cache
req=$root/helm/requirements-check.txt
venv=$cache/venv
stamp=$venv/.requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)

if [[ ! -x $venv/bin/python || ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    echo "check-deploy: installing $req into $venv" >&2
    rm -rf "$venv"
    mkdir -p "$cache"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$req" >&2
    echo "$want" >"$stamp"
fi

if [[ -n ${MCPD_BIN:-} && $MCPD_BIN != /* ]]; then
    MCPD_BIN=$PWD/$MCPD_BIN
    export MCPD_BIN
fi
cd "$root"
exec "$venv/bin/python" "$root/scripts/check_deploy.py" "$@"
