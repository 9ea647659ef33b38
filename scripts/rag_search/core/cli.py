"""What the scripts share: argument parsing, JSON on stdout, exit codes (launch.py: the venv; logs.py: stderr logging).

stdout carries exactly one JSON document (or the --format text rendering);
everything else goes to stderr. Package code raises typed errors; `run` turns
them into one `error: … (hint: …)` line, a JSON error object on stdout, and the
documented exit code.
"""

import argparse
import json
import signal
import sys

from .config import DEFAULT_WAIT_SECONDS, Settings, load_settings
from .errors import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_STORE,
    EXIT_TERMINATED,
    EXIT_USAGE,
    STOPPED_EXITS,
    RagSearchError,
    exit_codes_help,
    is_disk_full,
)

INDEX_EXIT_CODES = (0, 1, 2, 4, 5, 6, 7, 8, 9)  # what the scripts that write the index can return
DOCS_INDEX_EXIT_CODES = (*INDEX_EXIT_CODES, 10)  # and those that index doc sources, one of which may match nothing
STOPPED_HINT = ("the index published before still serves (a stopped index run publishes nothing and removes its unfinished "
                "work); run the command again if it is still needed")


class Parser(argparse.ArgumentParser):
    """argparse, keeping the script contract for usage errors too: exit 2, one line on stderr, the JSON error on stdout.

    No abbreviations, for every parser and subcommand's parser (they are made of this class): argparse takes the prefix
    of one option for it, a silent guess (memory.py add --tag a --tag b was --tags b)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})

    def parse_args(self, args=None, namespace=None):
        self._argv = sys.argv[1:] if args is None else list(args)
        return super().parse_args(args, namespace)

    def add_argument(self, *args, **kwargs):
        """argparse's, except that its check of the argument's metavar gets a formatter of a fixed width: making one
        asks the terminal for its width (importing shutil), and a warm search.py made some twenty."""
        self._checking = True
        try:
            return super().add_argument(*args, **kwargs)
        finally:
            self._checking = False

    def _get_formatter(self):
        if getattr(self, "_checking", False):
            return self.formatter_class(prog=self.prog, width=80)
        return super()._get_formatter()

    def error(self, message: str):
        hint = f"see {self.prog} --help"
        print(f"error: {message} (hint: {hint})", file=sys.stderr)
        if not _wants_text(getattr(self, "_argv", sys.argv[1:])):
            emit_json(error_payload(EXIT_USAGE, "UsageError", message, hint))
        sys.exit(EXIT_USAGE)


def _wants_text(argv: list[str]) -> bool:
    """Whether the command line asks for --format text (which prints no JSON), read before parsing could finish."""
    return "--format=text" in argv or any(a == "--format" and b == "text" for a, b in zip(argv, argv[1:], strict=False))


def make_parser(prog: str, description: str, epilog: str, exit_codes: tuple[int, ...], meanings: dict[int, str] | None = None,
                chroma_url: bool = True) -> argparse.ArgumentParser:
    """A parser whose --help ends with `epilog` and the script's own `exit_codes` (with the script's own words for
    some, in `meanings`), and takes --data-dir (and --chroma-url)."""
    parser = Parser(
        prog=prog,
        description=description,
        epilog=f"{epilog}\n\n{exit_codes_help(tuple(dict.fromkeys((*exit_codes, *STOPPED_EXITS))), meanings)}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data-dir", help="store folder (default: $RAG_SEARCH_HOME or ~/.claude/data/rag-search)")
    if chroma_url:
        parser.add_argument("--chroma-url", metavar="URL",
                            help="use the Chroma server at URL instead of the local store (default: $RAG_SEARCH_CHROMA_URL); "
                                 "headers for a proxy come from $RAG_SEARCH_CHROMA_HEADERS")
    return parser


def add_index_run_arguments(parser: argparse.ArgumentParser, allow_shrink: bool = False) -> None:
    """--quiet and --wait (and --allow-shrink) for the scripts that write the index (one run writes a collection at a time)."""
    parser.add_argument("--quiet", action="store_true",
                        help="no progress output, nor the warnings every run repeats that the JSON summary reports (a skipped "
                             "file); other warnings and errors still go to stderr")
    parser.add_argument(
        "--wait", type=float, default=DEFAULT_WAIT_SECONDS, metavar="SECONDS",
        help=f"how long to wait for another index run to finish before giving up with exit 8 (default {DEFAULT_WAIT_SECONDS:g})",
    )
    if allow_shrink:
        parser.add_argument(
            "--allow-shrink", action="store_true",
            help="accept a source or root that lists nothing, or less than half of what it had, and remove what is gone "
                 "(without it such a listing is taken for an outage: the source fails and keeps its chunks)",
        )


def number_in(low: float, high: float, kind=int):
    """An argparse type: a number (int or float) from `low` to `high`."""

    def parse(value: str):
        number = kind(value)
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}")
        return number

    parse.__name__ = kind.__name__  # argparse says "invalid float value: 'high'"
    return parse


def non_empty(value: str) -> str:
    """An argparse type for a filter's value: an empty one would match nothing, an answer that looks like 'no match'."""
    if not value.strip():
        raise argparse.ArgumentTypeError("empty value")
    return value


def date_bound(value: str) -> float:
    """An argparse type: --since/--until values as epoch seconds (dates.parse_bound)."""
    from .dates import parse_bound

    try:
        return parse_bound(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def settings(args: argparse.Namespace, **extra) -> Settings:
    """The settings for this command line: its flags over the environment, the config file and the defaults."""
    return load_settings(data_dir=args.data_dir, chroma_url=getattr(args, "chroma_url", None), sources=getattr(args, "sources", None),
                         wait=getattr(args, "wait", None), **extra)


def to_json(payload: dict) -> str:
    """Indented for a person at a terminal; one line for an agent or a pipe (whitespace costs context)."""
    return json.dumps(payload, ensure_ascii=False, indent=2 if sys.stdout.isatty() else None)


def emit_json(payload: dict) -> None:
    print(to_json(payload), flush=True)


def error_payload(code: int, kind: str, message: str, hint: str | None) -> dict:
    """The JSON error document, the same on stdout and in MCP tool errors."""
    return {"error": {"code": code, "type": kind, "message": message, "hint": hint}}


class Terminated(KeyboardInterrupt):
    """SIGTERM (systemd stopping the timer's run), raised where the process is, so it ends as Ctrl-C does: the `finally`
    blocks run (an index run removes its unfinished work) and the error is reported."""


def _terminate(signum, frame):
    raise Terminated()


def run(action, json_errors: bool = True) -> int:
    """Call `action` (returning an exit code or None) and map failures to exit codes."""
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return action() or 0
    except RagSearchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if json_errors:
            emit_json(error_payload(exc.exit_code, type(exc).__name__, exc.message, exc.hint))
        return exc.exit_code
    except KeyboardInterrupt as exc:
        return _stopped(exc, json_errors)
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away; nothing left to report to
        return EXIT_FAILURE
    except Exception as exc:
        if (stopped := _stopped_by(exc)) is not None:
            return _stopped(stopped, json_errors)
        if is_disk_full(exc):
            message, hint = f"the disk is full: {exc}; the previous index still serves", "free disk space and rerun"
            print(f"error: {message} (hint: {hint})", file=sys.stderr)
            if json_errors:
                emit_json(error_payload(EXIT_STORE, "DiskFull", message, hint))
            return EXIT_STORE
        import traceback  # here: a search answered by the resident searcher never needs it

        traceback.print_exc()
        print(f"error: unexpected {type(exc).__name__}: {exc} (hint: this is a bug; please report the traceback above)", file=sys.stderr)
        if json_errors:
            emit_json(error_payload(EXIT_FAILURE, type(exc).__name__, str(exc), "this is a bug"))
        return EXIT_FAILURE


def _stopped_by(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM behind `exc`, if any: one that comes while a native module is being imported reaches us as
    an ImportError ("initialization failed") caused by it."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def _stopped(exc: KeyboardInterrupt, json_errors: bool) -> int:
    """Exit 130 for Ctrl-C, 143 for SIGTERM, with the error line and the JSON error like any other failure."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the report short
    code, kind, message = ((EXIT_TERMINATED, "Terminated", "stopped by SIGTERM") if isinstance(exc, Terminated)
                           else (EXIT_INTERRUPTED, "Interrupted", "interrupted (Ctrl-C)"))
    print(f"error: {message} (hint: {STOPPED_HINT})", file=sys.stderr)
    if json_errors:
        emit_json(error_payload(code, kind, message, STOPPED_HINT))
    return code
