"""Progress on stderr: a bar on a terminal, a periodic log line elsewhere (journald); and which warnings are routine."""

import logging
import sys
import time

log = logging.getLogger("rag_search")

# log.warning(..., extra=ROUTINE): a warning every run repeats while nothing changes, which the run's JSON summary reports
# too (a file skipped, credential files left out, sitemap entries outside the docs folder). A --quiet run (the nightly
# timer) leaves it off stderr (cli.setup_logging), so the journal shows what is new or needs doing.
ROUTINE = {"routine": True}


class Progress:
    def __init__(self, total: int, label: str, quiet: bool = False, every_seconds: float = 10.0):
        self._total = total
        self._label = label
        self._quiet = quiet
        self._every = every_seconds
        self._done = 0
        self._last_log = time.monotonic()
        self._bar = None
        if not quiet and total and sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=label, unit="file", file=sys.stderr, leave=False)

    def update(self, count: int = 1) -> None:
        self._done += count
        if self._bar is not None:
            self._bar.update(count)
        elif not self._quiet and time.monotonic() - self._last_log >= self._every:
            self._last_log = time.monotonic()
            log.info("%s: %d/%d files checked", self._label, self._done, self._total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
