"""What the scripts share: the skill's own venv, stderr logging, JSON on stdout, exit codes.

stdout carries exactly one JSON document (or the --format text rendering);
everything else goes to stderr. Package code raises typed errors; `run` turns
them into one `error: … (hint: …)` line, a JSON error object on stdout, and the
documented exit code.
"""

import argparse
import json
import logging
import os
import sys
import traceback
import warnings
from pathlib import Path

from .config import DEFAULT_WAIT_SECONDS, SKILL_DIR, Settings, load_settings
from .errors import EXIT_FAILURE, EXIT_STORE, EXIT_USAGE, RagSearchError, exit_codes_help, is_disk_full

VENV_DIR = SKILL_DIR / ".venv"
INDEX_EXIT_CODES = (0, 1, 2, 5, 6, 7, 8, 9)  # what the scripts that write the index can return


def use_project_venv() -> None:
    """Re-run the script under the skill's .venv when started by another interpreter.

    Agents and users call scripts/search.py directly; its `python3` shebang may
    find a Python without our packages.
    """
    python = VENV_DIR / "bin" / "python"
    if python.is_file() and Path(sys.prefix).resolve() != VENV_DIR.resolve():
        os.execv(str(python), [str(python), *sys.argv])


class Parser(argparse.ArgumentParser):
    """argparse, keeping the script contract for usage errors too: exit 2, one line on stderr, the JSON error on stdout."""

    def parse_args(self, args=None, namespace=None):
        self._argv = sys.argv[1:] if args is None else list(args)
        return super().parse_args(args, namespace)

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
        epilog=f"{epilog}\n\n{exit_codes_help(exit_codes, meanings)}",
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
    parser.add_argument("--quiet", action="store_true", help="no progress output; warnings and errors still go to stderr")
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


class _Formatter(logging.Formatter):
    """One line a message (for journald and agents): control characters in arguments, such as a
    newline in a file name, are escaped; a traceback, given as exc_info, follows on its own lines."""

    def format(self, record: logging.LogRecord) -> str:
        if isinstance(record.args, tuple):
            record.args = tuple(_escape(arg) if isinstance(arg, str) else arg for arg in record.args)
        message = record.getMessage()
        line = message if record.levelno < logging.WARNING else f"{record.levelname.lower()}: {message}"
        return f"{line}\n{self.formatException(record.exc_info)}" if record.exc_info else line


def _escape(text: str) -> str:
    return "".join(char if char.isprintable() or char == " " else repr(char)[1:-1] for char in text)


def setup_logging(quiet: bool = False) -> None:
    """Our messages on stderr (progress only without --quiet); third-party chatter silenced."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    logger = logging.getLogger("rag_search")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    logger.propagate = False
    for noisy in ("chromadb", "sentence_transformers", "transformers", "httpx", "urllib3", "git"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")


def to_json(payload: dict) -> str:
    """Indented for a person at a terminal; one line for an agent or a pipe (whitespace costs context)."""
    return json.dumps(payload, ensure_ascii=False, indent=2 if sys.stdout.isatty() else None)


def emit_json(payload: dict) -> None:
    print(to_json(payload), flush=True)


def error_payload(code: int, kind: str, message: str, hint: str | None) -> dict:
    """The JSON error document, the same on stdout and in MCP tool errors."""
    return {"error": {"code": code, "type": kind, "message": message, "hint": hint}}


def run(action, json_errors: bool = True) -> int:
    """Call `action` (returning an exit code or None) and map failures to exit codes."""
    try:
        return action() or 0
    except RagSearchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if json_errors:
            emit_json(error_payload(exc.exit_code, type(exc).__name__, exc.message, exc.hint))
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away; nothing left to report to
        return EXIT_FAILURE
    except Exception as exc:
        if is_disk_full(exc):
            message, hint = f"the disk is full: {exc}; the previous index still serves", "free disk space and rerun"
            print(f"error: {message} (hint: {hint})", file=sys.stderr)
            if json_errors:
                emit_json(error_payload(EXIT_STORE, "DiskFull", message, hint))
            return EXIT_STORE
        traceback.print_exc()
        print(f"error: unexpected {type(exc).__name__}: {exc} (hint: this is a bug; please report the traceback above)", file=sys.stderr)
        if json_errors:
            emit_json(error_payload(EXIT_FAILURE, type(exc).__name__, str(exc), "this is a bug"))
        return EXIT_FAILURE
