#!/usr/bin/env python3
"""A generated Claude Code personal state (~/.claude/state) and questions about it: the personal half of the mixed bench.

The user's own context comes first; documentation must not bury personal answers.
So the state talks on purpose about what the helm and traefik documentation talks about
(ingress, rate limits, chart versions, TLS, metrics environment variables, caching, commit
style): the documentation pages are realistic competitors. It holds every shape the product
reads: memory entries one per file and as a list, decisions.json (records without a "type"),
a nested kb.json, preferences, lessons, todos, notes with and without front matter, JSONL
session, CI and deploy logs, loop progress files, and one ~400 KB meeting transcript that
is close in theme to many questions but answers none of them (it competes).

Deterministic: dates are relative to the day it is generated ("3 days ago"), the transcript
comes from a seeded generator. The examples/state notes and decisions and personal_golden's
listed memory entries are reused (re-dated), not copied.

QUESTIONS: (style, question, file, needle). style "own" asks about the user's own context
("what did we decide…"), "neutral" asks it bare (an identifier, an error message). A
result answers when its file is `file` (relative to the state root) and its text holds
`needle`. They were written from this content, before any search was run.

    .venv/bin/python bench/mixed_state.py DIR     # write the state into DIR and check the questions against it
"""

import argparse
import datetime as dt
import json
import random
import re
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "bench"))

from personal_golden import LISTED, entry  # noqa: E402

EXAMPLES = PROJECT / "examples" / "state"
TRANSCRIPT = "meetings/platform-offsite-transcript.md"
TRANSCRIPT_BYTES = 400_000
SEED = 25

# (id, loopId, iteration, days ago, type, lesson, context, tags, confidence): memory/entries/<id>.json
MEMORY = [
    ("m-101", "l-ingress", 1, 140, "lesson_learned",
     "Traefik ignored the IngressRoutes in the payments namespace until providers.kubernetesCRD.allowCrossNamespace was set to true",
     "charts/traefik/values-prod.yaml", ["traefik", "ingress", "namespaces"], 0.9),
    ("m-102", "l-ingress", 2, 138, "failure_pattern",
     "Client IPs in the access logs were the load balancer's until entryPoints.websecure.forwardedHeaders.trustedIPs listed the LB subnet",
     "charts/traefik/values-prod.yaml", ["traefik", "logging", "load-balancer"], 0.85),
    ("m-103", "l-ingress", 4, 131, "success_pattern",
     "Serving the Traefik dashboard only on the internal traefik entrypoint kept it off the public IP without adding basic auth",
     "charts/traefik/values-prod.yaml", ["traefik", "dashboard"], 0.8),
    ("m-104", "l-tls", 1, 95, "failure_pattern",
     "The wildcard certificate mounted with subPath never reloaded after cert-manager renewed it; mount the whole secret as a folder",
     "charts/traefik/values-prod.yaml", ["tls", "cert-manager", "traefik"], 0.9),
    ("m-105", "l-tls", 2, 94, "lesson_learned",
     "Point new ClusterIssuers at the Let's Encrypt staging endpoint first: five failed DNS-01 orders in an hour "
     "locked us out of production",
     "clusters/prod/cert-manager/issuers.yaml", ["tls", "cert-manager", "acme"], 0.85),
    ("m-106", "l-helm-upgrade", 1, 60, "failure_pattern",
     "helm upgrade --atomic rolled back before we could read the crashing pod's logs; debug with --wait --timeout 15m and no --atomic",
     "ci/deploy.sh", ["helm", "deploy", "debugging"], 0.9),
    ("m-107", "l-helm-upgrade", 2, 59, "lesson_learned",
     "Release history secrets (sh.helm.release.v1) piled up to 240 per release on staging; HELM_MAX_HISTORY=10 in CI keeps ten revisions",
     "ci/deploy.sh", ["helm", "etcd", "ci"], 0.85),
    ("m-108", "l-helm-upgrade", 3, 57, "failure_pattern",
     "A cancelled CI job left platform-api in pending-upgrade; a rollback to the last deployed revision cleared the lock",
     "ci/deploy.sh", ["helm", "ci", "incident"], 0.8),
    ("m-109", "l-ci-cache", 1, 33, "lesson_learned",
     "buildx keeps the whole layer cache between runners only with cache-to type=registry,mode=max; mode=min dropped the builder stage",
     ".github/workflows/build.yml", ["docker", "ci", "cache"], 0.9),
    ("m-110", "l-ci-cache", 2, 30, "success_pattern",
     "Caching the Helm repository cache keyed on Chart.lock cut helm dependency build from 70 s to 4 s",
     ".github/workflows/charts.yml", ["helm", "ci", "cache"], 0.85),
    ("m-111", "l-ci-cache", 3, 6, "lesson_learned",
     "The pip cache key must include the Python minor version: 3.12 runners restored 3.11 wheels and pytest died importing _ssl",
     ".github/workflows/test.yml", ["python", "ci", "cache"], 0.9),
    ("m-112", "l-metrics", 1, 45, "failure_pattern",
     "Prometheus scraped nothing from Traefik while metrics.prometheus.entryPoint pointed at websecure; "
     "a dedicated metrics entrypoint fixed it",
     "charts/traefik/values-prod.yaml", ["traefik", "prometheus", "metrics"], 0.85),
    ("m-113", "l-metrics", 2, 44, "lesson_learned",
     "The OTLP endpoint needs its http:// scheme, otherwise the Go SDK silently drops spans without a single log line",
     "services/platform-api/main.go", ["opentelemetry", "tracing"], 0.8),
    ("m-114", "l-ratelimit", 1, 21, "failure_pattern",
     "The rateLimit middleware saw every client as one because sourceCriterion took the remote address behind the LB; "
     "use ipStrategy.depth: 1",
     "clusters/prod/traefik/middlewares.yaml", ["traefik", "rate-limit"], 0.9),
    ("m-115", "l-ratelimit", 2, 20, "success_pattern",
     "A tighter limit on /api/login alone stopped the credential stuffing without hurting the mobile app's polling",
     "clusters/prod/traefik/middlewares.yaml", ["traefik", "rate-limit", "security"], 0.8),
    ("m-116", "l-db", 1, 75, "lesson_learned",
     "CloudNativePG base backups to MinIO failed silently while the bucket had object lock enabled",
     "clusters/prod/db/cluster.yaml", ["postgres", "backup"], 0.75),
    ("m-117", "l-frontend", 1, 12, "failure_pattern",
     "Playwright tests timed out on CI because the Vite dev server listened on localhost inside the container; bind it to 0.0.0.0",
     "web/playwright.config.ts", ["frontend", "ci", "playwright"], 0.85),
    ("m-118", "l-renovate", 1, 26, "lesson_learned",
     "Renovate opened one PR per chart until packageRules grouped them; the helm-charts group now runs before 6am on Monday",
     "renovate.json", ["renovate", "helm"], 0.8),
    ("m-119", "l-docs", 1, 3, "lesson_learned",
     "mkdocs build --strict fails on a relative link that leaves the docs folder; link to the published page instead",
     "docs/index.md", ["docs", "mkdocs"], 0.7),
    ("m-120", "l-k8s", 1, 110, "failure_pattern",
     "Liveness probes that queried Postgres restarted every API pod during the database failover; the probe now checks only the process",
     "charts/platform-api/templates/deployment.yaml", ["k8s", "probes", "postgres"], 0.9),
    ("m-121", "l-k8s", 2, 108, "success_pattern",
     "A PodDisruptionBudget with minAvailable: 2 kept Traefik serving while the k0s nodes were drained one by one",
     "charts/traefik/values-prod.yaml", ["k8s", "traefik", "availability"], 0.8),
    ("m-122", "l-auth", 1, 15, "failure_pattern",
     "oauth2-proxy sent every login back to / because the forwardAuth middleware had trustForwardHeader off and lost the original URL",
     "clusters/prod/traefik/middlewares.yaml", ["auth", "traefik", "oauth2-proxy"], 0.85),
    ("m-123", "l-release", 1, 9, "lesson_learned",
     "Bump the chart version on every template change, but appVersion only when the image tag changes; Renovate relies on it",
     "charts/platform-api/Chart.yaml", ["helm", "release"], 0.8),
    ("m-124", "l-release", 2, 2, "failure_pattern",
     "helm push to ghcr.io answered 403 Forbidden on the HEAD request until the workflow token got the write:packages scope",
     ".github/workflows/charts.yml", ["helm", "oci", "ci"], 0.9),
]
# Listed memory entries beyond personal_golden's: memory/memory.json holds both, re-dated.
MORE_LISTED = [
    ("mem_t1a2", "l-traefik-v3", 1, 24, "failure_pattern",
     "Traefik v3 renamed the ipWhiteList middleware to ipAllowList; the old one silently stopped matching after the chart upgrade",
     "clusters/staging/traefik/middlewares.yaml", ["traefik", "migration"], 0.9),
    ("mem_t3b4", "l-traefik-v3", 2, 23, "lesson_learned",
     "Traefik v3 rule syntax: HostRegexp takes a plain regular expression, no more {name:pattern} placeholders",
     "clusters/staging/traefik/routes.yaml", ["traefik", "migration", "routing"], 0.8),
    ("mem_h5c6", "l-release", 3, 1, "success_pattern",
     "helm lint --strict with the prod values file catches missing required values before ArgoCD does",
     ".github/workflows/charts.yml", ["helm", "ci"], 0.75),
]
LISTED_AGES = (50, 49, 48, 47, 46)  # days ago of personal_golden.LISTED, in its order
DATE_FORMATS = ("yyyymmdd", "epoch", "epoch_ms", "date", "iso")  # the shapes of createdAt seen in the wild

# Decision records: no "type" field, as decisions.json files are written by hand.
DECISIONS = [
    {"id": "dec-020", "ago": 150, "decision": "Use Traefik as the ingress controller instead of ingress-nginx",
     "rationale": "IngressRoute resources give each route its own middlewares (rate limits, forwardAuth) without annotation soup, "
                  "and one controller serves HTTP and TCP",
     "alternatives": ["ingress-nginx", "Contour", "Envoy Gateway with the Gateway API"], "status": "accepted",
     "tags": ["ingress", "traefik"]},
    {"id": "dec-021", "ago": 130,
     "decision": "Issue certificates with cert-manager (DNS-01 through Cloudflare), not Traefik's ACME resolver",
     "rationale": "Traefik keeps ACME state in acme.json, which cannot be shared between three replicas; cert-manager stores "
                  "certificates as Secrets any replica can mount",
     "alternatives": ["Traefik ACME with a single replica", "a paid edge that terminates TLS"], "status": "accepted",
     "tags": ["tls", "cert-manager", "traefik"]},
    {"id": "dec-022", "ago": 100, "decision": "Pin every Helm chart to an exact version in Chart.lock and bump through Renovate PRs",
     "rationale": "An unpinned traefik chart jumped a major version during a sync and changed the default entrypoints",
     "alternatives": ["version ranges such as ~23.1", "ArgoCD targetRevision '*'"], "status": "accepted", "tags": ["helm", "renovate"]},
    {"id": "dec-023", "ago": 85, "decision": "Publish the internal charts as OCI artifacts on GHCR instead of ChartMuseum",
     "rationale": "One registry for images and charts with the same login, and no ChartMuseum volume to back up",
     "alternatives": ["ChartMuseum on the cluster", "GitHub Pages chart repository with chart-releaser"], "status": "accepted",
     "tags": ["helm", "oci", "registry"]},
    {"id": "dec-024", "ago": 40,
     "decision": "Rate limit the public API at the edge: 50 requests per second average, burst 100, per client IP",
     "rationale": "The login endpoint was abused, and limits in the Go service ran only after TLS and auth work had been paid for",
     "alternatives": ["rate limiting inside platform-api", "Cloudflare rate limiting rules"], "status": "accepted",
     "tags": ["traefik", "rate-limit", "security"]},
    {"id": "dec-025", "ago": 35,
     "decision": "Expose Traefik metrics on a dedicated entrypoint scraped by a ServiceMonitor, never on websecure",
     "rationale": "Metrics on the public entrypoint were reachable from the internet",
     "alternatives": ["metrics on the traefik entrypoint"],
     "status": "accepted", "tags": ["traefik", "metrics", "prometheus"]},
    {"id": "dec-026", "ago": 28, "decision": "Keep CI caches in our own MinIO through runs-on/cache instead of the hosted cache service",
     "rationale": "The hosted 10 GB cache limit evicted the Docker layer cache every day",
     "alternatives": ["hosted cache", "no layer cache"],
     "status": "accepted", "tags": ["ci", "cache"]},
    {"id": "dec-027", "ago": 5,
     "decision": "Squash-merge only, and the PR title must be a Conventional Commit whose scope is the chart or service",
     "rationale": "release-please builds the changelogs from the squashed titles", "alternatives": ["merge commits", "rebase merges"],
     "status": "accepted", "tags": ["git", "commits", "release"]},
    {"id": "dec-028", "ago": 70, "decision": "Stay on Traefik v2.11 until every middleware uses the v3 names",
     "rationale": "The v3 chart would have dropped the old middlewares without an error", "alternatives": ["upgrade right away"],
     "status": "superseded", "superseded_by": "dec-029", "tags": ["traefik", "upgrade"]},
    {"id": "dec-029", "ago": 22, "decision": "Upgrade the clusters to Traefik v3.1 through the chart's 30.x line, staging first",
     "rationale": "Staging ran a week without a routing difference after the middleware renames", "alternatives": ["stay on v2.11 LTS"],
     "status": "accepted", "supersedes": "dec-028", "tags": ["traefik", "upgrade"]},
]
EXAMPLE_DECISION_AGES = {"dec-014": 300, "dec-015": 290, "dec-016": 320}

KB = {
    "cluster": {
        "nodes": {"count": "three k0s controller+worker nodes", "os": "Debian 12", "storage": "Longhorn, two replicas per volume"},
        "versions": {"k0s": "v1.30.4", "traefik": "v3.1.2 from chart 30.1.0", "cert-manager": "v1.15.3", "argocd": "v2.12.3"},
    },
    "ingress": {
        "entrypoints": {"web": "8000, redirects to websecure", "websecure": "8443, TLS only", "metrics": "9100, scraped by Prometheus",
                        "traefik": "9000, dashboard and ping, internal only"},
        "dns": {"provider": "Cloudflare", "records": "external-dns creates them from the IngressRoute hosts"},
    },
    "registry": {"images": "ghcr.io/acme-platform", "charts": "oci://ghcr.io/acme-platform/charts",
                 "mirror": "registry-mirror.internal:5000"},
    "observability": {"metrics": "Prometheus operator, 15 s scrape interval", "traces": "Tempo behind the OTLP HTTP receiver",
                      "logs": "Loki with 14 days retention", "dashboards": "Grafana, provisioned from git"},
    "people": {"platform": "Priya (lead), Marco, Jonas", "on-call": "weekly rotation, handover on Monday 10:00"},
}
PREFERENCES = {
    "editor": "neovim with LazyVim",
    "shell": "zsh with starship",
    "commit_style": "Conventional Commits, imperative mood, body wrapped at 72 columns",
    "pull_requests": "small, under 400 changed lines, one concern each",
    "helm_values": "values.yaml plus values-<env>.yaml; never --set in CI, so every value is reviewed in git",
    "yaml": "two-space indent, no document start marker",
    "answers": "short answer first, then the file it came from",
    "tests": "pytest -x --ff locally, the whole suite in CI",
}
LESSONS = [
    {"id": "les-01", "learned": 200, "lesson": "A forgotten Alertmanager silence hid the disk-full alert on node-c for two days",
     "source": "incident INC-2207", "tags": ["alerting"]},
    {"id": "les-02", "learned": 160,
     "lesson": "Render charts with helm template and validate them with kubeconform in CI; removed API versions "
               "show up before ArgoCD tries to apply them", "source": "cluster upgrade to 1.30", "tags": ["helm", "ci", "kubernetes"]},
    {"id": "les-03", "learned": 90,
     "lesson": "The retry middleware retried non-idempotent POSTs to the payment webhook: attach it to GET routes only",
     "source": "incident INC-2291", "tags": ["traefik", "payments"]},
    {"id": "les-04", "learned": 80,
     "lesson": "Android clients failed the TLS handshake because the intermediate was missing from the chain; "
               "check with openssl s_client -showcerts", "source": "support ticket 5512", "tags": ["tls", "mobile"]},
    {"id": "les-05", "learned": 65,
     "lesson": "CRDs shipped in templates/ instead of crds/ were deleted with the release and took every Certificate with them",
     "source": "incident INC-2310", "tags": ["helm", "crd", "cert-manager"]},
    {"id": "les-06", "learned": 52, "lesson": "Under ArgoCD, Helm pre-install hooks run on every sync: make hook jobs idempotent",
     "source": "migration job ran twice", "tags": ["argocd", "helm"]},
    {"id": "les-07", "learned": 14,
     "lesson": "A backup is not tested until it is restored: the monthly restore drill of the Postgres cluster takes 40 minutes",
     "source": "restore drill", "tags": ["postgres", "backup"]},
    {"id": "les-08", "learned": 4,
     "lesson": "Compressing already-gzipped responses twice doubled CPU on Traefik; exclude application/gzip in the compress middleware",
     "source": "CPU alert on the edge", "tags": ["traefik", "performance"]},
]
TODOS = [
    {"id": "t-31", "title": "Move staging Traefik to the v3 chart and delete the old ipWhiteList middlewares", "status": "done",
     "due": -20},
    {"id": "t-32", "title": "Add values.schema.json to the platform-api chart", "status": "open", "due": 7,
     "notes": "a replicaCount typo went unnoticed for a week"},
    {"id": "t-33", "title": "Rotate the Cloudflare API token used by cert-manager DNS-01", "status": "open", "due": 12,
     "notes": "the token expires at the end of the quarter"},
    {"id": "t-34", "title": "Turn on Traefik access logs as JSON and keep the X-Request-Id header", "status": "open", "due": 21},
    {"id": "t-35", "title": "Write the runbook for a Helm release stuck in pending-upgrade", "status": "done", "due": -50},
    {"id": "t-36", "title": "Renew the Backblaze application key that restic uses", "status": "open", "due": 30},
    {"id": "t-37", "title": "Look at a distributed rate limit (Redis) once the edge runs more than three replicas", "status": "someday"},
    {"id": "t-38", "title": "Point HELM_CACHE_HOME on the self-hosted runners at the persistent cache volume", "status": "open", "due": 10},
    {"id": "t-39", "title": "Replace the UPS battery in the rack", "status": "open", "due": 45},
    {"id": "t-40", "title": "Drop the Redis cache from the staging chart", "status": "done", "due": -33},
]

# path: (front matter as (title, days ago, tags), or None for a note without one; the markdown body)
NOTES = {
    "notes/ingress-traefik.md": (("Traefik at the edge", 120, ["traefik", "ingress", "k8s"]), """
# Traefik at the edge

Traefik runs as a Deployment of three replicas in the `traefik` namespace, behind the
provider's TCP load balancer. Routes are IngressRoute resources next to each app in the
gitops repository; plain Ingress objects are only used by third-party charts.

## Entrypoints

- `web` redirects everything to `websecure`.
- `websecure` terminates TLS with the certificates cert-manager writes.
- the dashboard is never routed publicly; reach it with a port-forward.

## Middlewares

Every public route gets the default chain: secure-headers, rate-limit-api, compress.
The login route swaps the rate limit for the stricter `rate-limit-login` and adds
`forward-auth` to oauth2-proxy. Middlewares live in the `traefik` namespace and are
referenced as `traefik-<name>@kubernetescrd`.
"""),
    "notes/helm-release-process.md": (("How we release our charts", 80, ["helm", "release", "ci"]), """
# How we release our charts

1. Change the templates, bump `version` in Chart.yaml (see the appVersion rule in memory).
2. `helm lint` and `helm template | kubeconform` run on the pull request.
3. On merge, the charts workflow packages the chart and pushes it with `helm push`.
4. Renovate opens the bump in the gitops repository; ArgoCD syncs staging first.

## Before an upgrade by hand

Always run `helm diff upgrade` with the same values files first, and keep the
generated manifest in the PR description when the diff touches a StatefulSet.
"""),
    "notes/tls-certificates.md": (("TLS certificates", 110, ["tls", "cert-manager", "traefik"]), """
# TLS certificates

cert-manager issues one wildcard certificate per cluster from the `letsencrypt-dns`
ClusterIssuer (DNS-01 through Cloudflare) and renews it 30 days before expiry.

## TLS options

The default TLSOption sets `minVersion: VersionTLS12` with `sniStrict: true`, so a client
that sends no SNI gets no certificate at all instead of the default one. TLS 1.3 only was
tried and dropped: the payment terminal firmware cannot do it.
"""),
    "notes/observability.md": (("Metrics and traces of our services", 42, ["metrics", "opentelemetry", "prometheus"]), """
# Metrics and traces of our services

Every service reads the same environment variables, set by the platform chart:

- `APP_METRICS_ADDR=:9464` the Prometheus endpoint (path /metrics), scraped through a PodMonitor.
- `OTEL_SERVICE_NAME` defaults to the release name.
- `OTEL_EXPORTER_OTLP_ENDPOINT=http://tempo.observability:4318` traces over OTLP HTTP.
- `OTEL_TRACES_SAMPLER_ARG=0.1` keeps one trace in ten in production.

## Traefik

Traefik's own metrics come from its metrics entrypoint, with router labels on
(`addRoutersLabels`), so the Grafana dashboard can show latency per IngressRoute.
"""),
    "notes/ci-caching.md": (("CI caching", 27, ["ci", "cache", "docker"]), """
# CI caching

What we cache, and keyed on what:

| cache | key |
|---|---|
| Go modules | go.sum |
| pip wheels | requirements*.txt and the interpreter version |
| Helm repositories | Chart.lock |
| Docker layers | registry cache at ghcr.io/acme-platform/cache, one tag per image |

Caches go to our MinIO through runs-on/cache. A cache that restores but misses
(a changed lock file) still saves time: restore-keys fall back to the newest entry.
"""),
    "notes/rate-limits.md": (("Rate limits at the edge", 19, ["traefik", "rate-limit"]), """
# Rate limits at the edge

| route | middleware | limit |
|---|---|---|
| /api/* | rate-limit-api | the decision's average and burst, per client IP |
| /api/login | rate-limit-login | 5 per minute, burst 10 |
| /webhooks/* | none | the payment provider retries on 429 and we lose events |

Clients that hit the limit get 429 with a Retry-After header; the mobile app backs off
exponentially. The limits are per Traefik replica, so the real ceiling is three times
higher until we share state between replicas.
"""),
    "notes/commit-conventions.md": (("Commit and PR conventions", 60, ["git", "commits"]), """
# Commit and PR conventions

- Breaking changes carry a `BREAKING CHANGE:` footer; release-please turns it into a major bump.
- Contributions to upstream projects (Traefik, Helm charts) need a DCO line: commit with
  `git commit -s` so every commit ends with Signed-off-by.
- Revert commits keep the original title after `revert:`.
"""),
    "notes/runbooks/helm-stuck-release.md": (("Runbook: Helm release stuck", 50, ["helm", "runbook"]), """
# Runbook: Helm release stuck

Symptom in the deploy job:

    Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress

1. `helm history <release> -n <namespace>` and find the last revision in status `deployed`.
2. Roll back to it: `helm rollback <release> <revision> -n <namespace>`.
3. Re-run the deploy job; never delete the release secret by hand.
"""),
    "notes/runbooks/traefik-404.md": (("Runbook: Traefik answers 404", 100, ["traefik", "runbook"]), """
# Runbook: Traefik answers 404

A plain `404 page not found` comes from Traefik itself: no router matched.

1. Check the router exists in the dashboard (port-forward to 9000).
2. IngressRoute in another namespace than its middleware? That needs cross-namespace references.
3. Host rule typo: compare with `kubectl get ingressroute -A -o wide`.
4. Router without TLS on `websecure`: it is never matched for HTTPS requests.
"""),
    "notes/scratch.md": (None, """
# Scratch

Error: INSTALLATION FAILED: cannot re-use a name that is still in use
happened after an interrupted uninstall of grafana; `helm uninstall grafana --no-hooks` and install again.

kubectl -n traefik port-forward deploy/traefik 9000:9000 for the dashboard.

Remember: the staging cluster's kubeconfig context is `k0s-staging`, prod is `k0s-prod`.
"""),
    "notes/oncall-handover.md": (None, """
# On-call handover

Last handover: node-c still shows a SMART warning on the NVMe; the replacement disk is
ordered. The weekend alert about cert expiry was the staging issuer, not production.
Open: the flaky e2e job on the charts workflow.
"""),
    "notes/registry-mirror.md": (None, """
# Registry mirror

The mirror is a plain `registry:2` in proxy mode on the NAS. Nodes use it through the
containerd `hosts.toml` of docker.io; a mirror outage falls back to Docker Hub directly.
Garbage collection runs on Sundays; it needs the registry read-only for ten minutes.
"""),
    "notes/postmortem-login-outage.md": (None, """
# Postmortem: login outage

For 47 minutes logins failed with 502. The new rate-limit-login middleware was referenced
from the app namespace without the `@kubernetescrd` suffix, so the router was disabled.
Fix: reference middlewares with their provider suffix; a CI check now greps for it.
Action items: alert on routers in error state, not only on 5xx rates.
"""),
    "projects/platform-api/NOTES.md": (None, """
# platform-api notes

The service answers on 8080; health on /healthz answers while the process runs (see the
probe lesson). Database migrations run as a Helm pre-upgrade hook job, idempotent by design.
Feature flags come from the flags ConfigMap, reloaded every 30 seconds.
"""),
    "projects/homelab/README.md": (("Homelab overview", 240, ["homelab"]), """
# Homelab overview

Three mini PCs run k0s; the NAS serves backups and the registry mirror. Everything is
deployed by ArgoCD from the homelab-gitops repository, with Traefik at the edge and
cert-manager for certificates, the same stack as work, at a smaller scale.
"""),
    "meetings/platform-sync-notes.md": (("Platform sync, short notes", 16, ["meeting", "platform"]), """
# Platform sync, short notes

- Marco takes the Traefik v3 rollout on production next week.
- The docs site moves to mkdocs-material; Aiko owns the navigation.
- Budget: the second runner pool is approved for the next quarter.
"""),
    "meetings/retro-ci.md": (("Retro: slow CI", 31, ["meeting", "ci"]), """
# Retro: slow CI

Went well: the registry layer cache. Went badly: the e2e job waits eight minutes for a
cluster. Try: a shared kind cluster per runner, recycled nightly.
"""),
}
EXAMPLE_NOTE_AGES = {"notes/argocd-setup.md": 300, "notes/k0s-cluster.md": 280, "notes/prometheus-alerting.md": 340}

# loops/<loopId>/progress.json: loopId: (goal, status, [(days ago, result of the iteration)])
LOOPS = {
    "l-ingress": ("Replace ingress-nginx with Traefik on staging and production", "done",
                  [(142, "Traefik chart installed beside ingress-nginx, no routes yet"),
                   (139, "payments routes moved; cross-namespace fix"),
                   (135, "all IngressRoutes moved, access logs show real client IPs"), (131, "ingress-nginx removed")]),
    "l-tls": ("Move certificates from Traefik ACME to cert-manager", "done",
              [(96, "ClusterIssuer on staging, wildcard issued"), (94, "production issuer after the staging dry run"),
               (92, "acme.json deleted, certificates mounted as a folder")]),
    "l-helm-upgrade": ("Make chart upgrades in CI safe to retry", "done",
                       [(61, "dropped --atomic from the deploy job"), (59, "history capped"), (57, "pending-upgrade recovery scripted")]),
    "l-ci-cache": ("Bring the main CI pipeline under eight minutes with better caches", "in_progress",
                   [(34, "registry layer cache: 14 min to 11 min"), (30, "Helm and Go caches: 11 min to 9.5 min"),
                    (6, "pip cache keyed by interpreter; 9.5 min, e2e is the long pole")]),
    "l-metrics": ("Metrics and traces for every service and the edge", "done",
                  [(46, "Traefik metrics entrypoint and ServiceMonitor"), (44, "OTLP traces to Tempo from platform-api")]),
    "l-release": ("Release charts from CI without a human", "in_progress",
                  [(10, "release-please opens the release PRs"), (2, "OCI push from the workflow works"), (1, "lint with prod values")]),
    "l-traefik-v3": ("Roll Traefik v3 out to production", "in_progress",
                     [(25, "staging on v3, middleware renames"), (23, "rule syntax fixed on staging"), (8, "production canary planned")]),
}
RATE_LIMIT_LOOP = """# Loop l-ratelimit: rate limits at the edge

Status: done after 3 iterations.

## Iteration 1

Added rate-limit-api to the default chain. Every client shared one bucket: the
source criterion saw the load balancer. Fixed with the ip strategy depth.

## Iteration 2

A separate login limit; the credential stuffing stopped within the hour.

## Iteration 3

Documented the limits per route in notes/rate-limits.md and alerted on 429 rates above 2%.
"""
# sessions/<id>.jsonl: id: (days ago, [(role, text)] or [("tool", command, description)]), one line a turn or a Bash call
# (whose input, as Claude Code logs it, is the command and a description of it)
SESSIONS = {
    "s-0412": (40, [("user", "the login endpoint is getting hammered, can we limit it at the edge?"),
                    ("assistant", "A Traefik rateLimit middleware on the public routes, keyed by client IP, is the quickest fix."),
                    ("tool", "kubectl -n traefik get middlewares", "List the middlewares in the traefik namespace"),
                    ("assistant", "Added rate-limit-api to the default chain in the PR.")]),
    "s-0413": (33, [("user", "why does every CI build rebuild all docker layers?"),
                    ("tool", "gh run view 48190 --log | grep -i cache", "Look for cache lines in the CI run log"),
                    ("assistant", "The cache export only keeps the final stage; switching the cache export mode fixes it.")]),
    "s-0414": (57, [("user", "deploy job says another operation is in progress for platform-api"),
                    ("tool", "helm history platform-api -n apps --max 5", "Show the release history to find the last deployed revision"),
                    ("assistant", "Revision 41 is pending-upgrade after the cancelled job; 40 is the last deployed one."),
                    ("tool", "helm rollback platform-api 40 -n apps", "Roll back to revision 40"),
                    ("assistant", "Rolled back; the deploy job can run again.")]),
    "s-0415": (9, [("user", "renovate did not pick up the new platform-api chart"),
                   ("assistant", "The image changed but the chart version did not; Renovate only sees chart versions."),
                   ("tool", "yq -i .version=1.4.3 charts/platform-api/Chart.yaml", "Bump the chart version")]),
    "s-0416": (3, [("user", "docs build fails in CI with strict mode"), ("tool", "mkdocs build --strict", "Build the docs the way CI does"),
                   ("assistant", "The link to ../../CHANGELOG.md leaves docs_dir; mkdocs strict mode treats it as an error.")]),
    "s-0417": (1, [("user", "push the new chart from my machine, CI is down"),
                   ("tool", "helm package charts/platform-api", "Package the chart"),
                   ("tool", "helm push platform-api-1.5.0.tgz oci://ghcr.io/acme-platform/charts",
                    "Push the chart package to the OCI registry"),
                   ("assistant", "Pushed; ArgoCD will see it after Renovate's next run.")]),
}
CI_FAILURES = {
    48187: ("e2e", "timed out waiting for the condition on pods/traefik-7d9c6f5b8-x2l4q"),
    48213: ("build-images", "ERROR: failed to solve: write /var/lib/buildkit/runc-overlayfs/content/ingest: no space left on device"),
    48222: ("test", "ImportError: libssl.so.3: cannot open shared object file"),
    48231: ("charts", "Error: values don't meet the specifications of the schema(s) in the following chart(s): "
                      "platform-api: replicaCount: Invalid type. Expected: integer, given: string"),
}
WORKFLOWS = ("build-images", "test", "charts", "e2e", "docs")
BRANCHES = ("main", "renovate/helm-charts", "feat/traefik-v3", "fix/login-limit", "docs/runbooks")
RELEASES = ("platform-api", "web", "traefik", "billing-worker")
# ci/deploys.jsonl: one deploy every two days; these (by index) say more
DEPLOY_NOTES = {15: ("traefik", "production", "first production deploy with the edge rate limit"),
                4: ("platform-api", "staging", "rolled back: pending-upgrade lock after a cancelled job")}

# The offsite transcript: speaker turns drawn from these pools with a seeded generator. The topics come close to the
# questions (CI, caches, deploys, certificates, limits, metrics) without stating any of the recorded answers.
SPEAKERS = ("Priya", "Marco", "Jonas", "Aiko", "Dana", "Felix", "Sam", "Lea")
TEAMS = ("platform", "payments", "mobile", "web", "data", "support", "security")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
AGENDA = (("Welcome and the year in review", "general"), ("Hiring plan", "hiring"), ("Roadmap for the next two quarters", "roadmap"),
          ("CI speed", "ci"), ("Caching in the product", "caching"), ("How we deploy", "deploys"),
          ("Incidents and on-call", "incidents"), ("Certificates and partners", "tls"), ("Limits and abuse", "limits"),
          ("Dashboards nobody reads", "metrics"), ("Customer escalations", "customers"), ("Cloud costs", "costs"),
          ("Office and remote days", "office"), ("Wrap-up and actions", "general"))
TOPICS = {
    "general": ["I think the big picture is that we shipped more than we planned, but we also carried more on-call load.",
                "Let's keep an eye on the clock, we have a lot of sessions after lunch.",
                "The survey said people want fewer meetings and longer focus blocks, {pct} percent of them.",
                "I'd rather we pick three things we actually finish than ten we talk about.",
                "The {team} team had a rough spring but the second half of the year was much calmer.",
                "Can we write the actions down as we go, so nobody has to rebuild them from memory?",
                "Honestly the thing I am proudest of is that the {team} team onboarded {n} people without drama."],
    "hiring": ["We have budget for {n} engineers next year, two of them in {team}.",
               "The take-home exercise takes people four hours, that is too long, we lose the good candidates.",
               "I'd like a pairing interview instead of the whiteboard one.",
               "{person} ran {n} interviews last month, we need to spread that load.",
               "Referral bonuses worked better than the agency, by a lot.",
               "The job ad still mentions technologies we dropped two years ago.",
               "Can we get feedback to candidates within three days? We are at {n} days on average."],
    "roadmap": ["The {team} roadmap has the new onboarding flow first, then the billing rewrite.",
                "If the billing rewrite slips again it pushes the partner API into the summer.",
                "I want one quarter where we pay back debt instead of adding features.",
                "Product wants the dark mode, design wants the navigation redo, we cannot do both.",
                "The search feature for customers is the most requested item, {pct} percent of the tickets mention it.",
                "We should stop promising dates to sales before engineering has looked at the scope.",
                "The data team needs the event pipeline before they can build the dashboards product asked for."],
    "ci": ["The main pipeline feels slow again, people are waiting on it before every merge.",
           "Most of the time goes into the end-to-end job, the unit tests are fine.",
           "I counted {n} reruns last week that were just flaky tests, not real failures.",
           "We could split the test suite by timing data instead of by folder.",
           "The runners are shared with the data team's batch jobs and that hurts on {day}s.",
           "Maybe we should quarantine the flaky tests and give each one an owner.",
           "Self-hosted runners are cheaper but somebody has to patch them.",
           "Nobody reads the CI summary comment, it is too long.",
           "When the pipeline is red for a day, people start merging with the override and that is how we get broken main."],
    "caching": ["The product pages are slow on first load, the CDN hit rate is only {pct} percent.",
                "We invalidate the whole CDN on every release, which throws away everything warm.",
                "The recommendation service caches per user and the memory keeps growing.",
                "A cache in front of the pricing API would help, but stale prices are a legal problem.",
                "The browser caches the app bundle forever because the file names have hashes, that part works.",
                "Which layer should own the cache, the gateway or the service? We keep arguing about it.",
                "The mobile team wants an offline cache and that is a whole project on its own.",
                "Cache warming after a deploy took {n} minutes last time, customers noticed."],
    "deploys": ["We deploy about {n} times a day now, mostly small changes.",
                "The deploy freeze over the holidays starts on the {day} before, as every year.",
                "Canary releases would have caught the checkout bug before it reached everybody.",
                "Rollbacks are easy for the stateless services, the database migrations are the hard part.",
                "I want a deploy button that anyone on the team can press without asking.",
                "The release notes are written by hand and they are always late.",
                "Feature flags saved us twice this quarter, we turned things off instead of rolling back.",
                "Deploying on {day} afternoon is fine as long as someone is around for an hour afterwards."],
    "incidents": ["We had {n} incidents this quarter, most of them short.",
                  "The pager woke {person} up three nights in a row, that is not sustainable.",
                  "Postmortems are useful but the action items never get done.",
                  "I'd like an incident commander role that rotates, separate from the person fixing things.",
                  "Status page updates were late during the big outage, customers complained more about that than the outage.",
                  "The runbooks are out of date, half the commands do not exist anymore.",
                  "On-call handover on {day} mornings works, let's keep it."],
    "tls": ["A partner's certificate expired and their webhooks failed for a whole afternoon.",
            "Some old payment terminals still cannot talk to modern TLS, we need a plan for them.",
            "The certificate inventory is a spreadsheet and it is wrong.",
            "Mutual TLS with the bank is a project of its own, the paperwork alone takes weeks.",
            "We should alert two weeks before any certificate expires, ours or a partner's.",
            "The security review asked for a list of every place we terminate TLS.",
            "Customers with their own domains need certificates too, that is on the roadmap for {team}."],
    "limits": ["Scrapers hit the catalogue pages {n} thousand times an hour some nights.",
               "The partner API contract says fair use, but nobody defined fair.",
               "Support gets angry mails when a customer hits a quota they did not know about.",
               "We should show remaining quota in the API response headers, like the big providers do.",
               "Abuse from free accounts costs us more than the paid plan earns from some customers.",
               "A captcha on signup cut the fake accounts but also cut real signups by {pct} percent.",
               "The bot detection vendor wants a three year contract, I do not like that."],
    "metrics": ["We have {n} dashboards and I think five of them get opened.",
                "Every team built its own latency dashboard with different percentiles.",
                "The business metrics live in a different tool from the technical ones and nobody joins them.",
                "Alert fatigue is real, {person} muted the whole channel last month.",
                "I want one page per service with the four golden signals and nothing else.",
                "Traces are great when they exist, but half the services do not propagate the headers.",
                "The retention for logs is costing more than the compute for some services."],
    "customers": ["The biggest customer escalated twice about slow exports.",
                  "Support needs better tools to see what a customer sees without asking for screenshots.",
                  "Enterprise customers ask for audit logs in every sales call now.",
                  "The {team} team spent {n} days on one customer's custom integration, we should charge for that.",
                  "Churn is mostly small customers, the big ones stay but complain loudly.",
                  "A customer advisory board would give us the roadmap feedback earlier."],
    "costs": ["The cloud bill went up {pct} percent while traffic went up much less.",
              "Idle staging environments are a big part of the bill, they run all weekend.",
              "Reserved instances would save money but lock us in for three years.",
              "Egress costs surprised everyone, the image downloads are the biggest part.",
              "We could move the batch jobs to spot instances, they tolerate interruptions.",
              "Every team should see its own costs, otherwise nobody feels responsible."],
    "office": ["The office is empty on {day}s, we could give up one floor.",
               "People like the team days, once a month in person seems right.",
               "The coffee machine on the third floor has been broken since spring.",
               "Remote colleagues feel left out of the hallway decisions.",
               "The meeting rooms need better microphones, half of this offsite will be unintelligible on the recording.",
               "Let's do the next offsite somewhere with fewer stairs."],
}
OPENERS = ("", "", "", "Yeah.", "Right.", "Okay, so.", "Quick point.", "To add to that.", "Honestly?", "Sorry, go on.", "Hm.", "Agreed.")
HEDGES = ("From what I've seen, ", "To be fair, ", "As far as I know, ", "In my view, ", "Just to be clear, ", "For what it's worth, ",
          "Frankly, ", "In the {team} team at least, ", "Like {person} said, ", "I keep hearing that ", "Correct me if I'm wrong, but ")
ASIDES = (", at least in {team}", ", if I remember right", ", and that was before the reorg", ", as {person} pointed out",
          ", we saw it again on {day}", ", which surprised me", " and nobody owns it", ", same as last time")
CLOSERS = ("", "", "", " Does that make sense?", " Anyway.", " I can take that.", " Let's park it.", " {person}, what do you think?",
           " We did this last year too.", " I'm not sure, to be honest.")

# (style, question, file, needle): written from the content above before any search was run.
QUESTIONS = [
    ("own", "what did we decide about the ingress controller?", "decisions.json", "instead of ingress-nginx"),
    ("own", "why did we pick cert-manager over Traefik's own ACME resolver?", "decisions.json", "cannot be shared between three replicas"),
    ("own", "what rate limit did we set for our public API?", "decisions.json", "50 requests per second average"),
    ("own", "how do we pin our Helm chart versions?", "decisions.json", "exact version in Chart.lock"),
    ("own", "why did we drop ChartMuseum?", "decisions.json", "no ChartMuseum volume to back up"),
    ("own", "where do we keep our CI caches, and why?", "decisions.json", "10 GB cache limit"),
    ("own", "what is our rule for PR titles when merging?", "decisions.json", "whose scope is the chart or service"),
    ("own", "which Traefik version did we decide to upgrade to?", "decisions.json", "Traefik v3.1 through the chart's 30.x line"),
    ("own", "last week's lesson about the CI cache", "memory/entries/m-111.json", "Python minor version"),
    ("own", "which loop is still working on CI caching?", "loops/l-ci-cache/progress.json", "under eight minutes"),
    ("own", "what went wrong with our helm upgrade --atomic?", "memory/entries/m-106.json", "rolled back before we could read"),
    ("own", "what fixed our release stuck in pending-upgrade after a cancelled job?", "memory/entries/m-108.json",
     "rollback to the last deployed revision"),
    ("own", "what is our minimum TLS version?", "notes/tls-certificates.md", "VersionTLS12"),
    ("own", "which middlewares do our public routes get?", "notes/ingress-traefik.md", "secure-headers, rate-limit-api, compress"),
    ("own", "my preference for helm values in CI", "preferences.json", "never --set in CI"),
    ("own", "what's on my todo list about a values schema?", "todos.json", "values.schema.json to the platform-api chart"),
    ("own", "when do I have to rotate the Cloudflare token that cert-manager uses?", "todos.json", "Rotate the Cloudflare API token"),
    ("own", "what did I learn about the retry middleware?", "lessons.json", "non-idempotent POSTs"),
    ("own", "what happened to our Certificates when a release was uninstalled?", "lessons.json", "took every"),
    ("own", "which Traefik version are we running?", "kb.json", "v3.1.2 from chart 30.1.0"),
    ("own", "which port is our Traefik dashboard on?", "kb.json", "dashboard and ping, internal only"),
    ("own", "what was still open at my last on-call handover?", "notes/oncall-handover.md", "flaky e2e job"),
    ("own", "what did our login outage postmortem find?", "notes/postmortem-login-outage.md", "router was disabled"),
    ("own", "what command did I run to find the last good revision of our stuck release?", "sessions/s-0414.jsonl",
     "helm history platform-api -n apps"),
    ("own", "which chart package did I push in yesterday's session?", "sessions/s-0417.jsonl", "platform-api-1.5.0.tgz"),
    ("own", "which of our deploys turned on the edge rate limit in production?", "ci/deploys.jsonl",
     "first production deploy with the edge rate limit"),
    ("neutral", "why is self-heal off in ArgoCD?", "notes/argocd-setup.md", "reverted those hotfixes"),
    ("neutral", "HELM_MAX_HISTORY", "memory/entries/m-107.json", "HELM_MAX_HISTORY=10"),
    ("neutral", "Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress",
     "notes/runbooks/helm-stuck-release.md", "last revision in status"),
    ("neutral", "OTEL_EXPORTER_OTLP_ENDPOINT", "notes/observability.md", "http://tempo.observability:4318"),
    ("neutral", "APP_METRICS_ADDR", "notes/observability.md", "APP_METRICS_ADDR=:9464"),
    ("neutral", "spans silently dropped by the Go SDK", "memory/entries/m-113.json", "needs its http:// scheme"),
    ("neutral", "allowCrossNamespace", "memory/entries/m-101.json", "allowCrossNamespace was set to true"),
    ("neutral", "client IP is the load balancer address in Traefik access logs", "memory/entries/m-102.json",
     "trustedIPs listed the LB subnet"),
    ("neutral", "TLS certificate not reloaded after renewal", "memory/entries/m-104.json", "mounted with subPath"),
    ("neutral", "rateLimit sourceCriterion behind a load balancer", "memory/entries/m-114.json", "ipStrategy.depth: 1"),
    ("neutral", "buildx cache-to mode=max", "memory/entries/m-109.json", "mode=min dropped the builder stage"),
    ("neutral", "helm dependency build is slow in CI", "memory/entries/m-110.json", "from 70 s to 4 s"),
    ("neutral", "helm push 403 Forbidden on the HEAD request", "memory/entries/m-124.json", "write:packages"),
    ("neutral", "no space left on device", "ci/runs.jsonl", "48213"),
    ("neutral", "values don't meet the specifications of the schema(s)", "ci/runs.jsonl", "48231"),
    ("neutral", "Playwright tests time out on CI", "memory/entries/m-117.json", "bind it to 0.0.0.0"),
    ("neutral", "ipWhiteList middleware stopped matching after the upgrade to v3", "memory/memory.json",
     "renamed the ipWhiteList middleware to ipAllowList"),
    ("neutral", "liveness probe restarts during a database failover", "memory/entries/m-120.json", "checks only the process"),
    ("neutral", "PodDisruptionBudget for Traefik during node drains", "memory/entries/m-121.json", "minAvailable: 2"),
    ("neutral", "forwardAuth trustForwardHeader oauth2-proxy redirects to /", "memory/entries/m-122.json", "trustForwardHeader off"),
    ("neutral", "when to bump the chart version and when appVersion", "memory/entries/m-123.json",
     "appVersion only when the image tag changes"),
    ("neutral", "HELM_CACHE_HOME", "todos.json", "HELM_CACHE_HOME on the self-hosted runners"),
    ("neutral", "Docker Hub rate limits", "decisions.json", "Docker Hub rate limits broke node rebuilds"),
    ("neutral", "openssl s_client -showcerts missing intermediate", "lessons.json", "intermediate was missing"),
    ("neutral", "amtool silence add", "notes/prometheus-alerting.md", "forgotten silence hid a real outage"),
    ("neutral", "Error: INSTALLATION FAILED: cannot re-use a name that is still in use", "notes/scratch.md", "--no-hooks"),
    ("neutral", "drain a k0s node before maintenance", "notes/k0s-cluster.md", "Longhorn needs the volume replicas rebuilt"),
    ("neutral", "compress middleware doubled CPU", "lessons.json", "exclude application/gzip"),
]


def day(today: dt.date, ago: int) -> str:
    return (today - dt.timedelta(days=ago)).isoformat()


def stamp(today: dt.date, ago: int, minutes: int = 0) -> str:
    """An ISO time `ago` days before `today`, at 09:00 plus `minutes`."""
    moment = dt.datetime.combine(today - dt.timedelta(days=ago), dt.time(9), dt.UTC) + dt.timedelta(minutes=minutes)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def created(today: dt.date, ago: int, shape: str):
    """createdAt in one of the shapes memory files carry (YYYYMMDD, epoch seconds or milliseconds, date, ISO time)."""
    moment = dt.datetime.combine(today - dt.timedelta(days=ago), dt.time(10, 30), dt.UTC)
    return {"yyyymmdd": int(moment.strftime("%Y%m%d")), "epoch": int(moment.timestamp()), "epoch_ms": int(moment.timestamp() * 1000),
            "date": moment.date().isoformat(), "iso": stamp(today, ago, 90)}[shape]


def as_json(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def memory_files(today: dt.date) -> dict[str, str]:
    files = {f"memory/entries/{values[0]}.json": as_json(entry(values[:3] + (stamp(today, values[3], 7 * index),) + values[4:]))
             for index, values in enumerate(MEMORY)}
    golden = [values[:3] + (created(today, ago, DATE_FORMATS[i % len(DATE_FORMATS)]),) + values[4:]
              for i, (values, ago) in enumerate(zip(LISTED, LISTED_AGES, strict=True))]
    more = [values[:3] + (stamp(today, values[3], 30),) + values[4:] for values in MORE_LISTED]
    files["memory/memory.json"] = as_json([entry(values) for values in golden + more])
    return files


def record_files(today: dt.date) -> dict[str, str]:
    """decisions.json (the examples' decisions too, without "type"), kb.json, preferences, lessons and todos."""
    examples = json.loads((EXAMPLES / "memory" / "decisions.json").read_text(encoding="utf-8"))["decisions"]
    decisions = [{key: value for key, value in record.items() if key != "type"} | {"date": day(today, EXAMPLE_DECISION_AGES[record["id"]])}
                 for record in examples]
    decisions += [{"id": record["id"], "date": day(today, record["ago"])} | {k: v for k, v in record.items() if k not in ("id", "ago")}
                  for record in DECISIONS]
    lessons = [{**record, "learned": day(today, record["learned"])} for record in LESSONS]
    todos = [{**record, "due": day(today, -record["due"])} if "due" in record else record for record in TODOS]
    return {"decisions.json": as_json(sorted(decisions, key=lambda record: record["date"])), "kb.json": as_json(KB),
            "preferences.json": as_json(PREFERENCES), "lessons.json": as_json({"updated": day(today, 4), "lessons": lessons}),
            "todos.json": as_json({"todos": todos})}


def note_files(today: dt.date) -> dict[str, str]:
    """The notes above, the examples' notes re-dated, and the examples' .ragignore with the drafts it leaves out."""
    files = {}
    for path, (front, body) in NOTES.items():
        head = ""
        if front:
            title, ago, tags = front
            head = f"---\ntitle: {title}\ndate: {day(today, ago)}\ntags: [{', '.join(tags)}]\n---\n"
        files[path] = head + body.lstrip("\n")
    for path, ago in EXAMPLE_NOTE_AGES.items():
        text = (EXAMPLES / path).read_text(encoding="utf-8")
        files[path] = re.sub(r"^date: .*$", f"date: {day(today, ago)}", text, count=1, flags=re.M)
    for path in (".ragignore", "drafts/INDEX.md", "drafts/half-baked-idea.md"):
        files[path] = (EXAMPLES / path).read_text(encoding="utf-8")
    files["loops/l-ratelimit/progress.md"] = RATE_LIMIT_LOOP
    return files


def loop_files(today: dt.date) -> dict[str, str]:
    files = {}
    for loop_id, (goal, status, steps) in LOOPS.items():
        iterations = [{"iteration": number, "date": day(today, ago), "result": result} for number, (ago, result) in enumerate(steps, 1)]
        files[f"loops/{loop_id}/progress.json"] = as_json({"loopId": loop_id, "goal": goal, "status": status, "iteration": len(steps),
                                                           "updatedAt": stamp(today, steps[-1][0], 60), "iterations": iterations})
    return files


def lines(records: list[dict]) -> str:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def log_files(today: dt.date) -> dict[str, str]:
    """JSONL: session logs, CI runs, deploys, and the examples' journal re-dated."""
    files = {f"sessions/{session}.jsonl": lines([{"ts": stamp(today, ago, 3 * number), "session": session} | said(turn)
                                                for number, turn in enumerate(turns)])
             for session, (ago, turns) in SESSIONS.items()}
    runs = []
    for i in range(90):
        run_id = 48150 + i
        workflow, error = CI_FAILURES.get(run_id, (WORKFLOWS[i % len(WORKFLOWS)], None))
        runs.append({"run_id": run_id, "ts": stamp(today, 45 - i // 2, 300 * (i % 2) + 11 * (i % 7)), "workflow": workflow,
                     "branch": BRANCHES[i * 7 % len(BRANCHES)], "status": "failure" if error else "success",
                     "duration_s": 240 + i * 53 % 600} | ({"error": error} if error else {}))
    deploys = []
    for i in range(32):
        release, env, note = DEPLOY_NOTES.get(i, (RELEASES[i // 2 % len(RELEASES)], ("staging", "production")[i % 2], None))
        deploys.append({"ts": stamp(today, 64 - 2 * i, 420), "env": env, "release": release, "version": f"1.{i // 8}.{i % 8}",
                        "result": "rolled_back" if note and "rolled back" in note else "success", "by": "argocd"}
                       | ({"note": note} if note else {}))
    journal = [json.loads(line) for line in (EXAMPLES / "journal.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    files.update({"ci/runs.jsonl": lines(runs), "ci/deploys.jsonl": lines(deploys),
                  "journal.jsonl": lines([{**record, "date": day(today, 260 - 7 * n)} for n, record in enumerate(journal)])})
    return files


def said(turn: tuple) -> dict:
    """A session line's content: a turn's text, or a Bash call's input."""
    if turn[0] == "tool":
        return {"role": "tool", "tool": "Bash", "input": {"command": turn[1], "description": turn[2]}}
    return {"role": turn[0], "text": turn[1]}


def transcript(today: dt.date) -> str:
    """About TRANSCRIPT_BYTES of speaker turns, session by session of the offsite's agenda."""
    rng = random.Random(SEED)
    parts = [f"---\ntitle: Platform offsite, full transcript\ndate: {day(today, 16)}\ntags: [meeting, offsite, transcript]\n---\n"
             "# Platform offsite, full transcript\n\nAutomatic transcription; speakers as the room microphones guessed them.\n"]
    clock = 0
    for number, (title, topic) in enumerate(AGENDA, 1):
        parts.append(f"\n## Session {number}: {title}\n\n")
        written = 0
        while written < TRANSCRIPT_BYTES // len(AGENDA):
            clock += rng.randint(8, 75)
            hours, rest = divmod(clock, 3600)
            line = f"**{rng.choice(SPEAKERS)}** [{hours:02d}:{rest // 60:02d}:{rest % 60:02d}]: {turn(rng, topic)}\n\n"
            parts.append(line)
            written += len(line)
    return "".join(parts)


def turn(rng: random.Random, topic: str) -> str:
    """One to three sentences, mostly on the session's topic (conversations wander), with an opener and a closer."""
    pool = TOPICS[topic] if rng.random() < 0.8 else TOPICS[rng.choice(sorted(TOPICS))]
    said = [vary(rng, sentence) for sentence in rng.sample(pool, rng.randint(1, 3))]
    sentences = [rng.choice(OPENERS), *said, rng.choice(CLOSERS).strip()]
    text = " ".join(sentence for sentence in sentences if sentence)
    return text.format(person=rng.choice(SPEAKERS), team=rng.choice(TEAMS), day=rng.choice(DAYS), n=rng.randint(2, 40),
                       pct=rng.randint(5, 60))


def vary(rng: random.Random, sentence: str) -> str:
    """A statement with a hedge before it or an aside after it, half of the time: people do not repeat themselves word for word."""
    if not sentence.endswith(".") or rng.random() < 0.5:
        return sentence
    if rng.random() < 0.5:
        return sentence[:-1] + rng.choice(ASIDES) + "."
    first = sentence.split()[0]
    keep = first in ("I", "I'd", "I'm") or first.startswith("{")
    return rng.choice(HEDGES) + (sentence if keep else sentence[0].lower() + sentence[1:])


def state_files(today: dt.date | None = None) -> dict[str, str]:
    """Every file of the state, by path relative to its root."""
    today = today or dt.datetime.now(dt.UTC).date()
    files = {**memory_files(today), **record_files(today), **note_files(today), **loop_files(today), **log_files(today)}
    files[TRANSCRIPT] = transcript(today)
    return files


def check_questions(files: dict[str, str]) -> list[str]:
    """Authoring mistakes: an answer file that does not exist or lacks its needle, a needle also found elsewhere
    (two right answers), a needle in the transcript (which must answer nothing)."""
    problems = []
    for _, question, path, needle in QUESTIONS:
        if needle not in files.get(path, ""):
            problems.append(f"{question!r}: {needle!r} is not in {path}")
        elsewhere = [other for other, text in files.items() if other != path and needle in text]
        if elsewhere:
            problems.append(f"{question!r}: {needle!r} is also in {', '.join(elsewhere)}")
    return problems


def write_state(root: Path, files: dict[str, str]) -> dict:
    """Write the files under `root`, leaving unchanged ones untouched (an index run then skips them without reading),
    and remove files a previous generation wrote that are no longer generated."""
    marker = root / ".mixed-state"
    if root.exists() and any(root.iterdir()) and not marker.exists():
        raise SystemExit(f"{root} is not empty and was not written by mixed_state.py; give an empty or new folder")
    root.mkdir(parents=True, exist_ok=True)
    marker.touch()
    written = 0
    for rel, text in files.items():
        path = root / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written += 1
    stale = [path for path in root.rglob("*") if path.is_file() and path != marker and path.relative_to(root).as_posix() not in files]
    for path in stale:
        path.unlink()
    return {"files": len(files), "written": written, "removed": len(stale), "bytes": sum(len(text.encode()) for text in files.values())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path, help="the folder to write the state into (created; only a folder this script wrote is updated)")
    args = parser.parse_args()
    files = state_files()
    problems = check_questions(files)
    summary = write_state(args.root, files)
    print(json.dumps({**summary, "questions": len(QUESTIONS), "problems": problems}, indent=2))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
