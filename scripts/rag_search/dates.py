"""Dates as they appear in notes and records, made comparable.

Chunks carry `date` (ISO text, for people) and `date_ts` (seconds since the
epoch, for filters and recency).
"""

import datetime as dt
import re

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def normalize(value) -> tuple[str, float] | None:
    """(iso text, epoch seconds) for a date-like value, or None if it is not one.

    Accepts date/datetime objects (YAML front matter), ISO 8601 strings with or
    without time and zone, and epoch numbers in seconds or milliseconds.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return value.isoformat(), moment.timestamp()
    if isinstance(value, dt.date):
        return value.isoformat(), _midnight(value).timestamp()
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > 1e11 else value
        try:
            moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
        except (OverflowError, OSError, ValueError):
            return None
        return moment.isoformat().replace("+00:00", "Z"), float(seconds)
    if isinstance(value, str):
        text = value.strip()
        if _ISO_DATE.match(text):
            try:
                return text, _midnight(dt.date.fromisoformat(text)).timestamp()
            except ValueError:
                return None
        try:
            moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.UTC)
        return text, moment.timestamp()
    return None


def from_timestamp(seconds: float) -> tuple[str, float]:
    moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z"), float(seconds)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
