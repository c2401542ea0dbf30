"""The learner's own files: exercise verdicts, rehearsal answers, and the
measurements lessons record so that later lessons (the interview rehearsal)
can quote them.

They live in one folder, `$PGQ_HOME` if set, else the user's data directory,
outside the repository, so a fresh clone or `make clean` never touches them.
Nothing the learner typed or measured is lost: every write is atomic (a
temporary file renamed over the old one), and a file that cannot be read (not
JSON, a folder where the file should be, or data that fails the caller's
schema check) is set aside under a new name with a one-line warning on
stderr, never overwritten. A home that is not a folder (PGQ_HOME naming a
file) reads as empty, with a warning, and refuses to save with a SetupError.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import BadInput, SetupError

# A schema check: raises ValueError (or TypeError) naming what is wrong with the data.
Schema = Callable[[dict[str, Any]], None]

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


def warn(text: str) -> None:
    """One line on stderr: the learner's file was set aside or cannot be used."""
    print(f"pgq-teach: {text}", file=sys.stderr, flush=True)


def set_aside(path: Path, name: str, why: str) -> None:
    """Move an unreadable file (or folder) to `NAME.unreadable-<time>.json`, with a warning."""
    aside = path.with_name(f"{name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json")
    try:
        path.rename(aside)
    except OSError as exc:
        warn(f"{path} {why}, and could not be moved aside ({exc.strerror}); starting from empty")
        return
    warn(f"{path} {why}; moved it to {aside.name} and started from empty")


def load(name: str, schema: Schema | None = None) -> dict[str, Any]:
    """The file's contents, or {} if it does not exist yet. A file that is not
    valid JSON, is a folder, or fails `schema` is moved aside
    (`NAME.unreadable-<time>.json`, with a one-line warning) and {} returned."""
    path = path_of(name)
    with _write_lock:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except IsADirectoryError:
            set_aside(path, name, "is a folder, not a file")
            return {}
        except NotADirectoryError:
            warn(f"{home()} is not a folder, so {name}.json cannot be read; set PGQ_HOME to a folder")
            return {}
        except (ValueError, UnicodeDecodeError, RecursionError):
            set_aside(path, name, "is not valid JSON")
            return {}
        except OSError as exc:
            warn(f"{path} cannot be read ({exc.strerror}); starting from empty")
            return {}
        data = data if isinstance(data, dict) else {"value": data}
        if schema is not None:
            try:
                schema(data)
            except (ValueError, TypeError) as exc:
                set_aside(path, name, f"does not hold what pgq-teach writes ({exc})")
                return {}
        return data


def save(name: str, data: dict[str, Any]) -> Path:
    """Write the whole file atomically and return its path. SetupError if the
    learner's home cannot hold files (PGQ_HOME names a file, say)."""
    path = path_of(name)
    text = json.dumps(data, indent=2, sort_keys=True, default=str)
    with _write_lock:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise SetupError(
                f"{path.parent} is not a folder, so {name}.json cannot be saved; set PGQ_HOME to a folder"
            ) from None
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


def change(name: str, edit: Callable[[dict[str, Any]], None], schema: Schema | None = None) -> Path:
    """Read the file (checked by `schema`), let `edit` change it in place, and
    write it back atomically, as one step."""
    with _write_lock:
        data = load(name, schema)
        edit(data)
        return save(name, data)


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
