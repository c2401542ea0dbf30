"""Input checks shared by the library, the fault runs, the experiments and the CLI.

Each function takes the argument's name and value, returns the value in the
form the caller wants, and raises `BadInput` with a message a learner can act
on. Call them first, before any SQL runs, so refused input leaves the
database as it was.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Collection
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

from psycopg.types.json import Jsonb

from .errors import BadInput

MAX_KIND_CHARS = 200  # the kind travels in NOTIFY, whose payload must stay under 8,000 bytes
# The jobs table's CHECKs (sql/schema.sql): refused here first, with a line that names the argument.
MAX_PRIORITY = 9
MAX_TENANT_CHARS = 200
MAX_UNIQUE_KEY_CHARS = 200
MAX_PAYLOAD_BYTES = 1_000_000  # bigger data belongs elsewhere; enqueue a key to it
MAX_LEASE = timedelta(days=365)  # longer is surely a mistake, and would overflow timestamps
MAX_DELAY = timedelta(days=365)  # how far ahead a job may be put off; beyond is surely a mistake
# One encoder for every payload: json.dumps with options builds a new one per
# call, which is most of enqueue_many's client time.
_JSON = json.JSONEncoder(allow_nan=False, ensure_ascii=False)

T = TypeVar("T")


def whole_number(name: str, value: Any, low: int, high: int | None = None) -> int:
    """An int from `low` to `high` (inclusive; no upper bound when None). True and False are refused."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{name} must be a whole number, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"from {low:,} to {high:,}" if high is not None else f"at least {low:,}"
        raise BadInput(f"{name} must be {bound}, got {value:,}")
    return value


def number(name: str, value: Any, low: float, high: float, *, unit: str = "") -> float:
    """A finite int or float from `low` to `high` (inclusive), as a float."""
    of = f" of {unit}" if unit else ""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadInput(f"{name} must be a number{of} from {low:g} to {high:g}, got {value!r}")
    if not low <= value <= high:
        raise BadInput(f"{name} must be a number{of} from {low:g} to {high:g}, got {value:g}")
    return float(value)


def seconds(name: str, value: Any, low: float, high: float) -> float:
    """A number of seconds from `low` to `high`."""
    return number(name, value, low, high, unit="seconds")


def fraction(name: str, value: Any) -> float:
    """A share from 0 up to, but not including, 1 (a failure rate, say)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise BadInput(f"{name} must be a fraction from 0 up to (not including) 1, got {value!r}")
    return float(value)


def one_of(name: str, value: T, choices: Collection[T]) -> T:
    """`value` if it is one of `choices`."""
    try:
        known = value in choices
    except TypeError:  # an unhashable value asked of a set or dict
        known = False
    if not known:
        raise BadInput(f"{name} must be one of {', '.join(map(str, choices))}; got {value!r}")
    return value


def job_kind(kind: Any) -> str:
    """A job's kind: non-empty text PostgreSQL can store and NOTIFY can carry."""
    return _short_text("kind", kind, MAX_KIND_CHARS, "it is sent in NOTIFY")


def priority(value: Any) -> int:
    """A job's priority, 0 (runs first) to 9, as the column's CHECK allows."""
    return whole_number("priority", value, 0, MAX_PRIORITY)


def tenant(value: Any) -> str | None:
    """A job's tenant: None (nobody's) or non-empty text the column can hold."""
    return None if value is None else _short_text("tenant", value, MAX_TENANT_CHARS, "the column's limit")


def unique_key(value: Any) -> str | None:
    """A job's unique key: None (not unique) or non-empty text the column can hold."""
    if value is None:
        return None
    return _short_text("unique_key", value, MAX_UNIQUE_KEY_CHARS, "the column's limit")


def _short_text(name: str, value: Any, max_chars: int, why: str) -> str:
    """Non-empty text PostgreSQL can store, up to `max_chars` characters (`why` says whose limit)."""
    if not isinstance(value, str) or not value.strip():
        raise BadInput(f"{name} must be a non-empty string, got {value!r}")
    if "\x00" in value:
        raise BadInput(f"{name} must not contain a NUL byte (PostgreSQL text cannot store one)")
    if len(value) > max_chars:
        raise BadInput(f"{name} is {len(value):,} characters; keep it to {max_chars} ({why})")
    if any("\ud800" <= ch <= "\udfff" for ch in value):
        raise BadInput(f"{name} must be valid Unicode: it holds a lone surrogate, which UTF-8 cannot encode")
    return value


def job_payload_text(payload: Any) -> str:
    """The payload as JSON text that jsonb can store, up to MAX_PAYLOAD_BYTES."""
    try:
        text = _JSON.encode(payload)
    except RecursionError:
        raise BadInput("payload is nested too deeply to serialise as JSON") from None
    except (TypeError, ValueError) as exc:
        raise BadInput(f"payload must be JSON-serialisable: {exc}") from None
    if "\\u0000" in text:
        raise BadInput("payload must not contain a NUL character (jsonb cannot store \\u0000)")
    try:
        size = len(text.encode())
    except UnicodeEncodeError:
        raise BadInput(
            "payload must be valid Unicode: it holds a lone surrogate, which jsonb cannot store"
        ) from None
    if size > MAX_PAYLOAD_BYTES:
        raise BadInput(
            f"payload is {size:,} bytes, over the {MAX_PAYLOAD_BYTES:,}-byte limit: "
            "store large data elsewhere and enqueue its key"
        )
    return text


def job_payload(payload: Any) -> Jsonb:
    """A payload jsonb can store, up to MAX_PAYLOAD_BYTES, ready to send."""
    job_payload_text(payload)
    return Jsonb(payload)


def lease(value: Any) -> timedelta:
    """A lease as a timedelta; numbers are seconds. Zero or less, or over MAX_LEASE, is refused."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value) or abs(value) > MAX_LEASE.total_seconds():
            raise BadInput(
                f"lease must be a finite number of seconds up to {MAX_LEASE.days} days, got {value!r}"
            )
        value = timedelta(seconds=value)
    if not isinstance(value, timedelta):
        raise BadInput(f"lease must be a timedelta or seconds, got {value!r}")
    if value <= timedelta(0) or value > MAX_LEASE:
        raise BadInput(f"lease must be longer than zero and at most {MAX_LEASE.days} days, got {value}")
    return value


def span(name: str, value: Any) -> timedelta:
    """A stretch of time (a window, a timeout) as a timedelta; numbers are seconds. Zero or
    less, or over MAX_LEASE, is refused, as for a lease, with the argument's own name."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = timedelta(seconds=number(name, value, 0, MAX_LEASE.total_seconds(), unit="seconds"))
    if not isinstance(value, timedelta):
        raise BadInput(f"{name} must be a timedelta or seconds, got {value!r}")
    if value <= timedelta(0) or value > MAX_LEASE:
        raise BadInput(f"{name} must be longer than zero and at most {MAX_LEASE.days} days, got {value}")
    return value


def run_at(value: Any) -> datetime | None:
    """When a job falls due: None (now), an aware datetime, or a timedelta from now."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        return datetime.now(timezone.utc) + value
    if not isinstance(value, datetime):
        raise BadInput(f"run_at must be a datetime, a timedelta from now, or None; got {value!r}")
    if value.tzinfo is None:
        raise BadInput("run_at must be timezone-aware (for example datetime.now(timezone.utc))")
    return value


def delay(name: str, value: Any) -> timedelta | None:
    """Seconds from now before a job may run, 0 up to MAX_DELAY, as a timedelta
    (None when not given). NaN, infinities and negatives are refused."""
    if value is None:
        return None
    high = MAX_DELAY.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= high:
        raise BadInput(f"{name} must be a number of seconds from 0 to {high:,.0f} (a year), got {value!r}")
    return timedelta(seconds=value)


def number_text(text: str, kind: type[int] | type[float]) -> int | float:
    """A number typed on a command line, in ASCII digits only. Python's int()
    and float() also take "３" (a full-width digit), "٣" and "1_0"; a command
    line that took those would run with a number the learner never saw typed.
    ValueError names what is wrong."""
    plain = text.strip()
    if not plain.isascii() or "_" in plain:
        raise ValueError(f"{text!r} is not a number in plain digits 0-9")
    return kind(plain)


def json_argument(name: str, text: str) -> Any:
    """JSON typed on a command line, parsed; refused if it is not JSON or is nested too deeply."""
    try:
        return json.loads(text)
    except RecursionError:
        raise BadInput(f"{name} is nested too deeply to read as JSON") from None
    except ValueError as exc:
        raise BadInput(f"{name} is not valid JSON: {exc}") from None


def _writable_folder(name: str, folder: Path) -> None:
    """Refuse unless a file can be made in `folder` (tried with a temporary file, removed at once)."""
    if not folder.is_dir():
        raise BadInput(f"{name}: {folder} {'is not a folder' if folder.exists() else 'does not exist'}")
    try:
        fd, probe = tempfile.mkstemp(prefix=".pgq-probe-", dir=folder)
    except OSError as exc:
        raise BadInput(f"{name}: cannot write in {folder} ({exc.strerror})") from None
    os.close(fd)
    os.unlink(probe)


def output_file(name: str, path: Any) -> Path:
    """A file a command will write at the end of a run, checked before the run
    starts: not a folder, and in a folder that exists and takes new files."""
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise BadInput(f"{name} must be a file name, got {path!r}")
    out = Path(path).expanduser()
    if out.is_dir():
        raise BadInput(f"{name}: {out} is a folder; give a file name")
    _writable_folder(name, out.absolute().parent)
    return out


def output_folder(name: str, path: Any) -> Path:
    """A folder a command will write into at the end of a run, checked before
    the run starts: an existing folder that takes new files, or a new one whose
    nearest existing parent does (nothing is created here)."""
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise BadInput(f"{name} must be a folder name, got {path!r}")
    out = Path(path).expanduser().absolute()
    if out.exists() and not out.is_dir():
        raise BadInput(f"{name}: {out} is a file, not a folder")
    existing = next(p for p in (out, *out.parents) if p.exists())
    _writable_folder(name, existing)
    return out


MAX_LABEL_CHARS = 59  # PostgreSQL's 63-byte names, less the pgq_ prefix


def database_label(name: str, value: Any) -> str:
    """A database label as typed (--db): a plain identifier of letters a-z, digits,
    '-' and '_', so the database it names is the one the learner sees (`x!` is refused,
    not quietly turned into pgq_x)."""
    if not isinstance(value, str) or not value or len(value) > MAX_LABEL_CHARS:
        raise BadInput(f"{name} must be 1 to {MAX_LABEL_CHARS} characters, got {value!r}")
    if not value.isascii() or not all(c.isalnum() or c in "-_" for c in value) or value != value.lower():
        raise BadInput(
            f"{name}: a database label is letters a-z, digits, '-' and '_' (lower case), "
            f"such as shop or 02-row-locks; got {value!r}"
        )
    return value


def existing_folder(name: str, value: Any) -> Path:
    """A folder that must already exist (one a command will read or serve)."""
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise BadInput(f"{name} must be a folder name, got {value!r}")
    path = Path(value).expanduser().resolve()
    if not path.is_dir():
        raise BadInput(f"{name}: {path} {'is not a folder' if path.exists() else 'does not exist'}")
    return path
