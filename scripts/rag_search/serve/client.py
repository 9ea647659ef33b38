"""A script's answer, asked of the resident searcher over its socket, or given cold here, leaving a searcher behind.

Later calls parse their command line in the script, send it over the socket and
print the answer, which the searcher made with the same code as the cold path
(answers.py), so it is the same JSON byte for byte, with the same exit code.

Never worse than cold: no searcher, one of another code version or settings
(it exits when asked), one that does not take the request within ACK_SECONDS
or falls silent for SILENCE_SECONDS while it answers (hung, stopped: it is
killed), one that dies mid-answer, a socket left by a killed one, or an answer
we cannot use all end in the cold answer, and what was broken is replaced.
This module imports no heavy library: a warm call stays small.
"""

import contextlib
import os
import socket
import sys
import time

from ..core.config import DATA_DIR_MARKER, Settings
from ..core.errors import EXIT_FAILURE, STOPPED_EXITS
from .resident import (
    ACK_SECONDS,
    ANSWER_SECONDS,
    MAX_ANSWER,
    PROTOCOL,
    SILENCE_SECONDS,
    identity,
    kill_hung,
    peer,
    receive,
    send,
    socket_path,
    start,
    usable,
)


def answer(command: str, args, settings: Settings, off: bool = False) -> int:
    """Print the answer to a script's `command` (answers.COMMANDS) for its parsed `args` and return the exit code: the
    searcher's when one runs for these settings; else answered here (cold), leaving a searcher behind for the next
    call. `off`: not through a searcher (--no-resident, or settings a searcher would not share)."""
    if off or settings.resident_idle_minutes <= 0 or not usable(settings) or not (settings.data_dir / DATA_DIR_MARKER).is_file():
        return _cold(command, args, settings)
    reply, replace = _ask(settings, {"command": command, "args": vars(args), "tty": sys.stdout.isatty()})
    if reply is not None:
        sys.stderr.write(reply["stderr"])
        sys.stdout.write(reply["stdout"])
        sys.stdout.flush()
        return reply["code"]
    code = _cold(command, args, settings)
    if code == 0:
        with contextlib.suppress(OSError):
            start(settings, replace)
    return code


def _cold(command: str, args, settings: Settings) -> int:
    from ..core import logs  # here: an answer from the searcher needs neither, nor the libraries they load
    from . import answers  # here: an answer from the searcher needs neither, nor the libraries they load

    logs.setup_logging(quiet=True)
    return answers.answer(command, args, settings)


def _ask(settings: Settings, request: dict) -> tuple[dict | None, bool]:
    """The searcher's reply (None when it cannot give one) and whether one answered that failed and must be replaced
    (False when none listens: one may be starting)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(ACK_SECONDS)
        try:
            sock.connect(str(socket_path(settings)))
            pid, uid = peer(sock)
        except OSError:
            return None, False
        if uid != os.getuid():
            return None, False  # not ours: never talk to it, never kill it
        try:
            send(sock, {**request, "protocol": PROTOCOL, "identity": identity(settings)})
            if sock.recv(1) != b"+":
                return None, True  # it closed the connection: dying, or refusing us
            reply = receive(sock, MAX_ANSWER, time.monotonic() + ANSWER_SECONDS, SILENCE_SECONDS)
        except TimeoutError:  # connected, yet it does not take the request (hung or stopped) or does not answer
            kill_hung(pid, settings, f"it did not take a request within {ACK_SECONDS:g} s, fell silent for {SILENCE_SECONDS:g} s "
                                 f"while answering, or did not answer within {ANSWER_SECONDS:g} s")
            return None, True
        except (OSError, ValueError):
            return None, True  # it died mid-answer, or the answer is cut short or too big
    if not isinstance(reply, dict) or reply.get("stale") or not _well_formed(reply):
        return None, True  # another identity (it exits now), or a reply we cannot use
    return reply, False


def _well_formed(reply: dict) -> bool:
    """An answer we print as it is: an exit code the cold path could give (a failure of the searcher's own answers
    cold instead: code 1 is a bug, 130/143 a signal to the searcher), and the two texts, which our stdout can print
    (stderr replaces what it cannot)."""
    code = reply.get("code")
    return (isinstance(code, int) and 0 <= code <= 255 and code not in (EXIT_FAILURE, *STOPPED_EXITS)
            and isinstance(reply.get("stdout"), str) and isinstance(reply.get("stderr"), str) and _printable(reply["stdout"]))


def _printable(text: str) -> bool:
    try:
        text.encode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict")
    except (UnicodeError, LookupError):
        return False
    return True
