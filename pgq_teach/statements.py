"""Load the course's SQL from sql/, by name.

Every statement lives once, in a file a person can also run in psql. Files use
psql's variable syntax, so the same text works in both places:

    :name    a value, sent as a query parameter
    :'name'  a value, sent as a query parameter (psql quotes it as a literal)
    :"name"  an identifier, such as a database name, quoted safely

PostgreSQL takes no parameters in utility statements (CREATE, ALTER, DROP,
GRANT, ...), so there values are quoted on the client by psycopg instead.

`statement("claim")` turns that into what psycopg expects. Values always
travel as parameters, never formatted into the SQL text.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from psycopg import sql as pgsql
from psycopg.rows import RowFactory, RowMaker

from .errors import SetupError

_HERE = Path(__file__).resolve().parent
# An installed wheel carries the files inside the package; a source checkout
# keeps them in the top-level sql/ folder, where a person finds them first.
_ROOTS = (_HERE / "sql", _HERE.parent / "sql")

_VALUE = re.compile(r"(?<![:\w]):'(\w+)'|(?<![:\w]):(\w+)")
_IDENT = re.compile(r"(?<![:\w]):\"(\w+)\"")
_UTILITY = {
    "CREATE",
    "ALTER",
    "DROP",
    "GRANT",
    "REVOKE",
    "DO",
    "SET",
    "TRUNCATE",
    "VACUUM",
    "ANALYZE",
    "LISTEN",
}


def sql_dir() -> Path:
    """The folder that holds the course's SQL files."""
    for root in _ROOTS:
        if (root / "schema.sql").is_file():
            return root
    raise SetupError("The course's sql/ folder is missing from this installation.")


@dataclass(frozen=True)
class Statement:
    """One SQL file: its name, its header comment and its body."""

    name: str
    header: str
    text: str
    params: tuple[str, ...]
    idents: tuple[str, ...]

    @property
    def teaching_only(self) -> bool:
        return self.name.startswith("teaching/")

    @property
    def utility(self) -> bool:
        return self.text.split(None, 1)[0].upper() in _UTILITY

    @cached_property
    def placeholders(self) -> str:
        """The body with each value placeholder in psycopg's style, %(name)s,
        worked out once: the Worker sends the same few statements thousands of
        times a second."""
        if not self.params or self.utility:
            return self.text
        body = self.text.replace("%", "%%")
        return _VALUE.sub(lambda m: f"%({m.group(1) or m.group(2)})s", body)

    def query(self, literals: Mapping[str, Any] | None = None, **idents: str) -> str | pgsql.Composed:
        """The body in psycopg's placeholder style, identifiers filled in.
        For a utility statement, `literals` fill the value placeholders."""
        missing = set(self.idents) - set(idents)
        if missing:
            raise ValueError(f"{self.name}.sql needs identifiers: {sorted(missing)}")
        body = self.placeholders
        if not self.idents and not (self.utility and self.params):
            return body
        body = body.replace("{", "{{").replace("}", "}}")
        body = _IDENT.sub(lambda m: "{" + m.group(1) + "}", body)
        parts: dict[str, pgsql.Composable] = {k: pgsql.Identifier(v) for k, v in idents.items()}
        if self.utility:
            body = _VALUE.sub(lambda m: "{" + (m.group(1) or m.group(2)) + "}", body)
            parts.update({k: pgsql.Literal(v) for k, v in (literals or {}).items()})
        return pgsql.SQL(body).format(**parts)


def _split(raw: str) -> tuple[str, str]:
    lines = raw.splitlines()
    n = 0
    while n < len(lines) and (lines[n].startswith("--") or not lines[n].strip()):
        n += 1
    header = "\n".join(line[2:].strip() for line in lines[:n] if line.startswith("--"))
    body_lines = [line for line in lines[n:] if not line.lstrip().startswith("--")]
    return header, "\n".join(body_lines).strip()


@cache
def statement(name: str) -> Statement:
    """The statement in sql/<name>.sql, for example "claim" or "teaching/naive_read"."""
    path = sql_dir() / f"{name}.sql"
    if not path.is_file():
        raise KeyError(f"No statement {name!r}: expected {path.name} under sql/. Known: {', '.join(names())}")
    header, body = _split(path.read_text(encoding="utf-8"))
    idents = tuple(dict.fromkeys(_IDENT.findall(body)))
    stripped = _IDENT.sub("", body)
    params = tuple(dict.fromkeys(a or b for a, b in _VALUE.findall(stripped)))
    return Statement(name, header, body, params, idents)


def names() -> list[str]:
    """Every statement's name, such as "claim" or "lab/seed_jobs", sorted."""
    root = sql_dir()
    return sorted(str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.sql"))


def run(
    conn: psycopg.Connection,
    name: str,
    params: Mapping[str, Any] | None = None,
    *,
    idents: Mapping[str, str] | None = None,
    row_factory: RowFactory[Any] | None = None,
) -> psycopg.Cursor[Any]:
    """Execute a named statement on a connection and return the cursor.

    `params` are values (sent as parameters); `idents` are identifiers such
    as a database name. `row_factory` shapes the rows, for example
    `psycopg.rows.dict_row` for dicts keyed by column name."""
    st = statement(name)
    params = dict(params or {})
    unknown = set(params) - set(st.params)
    missing = set(st.params) - set(params)
    if unknown or missing:
        raise ValueError(
            f"{name}.sql takes {list(st.params)}; missing {sorted(missing)}, unexpected {sorted(unknown)}"
        )
    # Without a row factory, conn.execute as ever: the connection's own rows (tuples by default).
    execute = conn.cursor(row_factory=row_factory).execute if row_factory else conn.execute
    if st.utility:
        return execute(st.query(params, **(idents or {})))
    return execute(st.query(None, **(idents or {})), params if st.params else None)


RecordT = TypeVar("RecordT")


def record(cls: type[RecordT], row: Mapping[str, Any]) -> RecordT:
    """A record (a dataclass such as queue.Job) from a row keyed by column
    name: each field from the column of its name, a column the record has no
    field for left out. So a statement may return more columns, in any order,
    and a record read this way never takes one value for another."""
    fields = _field_names(cls)
    return cls(**{name: value for name, value in row.items() if name in fields})


def records(cls: type[RecordT]) -> RowFactory[RecordT]:
    """A row factory for run(): each row as `cls`, by column name (see record).
    Which column fills which field is worked out once per result, not per
    row; when the columns name the record's first fields in their order (as
    claim.sql's do for queue.Job), each row passes them by position."""

    def factory(cursor: Any) -> RowMaker[RecordT]:
        order = _field_names(cls)
        taken = [(i, name) for i, name in enumerate(_column_names(cursor)) if name in order]
        names = tuple(name for _, name in taken)
        pick = _picker([i for i, _ in taken])
        if names == order[: len(names)]:
            return lambda values: cls(*pick(values))
        return lambda values: cls(**dict(zip(names, pick(values), strict=True)))

    return factory


def _column_names(cursor: Any) -> list[str]:
    """The result's column names, read from the result itself: cheaper than
    cursor.description, which builds a Column object for each, on every claim."""
    result = cursor.pgresult
    if result is None:
        return []
    encoding = cursor.connection.info.encoding
    return [(result.fname(i) or b"").decode(encoding) for i in range(result.nfields)]


def _picker(positions: list[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """A function from a row to the values at these positions, as a tuple."""
    if len(positions) == 1:  # itemgetter of one position returns the value, not a tuple
        [only] = positions
        return lambda values: (values[only],)
    return operator.itemgetter(*positions) if positions else (lambda values: ())


_FIELD_NAMES: dict[Any, tuple[str, ...]] = {}


def _field_names(cls: Any) -> tuple[str, ...]:
    """A record's field names in their order, looked up once per record type."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def run_one(conn: psycopg.Connection, name: str, params: Mapping[str, Any] | None = None) -> Any:
    """Run a named statement that always returns a row (an aggregate, an
    INSERT ... RETURNING) and return that row. No row means the statement is
    wrong, so it raises here rather than hand back None to fail later."""
    row = run(conn, name, params).fetchone()
    if row is None:
        raise LookupError(f"{name}.sql returned no row; it always returns one")
    return row


def _explainable(name: str, params: Mapping[str, Any] | None) -> tuple[str, dict[str, Any] | None]:
    """A named statement's text and parameters, checked for EXPLAIN: a query (no
    identifiers, not a utility statement) given exactly the parameters it takes."""
    st = statement(name)
    query = st.query()
    if st.utility or st.idents or not isinstance(query, str):  # a query without identifiers is plain text
        raise ValueError(f"{name}.sql is not a query PostgreSQL can EXPLAIN")
    params = dict(params or {})
    if set(params) != set(st.params):
        raise ValueError(f"{name}.sql takes {list(st.params)}; got {sorted(params)}")
    return query, params if st.params else None


def explain(conn: psycopg.Connection, name: str, params: Mapping[str, Any] | None = None) -> list[str]:
    """The plan PostgreSQL would use for a named statement, without running it
    (EXPLAIN without ANALYZE executes nothing, so even an UPDATE is safe)."""
    query, values = _explainable(name, params)
    cur = conn.execute("EXPLAIN (COSTS OFF) " + query, values)
    return [row[0] for row in cur.fetchall()]


def explain_analyze(conn: psycopg.Connection, name: str, params: Mapping[str, Any] | None = None) -> Any:
    """EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of a named statement: its top plan node as
    a dict. ANALYZE runs the statement, so it runs inside a transaction that is rolled
    back: an UPDATE's rows are left as they were (its sequence and buffer reads are not)."""
    query, values = _explainable(name, params)
    with conn.transaction(force_rollback=True):
        row = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query, values).fetchone()
    if row is None:
        raise LookupError(f"EXPLAIN of {name}.sql returned no plan")
    return row[0][0]["Plan"]
