#!/usr/bin/env python3
"""MCP server (stdio) for Claude Code and other MCP clients: search, status, get_document and memory, kept warm."""

import argparse
import sys

from rag_search.core.launch import use_project_venv

use_project_venv()

from rag_search.core import cli, logs  # noqa: E402

EXIT_CODES = (0, 1, 2, 5, 6)
MEANINGS = {0: "the client closed the connection", 6: "bad input: the config file, or a data dir another user owns or can write"}

EPILOG = """Speaks MCP over stdin/stdout; stderr is its log. Set it up for Claude Code with
  claude mcp add rag-search -- ~/.claude/skills/rag-search/scripts/mcp_server.py

tools (each returns the same JSON as the script named):
  search        query, index, top_k, mode, source, since, until, type, tag, min_score, per_file,
                max_tokens, metadata_only, recency_half_life, rerank, explain, verbose, no_refresh
                (search.py)
  get_document  reference (a result's file, path, url or id), context, section, max_chars (get.py)
  status        what is indexed and how fresh (status.py)
  memory_list   since, type, tag, loop_id (memory.py list)
  memory_query  text, top_k, since, type, tag, loop_id (memory.py query)
  memory_add    type, lesson, context, tags, confidence, loop_id, iteration, id (memory.py add:
                indexed at once; the same call twice records one entry)
  memory_remove ids, confirm (memory.py remove)
  memory_update id, lesson, type, context, tags, confidence, confirm (memory.py update)
memory_remove and memory_update change nothing unless confirm is true (a tool cannot prompt:
confirm: true is memory.py's --yes); without it they answer with what they would change.
Errors come back as tool errors whose text is {"error": {"code", "type", "message", "hint"}};
so do calls outside a tool's schema and of a tool that does not exist (code 2, "UsageError"): an
argument the tool does not take (no guess at what was meant), an empty source, type or tag (as
search.py and memory.py refuse them). A list argument (source, type, tag) takes one string.

The model and the open index stay loaded between calls; before each call, a
collection that an index run published since is reopened (and the old generation
released for deletion). The settings (--data-dir, --chroma-url, the RAG_SEARCH_*
variables, the config file) are read once, at start."""


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("mcp_server.py", __doc__, EPILOG, EXIT_CODES, MEANINGS)
    parser.add_argument("--sources", metavar="PATH", help="the registry file (default: $RAG_SEARCH_SOURCES or references/sources.json)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.setup_logging(quiet=True)
    return cli.run(lambda: serve(args), json_errors=False)  # stdout is the protocol's: errors go to stderr only


def serve(args: argparse.Namespace) -> int:
    from rag_search.serve.server import RagSearchServer

    server = RagSearchServer(cli.settings(args))
    server.warm_up()
    try:
        server.mcp.run("stdio")
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
