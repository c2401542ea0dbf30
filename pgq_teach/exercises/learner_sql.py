"""The learner's SQL text, read by PostgreSQL's own parser before it goes
anywhere near a server.

Threat model (the sandbox's other half, the roles, is in `sandbox`):

- The text is hostile. Whatever a learner types, by mistake or on purpose,
  is read here by libpg_query (through `pglast`): the server's own lexer and
  grammar compiled as a library, so a `--` comment ended by a carriage
  return, a dollar quote or a unicode escape reads here exactly as the server
  will read it. No decision is taken from the text itself.
- What runs is what an exercise needs, and only that, decided from the parse
  tree: one statement, of a kind the exercise accepts (a query, or for lesson
  08 one plain CREATE INDEX); every node of the tree on an allow-list of node
  types (so no SET, transaction control, utility statements, SELECT INTO,
  LOCK, DECLARE, COPY...); every function called on an allow-list (so no
  set_config, pg_sleep, pg_terminate_backend, dblink, lo_*, pg_read_*...);
  every table name resolved in its scope as PostgreSQL resolves it (`Reading`):
  a WITH query the name can see (never from its own body, nor from outside the
  query it belongs to), else `jobs` or a table the exercise names
  (pg_stat_activity for lesson 09). What an INSERT, UPDATE, DELETE or MERGE
  changes is always a table, whatever WITH query shares its name: only `jobs`.
  So `WITH pg_authid AS (...) UPDATE pg_authid` is refused here, before the
  server's parse analysis could take a lock on the catalog.
- No value grows without bound: a WITH RECURSIVE is refused, and so is a
  statement whose expressions, once the planner inlines its WITH queries and
  FROM subqueries, would pass MAX_EXPANSION nodes and characters of text, or
  that would read tables over MAX_RELATIONS times (`Reading`). A chain of
  WITH queries that each use the last one's column twice (`k || k`,
  `concat(k, k)`, `jsonb_build_array(k, k)`), or read the last one twice
  (`FROM a x, a y`, with NOT MATERIALIZED, which is refused outright), calls
  no forbidden function, yet doubles per link, and the planner builds that
  tree where no cancel reaches. pg_notify (lesson 07) runs only in a SELECT
  over the one row an INSERT returned.
- Text that is not valid UTF-8 (a lone surrogate) is refused before the parser
  sees it.
- This reader is the first line, not the boundary: the server's own prepare
  reads the statement again (`sandbox.parse`), and what the statement could do
  if it got through anyway is bounded by the role it runs as (`sandbox`).

psql placeholders (`:name`, `:'name'`) are found among the scanner's tokens
and turned into psycopg's `%(name)s` form for running and PostgreSQL's `$1`
form for parsing and the server's prepare.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pglast
from pglast import ast
from pglast.enums import SubLinkType
from pglast.parser import ParseError, scan

from ..errors import BadInput
from .reading import MAX_EXPANSION, MAX_RELATIONS, Reading, function_name, multiplies, walk
from .reading import expansion as expansion  # its tests read it here, beside the reader

MAX_CHARS = 20_000
MAX_DEPTH = 120  # nodes deep; the course's own claim is about 15
SHOWN = 80  # characters of learner text quoted back in a refusal
# The statements an exercise can ask for, by the word the parse tree gives them
# (a statement with a WITH clause is "WITH"); CREATE is lesson 08's CREATE INDEX.
STATEMENT_WORDS = frozenset({"WITH", "SELECT", "UPDATE", "DELETE", "INSERT", "VALUES", "MERGE"})

# Node types a query of the queue can be built from. Anything else (IntoClause,
# RangeTableSample, XmlExpr, a utility statement...) is refused by name.
QUERY_NODES = frozenset(
    {
        "RawStmt", "SelectStmt", "InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt", "MergeWhenClause",
        "WithClause", "CommonTableExpr", "ResTarget", "MultiAssignRef", "ColumnRef", "A_Star", "A_Const",
        "A_Expr", "A_Indirection", "A_Indices", "A_ArrayExpr", "ParamRef", "TypeCast", "TypeName",
        "CollateClause", "FuncCall", "NamedArgExpr", "SortBy", "WindowDef", "BoolExpr", "NullTest",
        "BooleanTest", "CaseExpr", "CaseWhen", "CoalesceExpr", "MinMaxExpr", "SQLValueFunction", "SubLink",
        "RowExpr", "RangeVar", "RangeSubselect", "RangeFunction", "JoinExpr", "Alias", "LockingClause",
        "OnConflictClause", "InferClause", "IndexElem", "SetToDefault", "GroupingSet", "ReturningClause",
        "ReturningOption", "String", "Integer", "Float", "Boolean", "BitString", "List",
    }
)  # fmt: skip
# Lesson 08's CREATE INDEX: columns, a plain predicate, no function anywhere.
INDEX_NODES = frozenset(
    {
        "RawStmt", "IndexStmt", "IndexElem", "RangeVar", "A_Expr", "ColumnRef", "A_Const", "BoolExpr",
        "NullTest", "BooleanTest", "TypeCast", "TypeName", "String", "Integer", "Float", "Boolean", "List",
    }
)  # fmt: skip
# Functions any exercise may call: pure arithmetic, text, time, aggregates and
# the array and JSON builders a queue statement uses. Nothing that sleeps,
# signals, reads files, changes settings, takes locks or reaches another server;
# and none that multiplies a value's size at will (format's widths, replace,
# repeat, lpad, the aggregates that concatenate), since one huge row would
# still reach the checker's memory whole.
FUNCTIONS = frozenset(
    {
        "now", "clock_timestamp", "statement_timestamp", "transaction_timestamp", "current_database",
        "extract", "date_part", "date_trunc", "age", "make_interval", "justify_interval", "to_timestamp",
        "to_char", "timezone", "power", "pow", "abs", "ceil", "ceiling", "floor", "round", "trunc", "mod",
        "sqrt", "exp", "ln", "log", "sign", "random", "length", "char_length", "octet_length", "lower",
        "upper", "substr", "substring", "left", "right", "concat", "concat_ws", "trim", "btrim", "ltrim",
        "rtrim", "position", "strpos", "split_part", "md5", "starts_with", "count", "sum", "min", "max",
        "avg", "bool_and", "bool_or", "every", "unnest", "array_length", "cardinality", "array_position",
        "jsonb_build_object", "json_build_object", "jsonb_build_array", "to_jsonb", "to_json",
        "row_to_json", "jsonb_typeof", "jsonb_extract_path_text", "row_number", "rank", "dense_rank", "lag",
        "lead", "gen_random_uuid",
    }
)  # fmt: skip
TABLES = frozenset({"jobs"})


@dataclass(frozen=True)
class Allowance:
    """What one exercise may use beyond the common allow-lists."""

    functions: frozenset[str] = frozenset()
    tables: frozenset[str] = frozenset()  # read from pg_catalog, by name
    array_subquery: bool = False  # ARRAY(SELECT ...): bounded here by the scratch table's few rows


# Per exercise, by its key: only what its model answer needs.
ALLOWANCES = {
    "07/notify": Allowance(functions=frozenset({"pg_notify"})),
    "09/holder": Allowance(functions=frozenset({"pg_backend_pid"}), tables=frozenset({"pg_stat_activity"})),
    # The library's cleanup, sql/cleanup_done.sql, is `id = ANY(ARRAY(SELECT id ... id > :after ORDER BY
    # id LIMIT :batch))`: the planner reads the LIMIT's ids first and fetches each by the primary key.
    "10/cleanup": Allowance(array_subquery=True),
}


class Refused(BadInput):
    """The learner's SQL was not run: the message says why, and `hint`, when the
    refusal knows the habit behind it, what to write instead."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


# DELETE ... LIMIT and DELETE ... ORDER BY are MySQL's: PostgreSQL's DELETE has neither
# (https://www.postgresql.org/docs/18/sql-delete.html), so its parser stops at the word.
DELETE_LIMIT_HINT = (
    "PostgreSQL's DELETE has no LIMIT or ORDER BY (MySQL's has): pick the ids of a batch of done "
    "jobs in a subquery that ends in LIMIT :batch, and delete only the rows whose id it returns."
)


@dataclass(frozen=True)
class LearnerSQL:
    """One statement as the learner typed it, with its placeholders and the
    parser's tree of it."""

    text: str
    first_word: str  # the statement's kind, from the tree: SELECT, WITH, UPDATE, ..., CREATE
    leading: tuple[str, ...]  # the first three words the server's scanner reads, upper case
    placeholders: tuple[str, ...]
    for_psycopg: str
    for_server: str
    tree: Any = field(default=None, compare=False, repr=False)  # the pglast node of the statement

    @property
    def main_word(self) -> str:
        """The kind of the statement's own body, WITH or not: UPDATE for
        `WITH ... UPDATE ...` as for a bare UPDATE."""
        return _body_word(self.tree) if self.tree is not None else self.first_word

    def params(self, values: dict) -> dict:
        """The values this statement uses, by name."""
        return {name: values[name] for name in self.placeholders}

    def positional(self, values: dict) -> list:
        """The same values in `$1, $2, ...` order."""
        return [values[name] for name in self.placeholders]


def shown(text: str, limit: int = SHOWN) -> str:
    """Learner text as a refusal quotes it: one line, at most `limit` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def unreadable(exc: ParseError) -> Refused:
    """The parser's own message, as one line; an unterminated quote or comment named as such."""
    message = shown(exc.args[0])
    if message.startswith("unterminated"):
        message += " (a quote or comment is never closed)"
    return Refused(f"PostgreSQL could not read it, so nothing was run: {message}")


def _delete_with_limit(text: str, exc: ParseError) -> bool:
    """True when the parser stopped at LIMIT or ORDER inside a DELETE: the habit of another database."""
    at = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], int) else -1
    word = text[at : at + 5].upper()
    if at < 0 or not (word == "LIMIT" or word.startswith("ORDER")):
        return False
    try:
        before = [t.name for t in scan(text[:at])]
    except ParseError:
        return False
    depth = 0
    kinds: list[str] = []  # the statement kind opened at each depth of parentheses
    for name in before:
        if name == "ASCII_40":
            depth += 1
        elif name == "ASCII_41":
            depth = max(depth - 1, 0)
            kinds = kinds[: depth + 1]
        elif name in ("DELETE_P", "SELECT", "UPDATE", "INSERT"):
            kinds = kinds[:depth] + [""] * (depth - len(kinds)) + [name]
    return len(kinds) > depth and kinds[depth] == "DELETE_P"


def _tokens(text: str) -> list:
    try:
        return list(scan(text))
    except ParseError as exc:
        raise unreadable(exc) from None


NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _placeholders(text: str, tokens: list) -> list[tuple[int, int, str]]:
    """(start, end, name) of each `:name` or `:'name'`, from the scanner's tokens:
    a `:` right before a name or a quoted name, not right after a word."""
    found = []
    for colon, nxt in zip(tokens, tokens[1:], strict=False):
        if text[colon.start : colon.end + 1] != ":" or nxt.start != colon.end + 1:
            continue
        if colon.start and (text[colon.start - 1].isalnum() or text[colon.start - 1] in "_:"):
            continue
        word = text[nxt.start : nxt.end + 1]
        quoted = word[:1] == "'" and word[-1:] == "'"
        name = word[1:-1] if quoted else word
        if NAME.fullmatch(name):
            found.append((colon.start, nxt.end + 1, name))
    return found


def _forms(text: str, spots: list[tuple[int, int, str]], allowed: tuple[str, ...]):
    names: list[str] = []
    psy, server, at = [], [], 0
    for start, end, name in spots:
        if name not in allowed:
            known = ", ".join(f":{a}" for a in allowed) or "none"
            raise Refused(f":{shown(name, 40)} is not a value this exercise passes in (it passes: {known})")
        if name not in names:
            names.append(name)
        psy += [text[at:start].replace("%", "%%"), f"%({name})s"]
        server += [text[at:start], f"${names.index(name) + 1}"]
        at = end
    psy.append(text[at:].replace("%", "%%"))
    server.append(text[at:])
    return tuple(names), "".join(psy).strip(), "".join(server).strip()


def _parse(for_server: str) -> Any:
    """The one statement's tree; Refused for none, several, or unreadable."""
    try:
        stmts = pglast.parse_sql(for_server)
    except ParseError as exc:
        refusal = unreadable(exc)
        if _delete_with_limit(for_server, exc):
            refusal.hint = DELETE_LIMIT_HINT
        raise refusal from None
    except RecursionError:
        raise Refused("it is nested too deeply for a queue statement, so nothing was run") from None
    if not stmts:
        raise Refused("there is only a comment here: write one SQL statement")
    if len(stmts) > 1:
        raise Refused("exactly one statement, please: PostgreSQL found more than one, so nothing was run")
    return stmts[0].stmt


def kind_word(stmt: Any) -> str:
    """The statement's kind as the learner would name it, from the tree."""
    if getattr(stmt, "withClause", None) is not None:
        return "WITH"
    return _body_word(stmt)


def _body_word(stmt: Any) -> str:
    name = type(stmt).__name__
    if name == "SelectStmt":
        return "VALUES" if stmt.valuesLists else "SELECT"
    return {
        "InsertStmt": "INSERT", "UpdateStmt": "UPDATE", "DeleteStmt": "DELETE", "MergeStmt": "MERGE",
        "IndexStmt": "CREATE",
    }.get(name, "")  # fmt: skip


def _check_tree(every: list, nodes: frozenset[str], allowance: Allowance, reading: Reading | None) -> None:
    """Refuse any node, function or table the exercise does not need. A table
    name is judged by where PostgreSQL resolves it (`reading`): a WITH query in
    scope, a table, or the statement's target, which is always a table."""
    functions = FUNCTIONS | allowance.functions
    # SELECT INTO first, then functions and tables: naming them says more than their clause.
    for node, _ in sorted(every, key=lambda pair: _order(pair[0])):
        name = type(node).__name__
        if isinstance(node, ast.FuncCall):
            schema, fname = function_name(node)
            if name not in nodes or schema not in (None, "pg_catalog") or fname not in functions:
                use = (
                    "a queue statement uses now(), count(), unnest() and the like"
                    if name in nodes
                    else "the index is built on columns, with a plain WHERE"
                )
                raise Refused(
                    f"{shown(fname, 40)}() is not a function this exercise needs ({use}), so nothing was run"
                )
        if name not in nodes:
            raise Refused(f"this exercise has no use for {_describe(name)}, so nothing was run")
        if isinstance(node, ast.RangeVar):
            kind = reading.kinds.get(id(node), "table") if reading else "table"
            if kind == "target":
                _check_target(node)
            elif kind == "table":
                _check_table(node, allowance)


def _check_depth(every: list) -> None:
    if any(depth > MAX_DEPTH for _, depth in every):
        raise Refused("it is nested too deeply for a queue statement, so nothing was run")


def _order(node: Any) -> int:
    if isinstance(node, ast.IntoClause):
        return 0
    return 1 if isinstance(node, (ast.FuncCall, ast.RangeVar)) else 2


def _check_table(node: Any, allowance: Allowance) -> None:
    table, schema = node.relname, node.schemaname
    ok = node.catalogname is None and (
        (schema in (None, "public") and table in TABLES)
        or (schema in (None, "pg_catalog") and table in allowance.tables)
    )
    if not ok:
        reach = ", ".join(sorted(TABLES | allowance.tables))
        raise Refused(
            f"this exercise reads only {reach}; {shown(_whole_name(node), 60)} is not one, so nothing was run"
        )


def _check_target(node: Any) -> None:
    """What an INSERT, UPDATE, DELETE or MERGE changes is a table, never a WITH query: only jobs."""
    if node.catalogname is None and node.schemaname in (None, "public") and node.relname in TABLES:
        return
    raise Refused(
        f"this exercise changes only jobs; {shown(_whole_name(node), 60)} is not one, so nothing was run"
    )


def _whole_name(node: Any) -> str:
    return ".".join(p for p in (node.catalogname, node.schemaname, node.relname) if p)


MAX_ARRAY_ROWS = 10_000


def bounded(select: Any, reading: Reading) -> bool:
    """Whether a SELECT's rows are capped: by a LIMIT that is a placeholder (the checker
    passes a batch size) or a number no larger than MAX_ARRAY_ROWS, or by reading only one
    WITH query so capped, with nothing that multiplies its rows (a WITH query may pick the
    batch that ARRAY(SELECT id FROM batch) then gathers)."""
    limit = getattr(select, "limitCount", None)
    if isinstance(limit, ast.ParamRef):
        return True
    value = getattr(getattr(limit, "val", None), "ival", None)
    if isinstance(value, int) and 0 <= value <= MAX_ARRAY_ROWS:
        return True
    source = select.fromClause if isinstance(select, ast.SelectStmt) and select.larg is None else None
    if not source or len(source) != 1 or select.withClause is not None or multiplies(select.targetList):
        return False
    cte = reading.resolved.get(id(source[0]))
    return cte is not None and isinstance(cte.ctequery, ast.SelectStmt) and bounded(cte.ctequery, reading)


def _check_growth(reading: Reading, every: list, allowance: Allowance) -> None:
    """Refuse an ARRAY(SELECT ...) (it gathers every row it reads into one
    value: the aggregates that do the same are off the allow-list), a WITH
    query the planner must copy wherever it is named (NOT MATERIALIZED: no
    exercise needs one), a pg_notify that would run for more than the row an
    INSERT returned, and a statement that grows past MAX_EXPANSION (nodes and
    characters) or MAX_RELATIONS tables when the planner inlines it."""
    arrays = [
        n for n, _ in every if isinstance(n, ast.SubLink) and n.subLinkType == SubLinkType.ARRAY_SUBLINK
    ]
    if arrays and allowance.array_subquery and not all(bounded(a.subselect, reading) for a in arrays):
        raise Refused(
            f"an ARRAY(SELECT ...) here needs a LIMIT (a placeholder, or at most {MAX_ARRAY_ROWS:,}): "
            "it gathers every row it reads into one value, so nothing was run"
        )
    if arrays and not allowance.array_subquery:
        raise Refused(
            "this exercise has no use for ARRAY(SELECT ...), which gathers every row into one value "
            "(use = ANY or IN (SELECT ...)), so nothing was run"
        )
    if reading.not_materialized:
        raise Refused("this exercise has no use for NOT MATERIALIZED on a WITH query, so nothing was run")
    if reading.stray_notify:
        raise Refused(
            "pg_notify may run only once per job enqueued: call it over the rows your INSERT returns "
            "(in its RETURNING, or reading the WITH query that inserts), so nothing was run"
        )
    if reading.relations > MAX_RELATIONS:
        raise Refused(
            f"once PostgreSQL inlines its WITH queries it reads tables over {MAX_RELATIONS:,} times "
            "(a WITH query named twice is copied twice), so nothing was run"
        )
    if reading.biggest > MAX_EXPANSION:
        raise Refused(
            f"once PostgreSQL inlines its WITH queries it grows past {MAX_EXPANSION:,} nodes and characters "
            "(a column or text used over and over multiplies its size), so nothing was run"
        )


def _check_index(stmt: Any) -> None:
    """A plain B-tree index: no tablespace, storage option or operator class
    (its expressions and predicate were checked for functions with the tree)."""
    if stmt.accessMethod != "btree":
        raise Refused(
            f"this exercise builds a B-tree index (the default); not USING {shown(stmt.accessMethod, 30)}"
        )
    if stmt.tableSpace or stmt.options:
        raise Refused("this exercise builds the index in the table's own place: no TABLESPACE or WITH (...)")
    if any(elem.opclass for elem in (stmt.indexParams or ()) + (stmt.indexIncludingParams or ())):
        raise Refused("this exercise needs no operator class: index the column itself")


def _describe(node_name: str) -> str:
    known = {
        "IntoClause": "SELECT INTO (it would make a table)",
        "VariableSetStmt": "SET",
        "TransactionStmt": "transaction control",
        "FuncCall": "a function call",
        "SubLink": "a subquery",
    }
    return known.get(node_name, f"a {node_name.removesuffix('Stmt')} clause")


def read(
    text: str,
    allowed: tuple[str, ...],
    words: frozenset[str] = STATEMENT_WORDS,
    *,
    exercise: str | None = None,
) -> LearnerSQL:
    """Check the text's shape and placeholders; Refused if it cannot be run.
    `words`: the statements this exercise accepts, by their kind; `exercise`:
    its key, for the functions and tables it alone may use (ALLOWANCES)."""
    if text is None or (isinstance(text, str) and not text.strip()):
        raise Refused("write one SQL statement first: the cell is empty")
    if not isinstance(text, str):
        raise Refused(f"write one SQL statement as text: this is a {type(text).__name__}, not text")
    if len(text) > MAX_CHARS:
        raise Refused(f"that is {len(text):,} characters; one statement here fits in {MAX_CHARS:,}")
    if "\x00" in text:
        raise Refused("the text holds a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Refused(
            f"the text holds a character that is not valid UTF-8 (U+{ord(exc.object[exc.start]):04X} "
            "on its own), so nothing was run"
        ) from None
    tokens = _tokens(text)
    names, for_psycopg, for_server = _forms(text, _placeholders(text, tokens), allowed)
    stmt = _parse(for_server)
    first = kind_word(stmt)
    scanned = [text[t.start : t.end + 1].upper() for t in tokens if not t.name.endswith("COMMENT")]
    if first not in words:
        kinds = (
            "one query (WITH, SELECT, UPDATE, DELETE or INSERT)"
            if words == STATEMENT_WORDS
            else (" or ".join(sorted(words)) + " statement")
        )
        said = first or shown(
            " ".join(scanned[:2] if scanned[:1] in (["CREATE"], ["ALTER"]) else scanned[:1]), 30
        )
        raise Refused(f"this exercise runs {kinds}; {said} is not one, so nothing was run")
    nodes = INDEX_NODES if first == "CREATE" else QUERY_NODES
    allowance = ALLOWANCES.get(exercise or "", Allowance())
    every = list(walk(stmt))
    _check_depth(every)
    if any(isinstance(n, ast.WithClause) and n.recursive for n, _ in every):
        raise Refused("this exercise has no use for WITH RECURSIVE, so nothing was run")
    reading = None if first == "CREATE" else Reading(stmt)
    _check_tree(every, nodes, allowance, reading)
    if reading is not None:
        _check_growth(reading, every, allowance)
    else:
        _check_index(stmt)
    return LearnerSQL(text, first, tuple(scanned[:3]), names, for_psycopg, for_server, stmt)
