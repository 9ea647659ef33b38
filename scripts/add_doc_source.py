#!/usr/bin/env python3
"""Register, update, list or remove documentation sources for the `docs` index."""

import argparse
import logging
import shutil
import sys

from rag_search.cli import use_project_venv

use_project_venv()

from rag_search import cli  # noqa: E402
from rag_search.config import chroma_server, data_dir  # noqa: E402
from rag_search.errors import EXIT_PARTIAL, ConfigError, IndexNotBuilt  # noqa: E402

log = logging.getLogger("rag_search")

EPILOG = """examples:
  add_doc_source.py --id k0s --name "k0s Documentation" --type git \\
      --url https://github.com/k0sproject/k0s.git --path docs/ --glob "**/*.md" --version v1.30.0
  add_doc_source.py --id argocd --name "ArgoCD Documentation" --type web \\
      --base-url https://argo-cd.readthedocs.io/en/stable/ --pages user-guide/sync-options/ operator-manual/
  add_doc_source.py --id team-notes --name "Team runbooks" --type local --path ~/runbooks --index
  add_doc_source.py --update --id k0s --version v1.31.0
  add_doc_source.py --list
  add_doc_source.py --remove argocd

fields: git needs --url (https, ssh, git or file; --path folder in the repository,
--glob relative to it, default **/*.md; --version tag, branch or commit, default the
default branch); web needs --base-url and --pages (relative to it) or --sitemap;
local needs --path (a folder). Ids are slugs: a-z, 0-9, ".", "_", "-".

registry, first found wins: --sources > RAG_SEARCH_SOURCES > references/sources.json.
stdout: one JSON document describing what was done."""

FIELD_FLAGS = {"name": "name", "type": "type", "url": "url", "path": "path", "glob": "glob", "version": "version",
               "base_url": "base_url", "pages": "pages", "sitemap": "sitemap"}


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("add_doc_source.py", __doc__, EPILOG)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--list", action="store_true", help="list registered sources and what is indexed of each")
    action.add_argument("--remove", metavar="ID", help="unregister a source and delete its chunks and cached clone")
    action.add_argument("--update", action="store_true", help="change fields of the existing source --id")
    parser.add_argument("--id", help="source id: a slug, also the name of its folder on disk")
    parser.add_argument("--name", help="a human-readable name")
    parser.add_argument("--type", choices=["git", "web", "local"])
    parser.add_argument("--url", help="git: repository URL")
    parser.add_argument("--path", help="git: folder in the repository; local: folder on disk")
    parser.add_argument("--glob", help="git/local: files to index, relative to --path (default **/*.md)")
    parser.add_argument("--version", help="git: tag, branch or commit (default: the default branch)")
    parser.add_argument("--base-url", dest="base_url", help="web: the documentation's base URL")
    parser.add_argument("--pages", nargs="+", metavar="PAGE", help="web: pages relative to --base-url (space or comma separated)")
    parser.add_argument("--sitemap", help="web: a sitemap URL, relative to --base-url or absolute")
    parser.add_argument("--index", action="store_true", help="index the source right after registering it")
    parser.add_argument("--sources", metavar="PATH", help="the registry file (default: see below)")
    cli.add_index_run_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cli.setup_logging(args.quiet)
    return cli.run(lambda: dispatch(args))


def dispatch(args: argparse.Namespace) -> int:
    from rag_search import registry

    registry_file = registry.registry_path(args.sources)
    if args.list:
        return list_sources(args, registry_file)
    if args.remove:
        return remove(args, registry_file)
    if not args.id:
        raise ConfigError("--id is required to add or update a source", hint="see add_doc_source.py --help")
    return add_or_update(args, registry_file)


def given_fields(args: argparse.Namespace) -> dict:
    fields = {field: getattr(args, flag) for field, flag in FIELD_FLAGS.items() if getattr(args, flag) is not None}
    if "pages" in fields:
        fields["pages"] = [page.strip() for item in fields["pages"] for page in item.split(",") if page.strip()]
    return fields


def add_or_update(args: argparse.Namespace, registry_file) -> int:
    from rag_search import registry

    fields = given_fields(args)
    result: dict = {}

    def change(reg: registry.Registry) -> None:
        existing = reg.get(args.id)
        if args.update:
            if existing is None:
                raise ConfigError(f"no source with id {args.id!r} in {registry_file}", hint="add it without --update")
            existing.update(fields)
            result.update(action="updated", source=existing)
        else:
            if existing is not None:
                raise ConfigError(f"a source with id {args.id!r} already exists", hint="use --update to change it")
            entry = {"id": args.id, **fields}
            reg.sources.append(entry)
            result.update(action="added", source=entry)

    registry.update(registry_file, change)
    result["registry"] = str(registry_file)
    code = 0
    if args.index:
        result["index"] = index_one(args, registry_file, result["source"])
        code = 0 if result["index"]["status"] == "ok" else EXIT_PARTIAL
    cli.emit_json(result)
    return code


def index_one(args: argparse.Namespace, registry_file, source: dict) -> dict:
    from rag_search.config import load_config
    from rag_search.embedding import find_model
    from rag_search.indexer import Pipeline
    from rag_search.sources.docs import index_sources, record_completions
    from rag_search.store import Store

    model = find_model()
    folder = data_dir(args.data_dir)
    store = Store.open_for_writing(folder, args.wait, chroma_server(args.chroma_url))
    try:
        pipeline = Pipeline(model, folder)
        summaries = index_sources(store, pipeline, [source], folder, load_config(), quiet=args.quiet)
        store.commit()
    finally:
        store.close()
    record_completions(registry_file, summaries)
    return summaries[0]


def list_sources(args: argparse.Namespace, registry_file) -> int:
    from rag_search import registry
    from rag_search.sources.docs import COLLECTION
    from rag_search.store import Store

    reg = registry.load(registry_file)
    try:
        store = Store.open_for_reading(data_dir(args.data_dir))
    except IndexNotBuilt:
        store = None
    sources = []
    for source in reg.sources:
        indexed = None
        if store is not None:
            documents = store.catalog.documents(COLLECTION, source["id"])
            state = store.catalog.source_state(COLLECTION, source["id"]) or {}
            indexed = {
                "documents": len(documents),
                "chunks": store.catalog.chunk_count(COLLECTION, source["id"]),
                "commit": state.get("commit"),
            }
        sources.append({**source, "indexed": indexed})
    if store is not None:
        store.close()
    cli.emit_json({"registry": str(registry_file), "sources": sources})
    return 0


def remove(args: argparse.Namespace, registry_file) -> int:
    from rag_search import registry
    from rag_search.indexer import remove_source
    from rag_search.sources.docs import COLLECTION, cache_dir
    from rag_search.store import Store

    source_id = args.remove
    reg = registry.load(registry_file)
    folder = data_dir(args.data_dir)
    chunks_removed = 0
    known_in_index = False
    if (folder / "CURRENT").exists():
        store = Store.open_for_writing(folder, args.wait, chroma_server(args.chroma_url))
        try:
            known_in_index = source_id in store.catalog.source_ids(COLLECTION)
            chunks_removed = remove_source(store, COLLECTION, source_id)
            store.commit()
        finally:
            store.close()
    if reg.get(source_id) is None and not known_in_index:
        raise ConfigError(f"no source with id {source_id!r} in {registry_file} or in the index", hint="see add_doc_source.py --list")
    shutil.rmtree(cache_dir(folder, source_id), ignore_errors=True)

    def change(current: registry.Registry) -> None:
        current.sources[:] = [source for source in current.sources if source.get("id") != source_id]

    registry.update(registry_file, change)
    cli.emit_json({"action": "removed", "id": source_id, "chunks_removed": chunks_removed, "registry": str(registry_file)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
