#!/usr/bin/env python3
"""Register, update, list or remove documentation sources for the `docs` index."""

import argparse
import logging
import sys

from rag_search.core.launch import use_project_venv

use_project_venv()

from rag_search.core import cli, logs  # noqa: E402
from rag_search.core.errors import EXIT_EMPTY, EXIT_PARTIAL, ConfigError, IndexNotBuilt, RagSearchError, UsageError  # noqa: E402

log = logging.getLogger("rag_search")

EPILOG = """examples:
  add_doc_source.py --id k0s --name "k0s Documentation" --type git \\
      --url https://github.com/k0sproject/k0s.git --path docs/ --version v1.30.0
  add_doc_source.py --id pytest --name "pytest" --type git --url https://github.com/pytest-dev/pytest.git \\
      --path doc/en --glob "**/*.rst" --exclude changelog.rst --exclude "announce/" --index
  add_doc_source.py --id argocd --name "ArgoCD Documentation" --type web \\
      --base-url https://argo-cd.readthedocs.io/en/stable/ --pages user-guide/sync-options/ operator-manual/
  add_doc_source.py --id team-notes --name "Team runbooks" --type local --path ~/runbooks --index
  add_doc_source.py --update --id k0s --version v1.31.0
  add_doc_source.py --list
  add_doc_source.py --remove argocd

fields: git needs --url (https, ssh, git or file; --path folder in the repository;
--version tag, branch or commit, default the default branch); web needs --base-url and
--pages (relative to it) or --sitemap; local needs --path (a folder). Ids are slugs:
a-z, 0-9, ".", "_", "-".

selection: git and local index the files under --path that match a --glob and no
--exclude (both repeatable, gitignore syntax, relative to --path; default globs
**/*.md, **/*.mdx, **/*.markdown, **/*.rst, **/*.rest). Web takes --exclude over a
page's URL path below --base-url, applied before max_pages. --update with --glob or
--exclude replaces that list; files no longer selected are removed on the next run
(not taken for an outage). A source that matches nothing ends "empty" (exit 10 with
--index), with a warning naming its globs and the file types it saw.

registry, first found wins: --sources > RAG_SEARCH_SOURCES > references/sources.json.
stdout: one JSON document describing what was done."""

FIELD_FLAGS = {"name": "name", "type": "type", "url": "url", "path": "path", "globs": "glob", "exclude": "exclude",
               "version": "version", "base_url": "base_url", "pages": "pages", "sitemap": "sitemap"}


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("add_doc_source.py", __doc__, EPILOG, cli.DOCS_INDEX_EXIT_CODES)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--list", action="store_true", help="list registered sources and what is indexed of each")
    action.add_argument("--remove", metavar="ID", help="unregister a source and delete its chunks and cached clone")
    action.add_argument("--update", action="store_true", help="change fields of the existing source --id")
    parser.add_argument("--id", help="source id: a slug, also the name of its folder on disk")
    parser.add_argument("--name", help="a human-readable name")
    parser.add_argument("--type", choices=["git", "web", "local"])
    parser.add_argument("--url", help="git: repository URL")
    parser.add_argument("--path", help="git: folder in the repository; local: folder on disk")
    parser.add_argument("--glob", action="append", metavar="GLOB",
                        help="git/local: files to index, relative to --path (repeatable; default: see selection below)")
    parser.add_argument("--exclude", action="append", metavar="PATTERN",
                        help="files (git/local, relative to --path) or page paths (web) not to index (repeatable)")
    parser.add_argument("--version", help="git: tag, branch or commit (default: the default branch)")
    parser.add_argument("--base-url", dest="base_url", help="web: the documentation's base URL")
    parser.add_argument("--pages", nargs="+", metavar="PAGE", help="web: pages relative to --base-url (space or comma separated)")
    parser.add_argument("--sitemap", help="web: a sitemap URL, relative to --base-url or absolute")
    parser.add_argument("--index", action="store_true", help="index the source right after registering it")
    parser.add_argument("--keep-on-failure", action="store_true",
                        help="with --index: keep the added or changed source in the registry even if indexing it fails")
    parser.add_argument("--sources", metavar="PATH", help="the registry file (default: see below)")
    cli.add_index_run_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.setup_logging(args.quiet)
    return cli.run(lambda: dispatch(args))


def dispatch(args: argparse.Namespace) -> int:
    settings = cli.settings(args)
    if args.list:
        return list_sources(settings)
    if args.remove:
        return remove(args.remove, settings)
    if not args.id:
        raise UsageError("--id is required to add or update a source", hint="see add_doc_source.py --help")
    return add_or_update(args, settings)


def given_fields(args: argparse.Namespace) -> dict:
    fields = {field: getattr(args, flag) for field, flag in FIELD_FLAGS.items() if getattr(args, flag) is not None}
    if "pages" in fields:
        fields["pages"] = [page.strip() for item in fields["pages"] for page in item.split(",") if page.strip()]
    if "globs" in fields and args.update:
        fields["glob"] = None  # an entry written before "globs" holds one "glob": the new list replaces it
    return fields


def add_or_update(args: argparse.Namespace, settings) -> int:
    from rag_search.sources import registry

    fields = given_fields(args)
    result: dict = {}

    def change(reg: registry.Registry) -> None:
        if args.update:
            spec = reg.update(args.id, fields)
        else:
            spec = reg.add({"id": args.id, **fields})
        result.update(action="updated" if args.update else "added", source=reg.describe(args.id), spec=spec)

    before = registry.load(settings.registry)
    check_given(args, fields, before)
    previous = before.describe(args.id) if before.get(args.id) is not None else None
    registry.update(settings.registry, change)
    spec = result.pop("spec")
    result["registry"] = str(settings.registry)
    code = 0
    if args.index:
        try:
            result["index"] = index_one(args, settings, spec)
        except RagSearchError:
            if not args.keep_on_failure:
                undo(settings.registry, args.id, previous)
            raise
        if result["index"]["status"] != "ok":
            code = EXIT_EMPTY if result["index"]["status"] == "empty" else EXIT_PARTIAL
            if not args.keep_on_failure:
                undo(settings.registry, args.id, previous)
                result["action"] = "restored" if previous else "not added"
    cli.emit_json(result)
    return code


def check_given(args: argparse.Namespace, fields: dict, reg) -> None:
    """The source as this command would leave it, checked before the registry is touched: a bad flag is the command
    line's fault (exit 2), not the registry file's (which would name "sources.json: source #3")."""
    from rag_search.sources.specs import FIELDS, spec_from_entry

    entry = {key: value for key, value in {**(reg.describe(args.id) if args.update else {}), "id": args.id, **fields}.items()
             if value is not None}
    kind = entry.get("type")
    misplaced = [name for name, value in fields.items() if kind in FIELDS and value is not None
                 and name not in ("name", "type", *FIELDS[kind]["required"], *FIELDS[kind]["optional"])]
    if misplaced:
        flag = FIELD_FLAGS[misplaced[0]].replace("_", "-")
        raise UsageError(f"--{flag} does not apply to a {kind} source", hint="see add_doc_source.py --help")
    try:
        spec_from_entry(entry, "the source given")
    except ConfigError as exc:
        raise UsageError(exc.message, hint='fix the flag it names ("base_url" is --base-url, "globs" --glob); '
                                           'see add_doc_source.py --help') from None


def undo(registry_file, source_id: str, previous: dict | None) -> None:
    """Put the registry back as it was for this source: a change whose first index failed is not kept."""
    from rag_search.sources import registry

    def change(reg: registry.Registry) -> None:
        if previous is None:
            reg.remove(source_id)
        else:
            reg.update(source_id, {key: previous.get(key) for key in set(previous) | set(reg.describe(source_id)) if key != "id"})

    registry.update(registry_file, change)
    log.warning("%s was not indexed, so the registry change was undone (--keep-on-failure keeps it)", source_id)


def index_one(args: argparse.Namespace, settings, spec) -> dict:
    from rag_search.index.runs import index_run
    from rag_search.sources.docs import COLLECTION, index_sources, record_runs, sources_left_out

    with index_run(settings, COLLECTION, left_out=lambda indexed: sources_left_out(indexed, {spec.id})) as run:
        summaries = index_sources(run.store, run.pipeline, [spec], settings, quiet=args.quiet)
    record_runs(settings.registry, summaries)
    return summaries[0]


def list_sources(settings) -> int:
    from rag_search.sources import registry
    from rag_search.sources.docs import COLLECTION
    from rag_search.store.store import Store

    reg = registry.load(settings.registry)
    try:
        store = Store.open_for_reading(settings, COLLECTION)
    except IndexNotBuilt:
        store = None
    sources = []
    for spec in reg.sources:
        indexed = None
        if store is not None:
            indexed = {
                "documents": len(store.documents(spec.id)),
                "chunks": store.chunk_count(spec.id),
                "commit": (store.source_state(spec.id) or {}).get("commit"),
            }
        sources.append({**reg.describe(spec.id), "indexed": indexed})
    if store is not None:
        store.close()
    cli.emit_json({"registry": str(settings.registry), "sources": sources})
    return 0


def remove(source_id: str, settings) -> int:
    from rag_search.core.datadir import DataDir
    from rag_search.index.runs import index_run
    from rag_search.sources import registry
    from rag_search.sources.docs import COLLECTION
    from rag_search.store.store import Store

    reg = registry.load(settings.registry)
    chunks_removed = 0
    known_in_index = False
    if Store.is_built(settings, COLLECTION):
        with index_run(settings, COLLECTION, embeds=False) as run:
            known_in_index = source_id in run.store.source_ids()
            chunks_removed = run.store.remove_source(source_id)
    if reg.get(source_id) is None and not known_in_index:
        raise ConfigError(f"no source with id {source_id!r} in {settings.registry} or in the index", hint="see add_doc_source.py --list")
    DataDir(settings.data_dir).remove_source_folder(source_id)
    if reg.get(source_id) is not None:
        registry.update(settings.registry, lambda current: current.remove(source_id))
    cli.emit_json({"action": "removed", "id": source_id, "chunks_removed": chunks_removed, "registry": str(settings.registry)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
