#!/usr/bin/env python3
"""Golden questions over a generated, realistic ~/.claude/state: is the right record first, and is any result a fragment?

Generates (in a temporary folder, nothing committed) what a Claude Code power user
accumulates: memory entries one per file (memory/m-NNN.json) and as lists
(memory/memory.json, loops/*.json), decisions, kb.json, preferences, notes and
JSONL logs; indexes it with index_personal.py; asks each question through the
product's own search (hybrid) and checks that the first result is the expected
record (its record id) or note (its file). A fragment is a result from a JSON file
whose text is a single field of a record (one line, no other field).

    .venv/bin/python bench/personal_golden.py [--keep DIR] [--top-k 3]
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "scripts"))

# (id, loopId, iteration, createdAt, type, lesson, context, tags, confidence): one file each.
SINGLE = [
    ("m-001", "l-docker", 1, "2026-03-02T09:10:00Z", "lesson_learned",
     "buildx needs QEMU binfmt handlers registered before building arm64 images",
     "ci/docker.yml", ["docker", "arm64", "buildx"], 0.9),
    ("m-002", "l-docker", 2, "2026-03-05T11:00:00Z", "failure_pattern", "Alpine base images break glibc-linked Python wheels; use slim",
     "Dockerfile", ["docker", "python"], 0.8),
    ("m-003", "l-auth", 1, "2026-04-11T14:20:00Z", "failure_pattern",
     "OAuth refresh tokens were rotated twice when two tabs refreshed at once",
     "src/auth/refresh.ts", ["auth", "oauth", "race"], 0.85),
    ("m-004", "l-auth", 3, "2026-04-14T08:00:00Z", "success_pattern", "A mutex around token refresh fixed the double rotation",
     "src/auth/refresh.ts", ["auth", "oauth"], 0.9),
    ("m-005", "l-db", 1, "2026-05-20T16:45:00Z", "lesson_learned", "Postgres VACUUM FULL locks the table; use pg_repack on production",
     "ops/db-maintenance.md", ["postgres", "maintenance"], 0.95),
    ("m-006", "l-db", 2, "2026-06-01T10:00:00Z", "failure_pattern", "Alembic autogenerate misses server default changes on enum columns",
     "migrations/", ["postgres", "alembic"], 0.7),
    ("m-007", "l-k8s", 4, "2026-07-09T13:30:00Z", "lesson_learned",
     "Liveness probes that hit the database caused cascading restarts during a DB failover",
     "k8s/api-deployment.yaml", ["k8s", "probes"], 0.9),
    ("m-008", "l-k8s", 5, "2026-08-18T07:15:00Z", "success_pattern", "Pod disruption budgets kept two replicas up during node drains",
     "k8s/pdb.yaml", ["k8s", "availability"], 0.8),
    ("m-009", "l-frontend", 2, "2026-09-03T12:00:00Z", "lesson_learned",
     "Vite needs optimizeDeps.include for CommonJS packages in dev mode",
     "vite.config.ts", ["vite", "frontend"], 0.75),
    ("m-010", "l-frontend", 3, "2026-09-21T15:40:00Z", "failure_pattern", "Snapshot tests failed on CI because of the timezone; pin TZ=UTC",
     "jest.config.js", ["jest", "ci", "timezone"], 0.9),
    ("m-011", "l-docker", 4, "2026-10-02T09:00:00Z", "lesson_learned",
     "Docker layer cache is lost on CI unless cache-to and cache-from use the registry",
     "ci/docker.yml", ["docker", "ci", "cache"], 0.85),
    ("m-012", "l-rust", 1, "2026-10-15T18:20:00Z", "lesson_learned",
     "cargo build --release on the Pi runs out of memory; cross-compile with cross instead",
     "Cargo.toml", ["rust", "arm64", "raspberry-pi"], 0.8),
]
LISTED = [
    ("mem_a1b2", "abc123", 2, 20260401, "failure_pattern", "Auth mocks must be initialized inside beforeEach, not at module scope",
     "src/auth/auth.test.ts", ["auth", "mocks", "jest"], 0.9),
    ("mem_c3d4", "abc123", 3, 1775051000, "lesson_learned", "Use jest.resetAllMocks() in afterEach to prevent mock state leakage",
     "src/auth/auth.test.ts", ["jest", "cleanup"], 0.8),
    ("mem_e5f6", "def456", 5, 1774692000000, "success_pattern", "ESM imports require the .js extension in TypeScript source files",
     "ESM migration", ["typescript", "esm"], 0.8),
    ("mem_g7h8", "def456", 2, "2026-03-28", "failure_pattern", "ts-node does not support isolatedModules by default; use tsx",
     "ESM migration", ["typescript", "ts-node"], 0.6),
    ("mem_x9y0", "ghi789", 1, "2026-03-25T10:00:00Z", "failure_pattern", "Passport mock must stub req.user before the middleware chain",
     "src/auth/middleware.test.ts", ["auth", "passport", "mocks"], 0.6),
]
DECISIONS = [
    {"id": "dec-001", "date": "2025-11-03", "type": "decision", "decision": "Use Caddy instead of nginx as the reverse proxy",
     "rationale": "Automatic TLS certificates and a config a page long", "status": "accepted", "tags": ["proxy", "tls"]},
    {"id": "dec-002", "date": "2025-12-14", "type": "decision", "decision": "Back up the NAS to Backblaze B2 with restic every night",
     "rationale": "Cheap storage, encrypted client side, tested restores", "status": "accepted", "tags": ["backup", "nas"]},
    {"id": "dec-003", "date": "2026-01-20", "type": "decision", "decision": "Move the homelab cluster from k3s to k0s",
     "rationale": "k0s upgrades in place with a single binary and no etcd surprises", "status": "accepted", "tags": ["k8s"]},
    {"id": "dec-004", "date": "2026-02-08", "type": "decision", "decision": "Keep secrets in SOPS-encrypted files in git, with age keys",
     "rationale": "No vault server to run; reviews show which secret changed", "status": "accepted", "tags": ["secrets", "gitops"]},
    {"id": "dec-005", "date": "2026-06-30", "type": "decision", "decision": "Drop Redis and cache sessions in Postgres",
     "rationale": "One fewer service; session load is tiny", "status": "superseded", "tags": ["postgres", "redis"]},
]
KB = {
    "network": {"router": {"model": "OPNsense on a Protectli vault", "vlans": "10 trusted, 20 iot, 30 guests"},
                "dns": {"resolver": "Unbound with DNS over TLS to Quad9", "local_zone": "home.arpa"}},
    "hardware": {"nas": {"model": "Synology DS920+", "disks": "4 x 8 TB in SHR-1"},
                 "pis": {"count": "three Raspberry Pi 5 with NVMe hats", "role": "k0s worker nodes"}},
}
PREFERENCES = {"editor": "neovim with LazyVim", "shell": "fish with starship", "terminal": "WezTerm",
               "commit_style": "Conventional commits, imperative mood", "answer_style": "short answers first, details after"}
NOTES = {
    "notes/grafana-alerts.md": "---\ntitle: Grafana alert routing\ntags: [grafana, alerting]\n---\n# Grafana alert routing\n\n"
                               "Critical alerts page through ntfy; warnings go to the #homelab Matrix room.\n",
    "notes/wireguard.md": "---\n\nA note that opens with a rule.\n\n---\n\n# WireGuard road warrior\n\nPhones connect through the "
                          "WireGuard tunnel on UDP 51820; the peer config lives in the password manager.\n",
    "notes/zfs-scrub.md": "# ZFS scrub schedule\n\nThe pool is scrubbed on the first Sunday of each month; "
                          "a scrub of 16 TB takes about nine hours.\n",
}
LOG = [{"ts": 1767225600, "event": "upgraded k0s to 1.31 on all nodes"},
       {"ts": 1769904000000, "event": "replaced the failing disk 3 in the NAS"}]

# (question, expected record id or file)
QUESTIONS = [
    ("why do arm64 docker builds fail without qemu", "m-001"),
    ("which base image breaks python wheels", "m-002"),
    ("tokens rotated twice when two browser tabs refreshed", "m-003"),
    ("what fixed the double token rotation", "m-004"),
    ("how to compact a postgres table without locking it", "m-005"),
    ("alembic misses enum default changes", "m-006"),
    ("liveness probes caused cascading restarts", "m-007"),
    ("how did we keep replicas up while draining nodes", "m-008"),
    ("vite dev mode commonjs packages", "m-009"),
    ("snapshot tests fail on CI because of timezone", "m-010"),
    ("docker layer cache lost on CI", "m-011"),
    ("rust release build out of memory on the raspberry pi", "m-012"),
    ("where should auth mocks be initialized", "mem_a1b2"),
    ("how to prevent mock state leaking between tests", "mem_c3d4"),
    ("ESM imports need which file extension in TypeScript", "mem_e5f6"),
    ("ts-node isolatedModules problem", "mem_g7h8"),
    ("passport mock req.user middleware", "mem_x9y0"),
    ("which reverse proxy did we pick and why", "dec-001"),
    ("how is the NAS backed up offsite", "dec-002"),
    ("why did we move from k3s", "dec-003"),
    ("where do we keep secrets", "dec-004"),
    ("did we keep redis for sessions", "dec-005"),
    ("what router runs the home network", "kb.json"),
    ("which DNS resolver do we use", "kb.json"),
    ("how many disks are in the NAS", "kb.json"),
    ("what role do the raspberry pis have", "kb.json"),
    ("which text editor do I use", "preferences.json"),
    ("which terminal emulator do I like", "preferences.json"),
    ("how do critical alerts reach me", "notes/grafana-alerts.md"),
    ("which port does the wireguard tunnel use", "notes/wireguard.md"),
    ("how often is the ZFS pool scrubbed", "notes/zfs-scrub.md"),
    ("when did we replace the failing NAS disk", "logs/events.jsonl"),
]


def entry(values: tuple) -> dict:
    keys = ("id", "loopId", "iteration", "createdAt", "type", "lesson", "context", "tags", "confidence")
    return dict(zip(keys, values, strict=True))


def generate(root: Path) -> None:
    """Write the state folder."""
    (root / "memory").mkdir(parents=True)
    (root / "loops").mkdir()
    (root / "notes").mkdir()
    (root / "logs").mkdir()
    for values in SINGLE:
        (root / "memory" / f"{values[0]}.json").write_text(json.dumps(entry(values), indent=2))
    (root / "memory" / "memory.json").write_text(json.dumps([entry(values) for values in LISTED[:3]], indent=2))
    (root / "loops" / "ghi789.json").write_text(json.dumps({"loopId": "ghi789", "learnings": [entry(v) for v in LISTED[3:]]}))
    (root / "decisions.json").write_text(json.dumps({"decisions": DECISIONS}, indent=2))
    (root / "kb.json").write_text(json.dumps(KB, indent=2))
    (root / "preferences.json").write_text(json.dumps(PREFERENCES, indent=2))
    for name, text in NOTES.items():
        (root / name).write_text(text)
    (root / "logs" / "events.jsonl").write_text("\n".join(json.dumps(line) for line in LOG) + "\n")


def is_fragment(hit) -> bool:
    """A result from a JSON file that is one field of a record: a single line of text."""
    return hit.metadata.get("kind") in ("json", "jsonl") and len(hit.text.strip().splitlines()) == 1 and ": " not in hit.text


def found(hit, expected: str) -> bool:
    return hit.metadata.get("record_id") == expected or hit.metadata.get("file") == expected


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", type=Path, help="generate into this folder and keep it (default: a temporary one)")
    parser.add_argument("--top-k", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        base = args.keep or Path(temp)
        root, data = base / "state", base / "data"
        generate(root)
        subprocess.run([sys.executable, str(PROJECT / "scripts" / "index_personal.py"), "--quiet", "--data-dir", str(data), str(root)],
                       check=True, capture_output=True)
        from rag_search.core.config import load_settings
        from rag_search.search.retrieval import Searcher, SearchOptions

        searcher = Searcher(load_settings(data_dir=str(data), environ={}), "personal")
        firsts, fragments, misses = 0, [], []
        for question, expected in QUESTIONS:
            hits = searcher.search(question, SearchOptions(top_k=args.top_k)).hits
            if hits and found(hits[0], expected):
                firsts += 1
            else:
                misses.append({"query": question, "expected": expected,
                               "first": hits[0].metadata.get("record_id") or hits[0].metadata.get("heading") if hits else None})
            fragments += [{"query": question, "heading": hit.metadata.get("heading"), "text": hit.text} for hit in hits if is_fragment(hit)]
        searcher.close()
    print(json.dumps({"questions": len(QUESTIONS), "right_first": firsts, "right_first_rate": round(firsts / len(QUESTIONS), 3),
                      f"fragments_in_top_{args.top_k}": len(fragments), "misses": misses, "fragments": fragments}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
