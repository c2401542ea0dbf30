"""The learner's own files: exercise verdicts, rehearsal answers, and the
measurements lessons record so that later lessons (the interview rehearsal)
can quote them.

They live in one folder, `$PGQ_HOME` if set, else the user's data directory,
outside the repository, so a fresh clone or `make clean` never touches them.
Nothing the learner typed or measured is lost: every write is atomic (a
temporary file renamed over the old one), and a file that cannot be read is
set aside under a new name, never overwritten.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .errors import BadInput

NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")
_write_lock = threading.RLock()  # widgets save from callbacks; one writer at a time


def home() -> Path:
    """The folder that holds the learner's files."""
    if os.environ.get("PGQ_HOME"):
        return Path(os.environ["PGQ_HOME"]).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("pgq-teach"))


def path_of(name: str) -> Path:
    """Where the learner file `name` lives; a name other than a-z, 0-9, - and _ is refused."""
    if not isinstance(name, str) or not name or not set(name) <= NAME_CHARS:
        raise BadInput(f"a learner file name is lower-case letters, digits, - and _; got {name!r}")
    return home() / f"{name}.json"


def load(name: str) -> dict[str, Any]:
    """The file's contents, or {} if it does not exist yet. A file that is not
    valid JSON is moved aside (`NAME.unreadable-<time>.json`) and {} returned."""
    path = path_of(name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (ValueError, UnicodeDecodeError):
        path.rename(path.with_name(f"{name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}.json"))
        return {}
    return data if isinstance(data, dict) else {"value": data}


def save(name: str, data: dict[str, Any]) -> Path:
    """Write the whole file atomically and return its path."""
    path = path_of(name)
    text = json.dumps(data, indent=2, sort_keys=True, default=str)
    with _write_lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return path


def update(name: str, key: str, value: Any) -> Path:
    """Set one key of a file, keeping every other key as it was."""
    with _write_lock:  # read, change and write as one step
        data = load(name)
        data[key] = value
        return save(name, data)


def record_measurement(lesson: str, key: str, value: Any, unit: str = "") -> Path:
    """Keep a lesson's measurement in `measurements.json`, for later lessons
    to quote ("on my machine 100,000 jobs drained in 2.9 s")."""
    entry = {"value": value, "unit": unit, "at": time.strftime("%Y-%m-%d %H:%M:%S")}
    with _write_lock:
        data = load("measurements")
        data.setdefault(lesson, {})[key] = entry
        return save("measurements", data)


def measurement(lesson: str, key: str) -> dict[str, Any] | None:
    """A recorded measurement ({value, unit, at}), or None if that lesson has not run."""
    return load("measurements").get(lesson, {}).get(key)
