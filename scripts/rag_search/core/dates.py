"""Dates as they appear in notes and records, made comparable.

Chunks carry `date` (ISO text, for people) and `date_ts` (seconds since the
epoch, for filters and recency).
"""

import datetime as dt
import re

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_COMPACT_DATE = re.compile(r"^\d{8}$")
# YYYYMMDD numbers from 1900 to 2199; as epoch seconds these would be a few months of 1970, which no note is dated.
COMPACT_DATES = (19000101, 21991231)
MIN_EPOCH = 1e8  # 1973-03-03 in epoch seconds
_RELATIVE = re.compile(r"^(\d+)\s*([dwmy])$")


def normalize(value) -> tuple[str, float] | None:
    """(iso text, epoch seconds) for a date-like value, or None if it is not one.

    Accepts date/datetime objects (YAML front matter), ISO 8601 strings with or
    without time and zone, and numbers read by magnitude (_from_number).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return value.isoformat(), moment.timestamp()
    if isinstance(value, dt.date):
        return value.isoformat(), _midnight(value).timestamp()
    if isinstance(value, (int, float)):
        return _from_number(value)
    if isinstance(value, str):
        text = value.strip()
        if _COMPACT_DATE.match(text):
            return _compact_date(int(text))
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


def _from_number(value: float) -> tuple[str, float] | None:
    """A number as a date, by its magnitude: YYYYMMDD (20250115), else epoch seconds, milliseconds or microseconds.

    Below MIN_EPOCH a number is a count or a duration (`"time": 12`), not a date.
    """
    if COMPACT_DATES[0] <= value <= COMPACT_DATES[1] and float(value).is_integer():
        return _compact_date(int(value))
    if value < MIN_EPOCH:
        return None
    seconds = value / 1e6 if value > 1e14 else value / 1000 if value > 1e11 else value
    try:
        moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat().replace("+00:00", "Z"), float(seconds)


def _compact_date(number: int) -> tuple[str, float] | None:
    try:
        day = dt.date(number // 10000, number // 100 % 100, number % 100)
    except ValueError:
        return None
    return day.isoformat(), _midnight(day).timestamp()


def parse_bound(text: str, now: dt.datetime | None = None) -> float:
    """A --since/--until value as epoch seconds: an ISO date or time, or 7d, 2w, 3m, 1y ago."""
    now = now or dt.datetime.now(dt.UTC)
    match = _RELATIVE.match(text.strip().lower())
    if match:
        days = int(match.group(1)) * {"d": 1, "w": 7, "m": 30, "y": 365}[match.group(2)]
        try:
            return (now - dt.timedelta(days=days)).timestamp()
        except OverflowError:  # before the year 1, or more days than timedelta holds
            raise ValueError(f"{text.strip()} is too far back (dates go back to the year 1)") from None
    parsed = normalize(text)
    if parsed is None:
        raise ValueError(f"not a date: {text!r} (use YYYY-MM-DD, an ISO time, or 7d, 2w, 3m, 1y)")
    return parsed[1]


def from_timestamp(seconds: float) -> tuple[str, float]:
    moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z"), float(seconds)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
