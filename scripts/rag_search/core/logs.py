"""Our messages on stderr, one line each; third-party chatter silenced.

Its own module so that only a process that logs imports logging: a search.py answered
by the resident searcher prints the searcher's text and never sets logging up.
"""

import logging
import sys
import warnings


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
    """Our messages on stderr (progress and routine warnings only without --quiet); third-party chatter silenced."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    if quiet:
        handler.addFilter(lambda record: not getattr(record, "routine", False))
    logger = logging.getLogger("rag_search")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    logger.propagate = False
    for noisy in ("chromadb", "sentence_transformers", "transformers", "httpx", "urllib3", "git"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
