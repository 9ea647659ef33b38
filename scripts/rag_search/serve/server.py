"""The MCP server's tools: search, status and get_document over stdio, with the model and the index kept warm.

Built on the official MCP Python SDK (MCPServer). Every tool runs its work on
one worker thread, so the stores' SQLite connections are always used from the
thread that opened them and calls never overlap, while the event loop stays
free for the protocol (pings, cancellations). The warm state is warm.WarmIndex,
the same core the resident searcher answers search.py with; before each call it
follows index runs. The tools that stand for a reading script (search, get_document,
status, memory_list, memory_query) answer with that script's own code (answers.py),
given the tool's arguments as the script's options: the same JSON, and what the
script says on stderr goes to our log. Our errors come back as tool errors whose
text is the same JSON error document the scripts print; so do calls outside a
tool's schema (an argument it does not take, too: the schemas say
additionalProperties: false) and calls of a tool that does not exist.

Adding a tool: an `async def` with typed, documented parameters that returns
`await self._run(work)` (or `await self._answer(answers.<script's answer>, **its
options)`), listed in `_tools`.
"""

import argparse
import asyncio
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent
from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from .. import __version__
from ..core import dates
from ..core.cli import error_payload, non_empty
from ..core.config import Settings
from ..core.errors import EXIT_FAILURE, EXIT_USAGE, RagSearchError, UsageError
from ..text.page_kind import PageKind
from . import answers, memory, memory_edits
from .warm import WarmIndex

log = logging.getLogger("rag_search")


def _filter_value(value: str) -> str:
    """cli.non_empty's check of a filter's value (an empty one would match nothing), failing as a schema violation does."""
    try:
        return non_empty(value)
    except argparse.ArgumentTypeError as exc:
        raise PydanticCustomError("empty_value", str(exc)) from None


def _listed(value):
    """A list argument given as one string (a client's shortcut) as the list of it."""
    return [value] if isinstance(value, str) else value


# A filter's values (source, type, tag): a list, or one string taken as the list of it; none of them blank.
Names = Annotated[list[Annotated[str, AfterValidator(_filter_value)]] | None,
                  BeforeValidator(_listed, json_schema_input_type=str | list[str] | None)]

# Page kinds (--kind): a list, or one string taken as the list of it.
Kinds = Annotated[list[PageKind] | None, BeforeValidator(_listed, json_schema_input_type=str | list[str] | None)]

FRESHNESS_PAUSE = 1.0  # seconds between two looks at the personal roots: a burst of calls pays for one walk

INSTRUCTIONS = """Semantic search over the user's own notes, decisions and memory (personal) and registered
documentation (docs). Search in plain words or exact identifiers; cite file, heading and date (personal) or url
(docs); read more with get_document (a result's file or id); see what is indexed and how fresh with status."""


class RagSearchServer:
    """The tools, and the warm state they share (a WarmIndex), used from one worker thread."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rag-search")
        self.warm = WarmIndex(settings, FRESHNESS_PAUSE)
        tools = [_closed(Tool.from_function(tool, structured_output=False)) for tool in self._tools()]
        self.mcp = _OurErrors("rag-search", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING", tools=tools)

    def _tools(self) -> list:
        return [self.search, self.get_document, self.status, self.memory_list, self.memory_query, self.memory_add,
                self.memory_remove, self.memory_update]

    def warm_up(self) -> None:
        """Load the model, open the index and run the model once, on the worker, while the client connects: the
        first call waits for it instead of paying for it. A failure here is only logged; that call reports it."""

        def warm():
            try:
                self.warm.warm_up()
            except RagSearchError as exc:
                log.warning("not ready yet: %s", exc)

        self.worker.submit(warm)

    def close(self) -> None:
        self.worker.submit(self.warm.close).result()
        self.worker.shutdown()

    async def search(
        self,
        query: Annotated[str, Field(description="what to look for, in plain words or exact identifiers")],
        index: Annotated[Literal["personal", "docs", "all"], Field(description="which collection to search")] = "all",
        top_k: Annotated[int, Field(ge=1, le=100, description="number of results")] = 5,
        mode: Annotated[Literal["hybrid", "dense", "lexical"], Field(description="ranking")] = "hybrid",
        source: Annotated[Names, Field(description="only these sources: 'personal' or doc source ids")] = None,
        since: Annotated[str | None, Field(description="only chunks dated on or after: YYYY-MM-DD, ISO time, 7d, 2w, 3m, 1y")] = None,
        until: Annotated[str | None, Field(description="only chunks dated on or before (same forms as since)")] = None,
        type: Annotated[Names, Field(description="only records of these types (any of them): decision, lesson_learned…")] = None,
        tag: Annotated[Names, Field(description="only records and notes with these tags (all of them, whole tags)")] = None,
        kind: Annotated[Kinds, Field(description="only documentation pages of these kinds (any of them): guide, reference, "
                                                 "changelog (release notes, announcements), blog")] = None,
        min_score: Annotated[float | None, Field(ge=0, le=1, description="drop results whose cosine score is below")] = None,
        per_file: Annotated[int, Field(ge=0, le=100, description="at most this many chunks per file, 0 = no limit")] = 2,
        max_tokens: Annotated[int | None, Field(ge=1, description="at most about this many tokens of answer as printed")] = None,
        metadata_only: Annotated[bool, Field(description="paths, headings, scores and metadata; no chunk text")] = False,
        recency_half_life: Annotated[float | None, Field(gt=0, description="rank newer personal chunks higher (days)")] = None,
        rerank: Annotated[bool, Field(description="reorder the top with the configured cross-encoder, if any")] = False,
        explain: Annotated[bool, Field(description="add each result's ranks and scores per stage")] = False,
        verbose: Annotated[bool, Field(description="every stored metadata field, not only what to cite")] = False,
        no_refresh: Annotated[bool, Field(description="do not bring in personal files changed since the index (search.py "
                                                      "--no-refresh): the index as it is")] = False,
    ) -> str | CallToolResult:
        """Search the personal index and the documentation index; the same options and JSON as search.py.

        Results: rank, score (cosine 0-1), source, file, id, chunk, metadata (heading, date, url or path, version).
        more (index all, hybrid): per collection, results likely to answer that were not shown; search that index.
        partial: doc sources whose index run (a first index, a large update) is not done yet, and how far it got."""
        return await self._answer(answers.search, query=query, index=index, top_k=top_k, mode=mode, source=source, since=since,
                                  until=until, types=type, tags=tag, kinds=kind, min_score=min_score, per_file=per_file,
                                  max_tokens=max_tokens, metadata_only=metadata_only, recency_half_life=recency_half_life,
                                  rerank=rerank, explain=explain, verbose=verbose, no_refresh=no_refresh)

    async def get_document(
        self,
        reference: Annotated[str, Field(description="a result's file, metadata.path, metadata.url, or id (a chunk)")],
        context: Annotated[int | None, Field(ge=0, le=50, description="with a chunk id: the chunks before and after it "
                                             "too (default 1)")] = None,
        section: Annotated[str | None, Field(description="of a document: only this section and its subsections (a heading, "
                                             "or a result's heading path)")] = None,
        max_chars: Annotated[int | None, Field(ge=1, description="the whole answer in at most this many characters: the "
                                               "outline cut to the headings near the text shown, then the text; with a chunk "
                                               "id, the document's text around that chunk")] = None,
    ) -> str | CallToolResult:
        """Read what a result points to: the whole document as indexed, one section of it, one chunk with its
        neighbours, or (a chunk id with max_chars) the document's text around that chunk (as get.py). Cut by max_chars:
        "truncated", "total_chars", "text_start", "text_end" (the characters shown), "outline_omitted" {"before", "after"}."""
        return await self._answer(answers.get, reference=reference, context=context, section=section, max_chars=max_chars)

    async def status(self) -> str | CallToolResult:
        """What is indexed and how fresh: per collection, personal root and doc source; the daily timer (as status.py)."""
        return await self._answer(answers.status)

    async def memory_list(
        self,
        since: Annotated[str | None, Field(description="created on or after: YYYY-MM-DD, ISO time, 7d, 2w, 3m, 1y")] = None,
        type: Annotated[Names, Field(description="only these types: lesson_learned, failure_pattern…")] = None,
        tag: Annotated[Names, Field(description="only entries with all these tags")] = None,
        loop_id: Annotated[str | None, Field(description="only entries of this loop")] = None,
    ) -> str | CallToolResult:
        """The agent's memory entries (lessons, failure and success patterns), newest first (as memory.py list)."""
        return await self._answer(answers.memory_list, since=since, types=type, tags=tag, loop_id=loop_id)

    async def memory_query(
        self,
        text: Annotated[str, Field(description="what to recall, in plain words")],
        top_k: Annotated[int, Field(ge=1, le=100, description="number of entries")] = 5,
        since: Annotated[str | None, Field(description="created on or after (same forms as search's since)")] = None,
        type: Annotated[Names, Field(description="only these types")] = None,
        tag: Annotated[Names, Field(description="only entries with all these tags")] = None,
        loop_id: Annotated[str | None, Field(description="only entries of this loop")] = None,
    ) -> str | CallToolResult:
        """Recall memory entries by meaning and keywords, best first (as memory.py query)."""
        return await self._answer(answers.memory_query, text=text, top_k=top_k, since=since, types=type, tags=tag, loop_id=loop_id)

    async def memory_add(
        self,
        type: Annotated[str, Field(description="lesson_learned, failure_pattern, success_pattern, or another word")],
        lesson: Annotated[str, Field(description="what was learned, in one sentence")],
        context: Annotated[str | None, Field(description="where it came from: a file, a task")] = None,
        tags: Annotated[list[str] | None, Field(description="tags")] = None,
        confidence: Annotated[float | None, Field(ge=0, le=1, description="how sure, 0 to 1")] = None,
        loop_id: Annotated[str | None, Field(description="the loop that learned it")] = None,
        iteration: Annotated[int | None, Field(description="the loop's iteration")] = None,
        id: Annotated[str | None, Field(description="the entry's id; default: derived from type, lesson, context, loop_id and "
                                                    "iteration, so the same call twice records one entry")] = None,
    ) -> str | CallToolResult:
        """Record a memory entry in the memory file and index it at once: the next search or memory_query finds it.
        A retry does not duplicate it ("created": false); "indexed" says whether the index follows yet (as memory.py add)."""

        def work():
            return memory.record(self.settings, type, lesson, context, tags, confidence, loop_id, iteration, id)

        return await self._run(work)

    async def memory_remove(
        self,
        ids: Annotated[list[str], Field(min_length=1, description="ids of the entries to delete (memory_list shows them)")],
        confirm: Annotated[bool, Field(description="true: delete them (each file changed is backed up first); "
                                                   "false: only say what would be deleted")] = False,
    ) -> str | CallToolResult:
        """Delete memory entries by id, wherever memory_list finds them (as memory.py remove; confirm: true is its --yes).
        Without confirm nothing changes: the answer says what would ("would_remove")."""

        def work():
            return _preview(memory_edits.remove(self.settings, ids, apply=confirm), confirm)

        return await self._run(work)

    async def memory_update(
        self,
        id: Annotated[str, Field(description="the entry's id (memory_list shows them)")],
        lesson: Annotated[str | None, Field(description="a new lesson")] = None,
        type: Annotated[str | None, Field(description="a new type")] = None,
        context: Annotated[str | None, Field(description="a new context ('' removes it)")] = None,
        tags: Annotated[list[str] | None, Field(description="new tags ([] clears them)")] = None,
        confidence: Annotated[float | None, Field(ge=0, le=1, description="a new confidence, 0 to 1")] = None,
        confirm: Annotated[bool, Field(description="true: change it (each file changed is backed up first); "
                                                   "false: only show the change")] = False,
    ) -> str | CallToolResult:
        """Correct a memory entry by id: its id and createdAt stay, updatedAt is set (as memory.py update; confirm: true is
        its --yes). Without confirm nothing changes: the answer shows each entry before and after ("would_update")."""

        def work():
            answer = memory_edits.update(self.settings, id, type, lesson, context, tags, confidence, apply=confirm)
            return _preview(answer, confirm)

        return await self._run(work)

    async def _answer(self, answer, **options) -> str | CallToolResult:
        """The answer of `answer` (answers.py: a reading script's own) to a tool's arguments, named as the script's
        options (a date parsed as its command line parses it): the script's JSON; what it says on stderr goes to our log."""

        def work():
            args = argparse.Namespace(**{name: _date(value, name) if name in DATES else value for name, value in options.items()})
            return answer(args, self.settings, self.warm, say=_log)

        return await self._run(work)

    async def _run(self, work) -> str | CallToolResult:
        """Run `work` on the worker thread: its result as compact JSON, or a tool error (is_error) whose text is our
        JSON error document, the one the scripts print, with our message and hint."""
        try:
            result = await asyncio.wrap_future(self.worker.submit(work))
        except RagSearchError as exc:
            return _tool_error(error_payload(exc.exit_code, type(exc).__name__, exc.message, exc.hint))
        except Exception as exc:
            log.exception("a tool failed unexpectedly")
            return _tool_error(error_payload(EXIT_FAILURE, type(exc).__name__, str(exc), "this is a bug; the server log has the traceback"))
        return json.dumps(result, ensure_ascii=False)


class _OurErrors(MCPServer):
    """The SDK's server, except that a call outside the tools' schemas comes back as our JSON error (a usage error,
    exit code 2 for the scripts), naming the tool's fields that are wrong and what they must be, never the values given;
    and so does a call of a tool that does not exist."""

    async def call_tool(self, name, arguments, context=None):
        tools = {tool.name: tool for tool in await self.list_tools()}
        if name not in tools:
            return _usage_error(f"no such tool; the tools: {', '.join(tools)}", "tools/list describes each one")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            return _schema_error(name, list(tools[name].input_schema["properties"]), exc.__cause__.errors())


def _schema_error(name: str, arguments: list[str], errors: list[dict]) -> CallToolResult:
    """The usage error of a call outside `name`'s schema: each field that is wrong and why (pydantic's words but for an
    argument the tool does not take, when the hint lists those it does)."""
    problems = "; ".join(f"{'.'.join(str(part) for part in error['loc'])}: "
                         f"{'unknown argument' if error['type'] == 'extra_forbidden' else error['msg']}" for error in errors)
    hint = "the tool's input schema (tools/list) gives each argument's form"
    if any(error["type"] == "extra_forbidden" for error in errors):
        hint = f"{name} takes {', '.join(arguments) or 'no arguments'}; {hint}"
    return _usage_error(f"{name}: {problems}", hint)


def _closed(tool: Tool) -> Tool:
    """`tool`, refusing the arguments it does not take, which the SDK ignores (topk: 3 searched with top_k 5), and
    saying so in tools/list (additionalProperties: false)."""
    model = tool.fn_metadata.arg_model
    closed: type[ArgModelBase] = type(model.__name__, (model,),
                                      {"__module__": model.__module__, "model_config": ConfigDict(extra="forbid")})
    tool.fn_metadata.arg_model = closed
    tool.parameters = closed.model_json_schema(by_alias=True)
    return tool


def _usage_error(message: str, hint: str) -> CallToolResult:
    return _tool_error(error_payload(EXIT_USAGE, "UsageError", message, hint))


def _preview(answer: dict, confirmed: bool) -> dict:
    """A tool cannot prompt: without confirm the answer is what would change, and how to apply it."""
    return answer if confirmed else {**answer, "hint": "nothing was changed: call again with confirm: true to apply it "
                                                       "(each file changed is backed up first)"}


def _tool_error(payload: dict) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))], is_error=True)


def _log(line: str) -> None:
    """A line a script says on stderr ("note: …", "warning: …"), in our log, whose lines say their level themselves."""
    log.warning("%s", line.removeprefix("warning: "))


DATES = ("since", "until")  # the options whose value is a date, given to a tool as text


def _date(value: str | None, name: str) -> float | None:
    if value is None:
        return None
    try:
        return dates.parse_bound(value)
    except ValueError as exc:
        raise UsageError(f"{name}: {exc}", hint="dates are YYYY-MM-DD, an ISO time, or 7d, 2w, 3m, 1y ago") from None

