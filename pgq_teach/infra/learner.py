"""The learner's own files: exercise verdicts, rehearsal answers, and the
measurements lessons record so that later lessons (the interview rehearsal)
can quote them.

They live in one folder, `$PGQ_HOME` if set, else the user's data directory,
outside the repository, so a fresh clone or `make clean` never touches them.
Nothing the learner typed or measured is lost: every write is atomic (a
temporary file renamed over the old one) under a lock that other processes
honour too, and a file that cannot be read (not a JSON object, a folder or a
FIFO where the file should be, over MAX_FILE_BYTES, or data that fails the
caller's schema check) is set aside under a new name with a one-line warning
on stderr, never overwritten; one that can be neither read nor moved is not
written over either (SetupError). A home that is not a folder (PGQ_HOME naming a
file) reads as empty, with a warning, and refuses to save with a SetupError.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import BadInput, SetupError

try:
    import fcntl  # POSIX: the lock between processes
except ImportError:  # Windows: threads of one process are still kept apart
    fcntl = None  # type: ignore[assignment]

# A schema check: raises ValueError (or TypeError) naming what is wrong with the data.
Schema = Callable[[dict[str, Any]], None]

NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")
_write_lock = threading.RLock()  # widgets save from callbacks; one writer at a time
_held: set[str] = set()  # files whose cross-process lock this process holds (under _write_lock)
# pgq-teach cuts what it stores (headlines, answers), so its files stay far below this;
# a bigger file was not written by it, and reading it whole could exhaust memory.
MAX_FILE_BYTES = 20_000_000


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


def set_aside(path: Path, name: str, why: str, tell: Callable[[str], None] = warn) -> bool:
    """Move an unreadable file (or folder) to `NAME.unreadable-<time>.json`, with
    a warning. False if it could not be moved: then it must not be written over."""
    aside = path.with_name(f"{name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json")
    try:
        path.rename(aside)
    except OSError as exc:
        tell(f"{path} {why}, and could not be moved aside ({exc.strerror}); starting from empty")
        return False
    tell(f"{path} {why}; moved it to {aside.name} and started from empty")
    return True


class _Unreadable(Exception):
    """The file is there but is not a JSON object pgq-teach could have written."""


def _read_object(path: Path) -> dict[str, Any]:
    """The JSON object in `path`. Opened without blocking and checked to be a
    regular file of sane size first, so a FIFO or a device in the file's place
    cannot hang the kernel, and a 200 MB file cannot fill its memory."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise _Unreadable("is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise _Unreadable("is not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise _Unreadable(
                f"is {info.st_size:,} bytes, more than pgq-teach ever writes ({MAX_FILE_BYTES:,})"
            )
        with os.fdopen(os.dup(fd), "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise _Unreadable("is not valid JSON") from None
    if not isinstance(data, dict):
        raise _Unreadable(
            f"does not hold what pgq-teach writes (a JSON {type(data).__name__}, not an object)"
        )
    return data


def _read(
    name: str, schema: Schema | None, tell: Callable[[str], None] = warn
) -> tuple[dict[str, Any], bool]:
    """The file's contents (or {}), and whether it may be written over: False
    when it is still in place but could not be read or moved aside. What went
    wrong is told in one line to `tell`."""
    path = path_of(name)
    try:
        data = _read_object(path)
    except FileNotFoundError:
        return {}, True
    except NotADirectoryError:
        tell(f"{home()} is not a folder, so {name}.json cannot be read; set PGQ_HOME to a folder")
        return {}, False
    except _Unreadable as why:
        return {}, set_aside(path, name, str(why), tell)
    except OSError as exc:
        tell(f"{path} cannot be read ({exc.strerror}); starting from empty")
        return {}, False
    if schema is not None:
        try:
            schema(data)
        except (ValueError, TypeError) as exc:
            return {}, set_aside(path, name, f"does not hold what pgq-teach writes ({exc})", tell)
    return data, True


def load(name: str, schema: Schema | None = None) -> dict[str, Any]:
    """The file's contents, or {} if it does not exist yet. A file that is not
    a JSON object, is a folder, a FIFO or over MAX_FILE_BYTES, or fails `schema`
    is moved aside (`NAME.unreadable-<time>.json`, with a one-line warning) and
    {} returned."""
    with _write_lock:
        return _read(name, schema)[0]


def load_or_refuse(name: str, schema: Schema | None = None) -> dict[str, Any]:
    """As `load`, for a command about to work on the file: one that cannot be used
    is set aside as `load` does (nothing in it lost), and the command stops with
    that one line (BadInput, exit 2) rather than working on from empty."""
    told: list[str] = []
    with _write_lock:
        data = _read(name, schema, told.append)[0]
    if told:
        line = told[0].replace(" and started from empty", "").replace("; starting from empty", "")
        raise BadInput(f"{line}; run the command again to start afresh")
    return data


@contextmanager
def _locked(name: str) -> Iterator[None]:
    """One writer of `name` at a time: threads of this process (the RLock) and
    other processes (two notebooks, or a notebook and the CLI: an flock on
    `.NAME.lock` beside the file), so a read-change-write never loses another's
    update. Re-entrant within a thread. Makes the learner's home if missing."""
    with _write_lock:
        if name in _held or fcntl is None:
            yield
            return
        folder = path_of(name).parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(folder / f".{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except (FileExistsError, NotADirectoryError):
            raise SetupError(
                f"{folder} is not a folder, so {name}.json cannot be saved; set PGQ_HOME to a folder"
            ) from None
        except OSError as exc:
            raise SetupError(f"{folder} cannot hold the learner's files ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            _held.add(name)
            yield
        finally:
            _held.discard(name)
            os.close(fd)  # closing releases the lock


def _read_for_change(name: str, schema: Schema | None) -> dict[str, Any]:
    """The file's contents for a read-change-write; SetupError if it is still
    in place but could not be read, so it is never written over."""
    data, writable = _read(name, schema)
    if not writable:
        raise SetupError(
            f"{path_of(name)} could not be read or moved aside, so pgq-teach will not write over it; "
            "move it away or fix its permissions"
        )
    return data


def save(name: str, data: dict[str, Any]) -> Path:
    """Write the whole file atomically and return its path. SetupError if the
    learner's home cannot hold files (PGQ_HOME names a file, say)."""
    path = path_of(name)
    text = json.dumps(data, indent=2, sort_keys=True, default=str)
    with _locked(name):
        if path.exists() and not os.access(path, os.R_OK):  # load could not read it: keep it
            raise SetupError(
                f"{path} cannot be read, so pgq-teach will not write over it; fix its permissions"
            )
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
    with _locked(name):
        data = _read_for_change(name, schema)
        edit(data)
        return save(name, data)


def update(name: str, key: str, value: Any) -> Path:
    """Set one key of a file, keeping every other key as it was."""
    with _locked(name):  # read, change and write as one step
        data = _read_for_change(name, None)
        data[key] = value
        return save(name, data)


def record_measurement(lesson: str, key: str, value: Any, unit: str = "") -> Path:
    """Keep a lesson's measurement in `measurements.json`, for later lessons
    to quote ("on my machine 100,000 jobs drained in 2.9 s")."""
    entry = {"value": value, "unit": unit, "at": time.strftime("%Y-%m-%d %H:%M:%S")}
    with _locked("measurements"):
        data = _read_for_change("measurements", measurements_check)
        data.setdefault(lesson, {})[key] = entry
        return save("measurements", data)


def measurement(lesson: str, key: str) -> dict[str, Any] | None:
    """A recorded measurement ({value, unit, at}), or None if that lesson has not run."""
    return load("measurements", measurements_check).get(lesson, {}).get(key)


def measurements_check(data: dict[str, Any]) -> None:
    """The schema of `measurements.json`: {lesson: {key: {"value", "unit", "at"}}}."""
    for lesson, keys in data.items():
        if not isinstance(keys, dict):
            raise ValueError(f"{lesson} is {type(keys).__name__}, not an object of measurements")
        for key, entry in keys.items():
            if not isinstance(entry, dict) or "value" not in entry:
                raise ValueError(f"{lesson}.{key} is not a measurement ({{value, unit, at}})")
            if not isinstance(entry.get("unit", ""), str):
                raise ValueError(f"{lesson}.{key}.unit is not text")
