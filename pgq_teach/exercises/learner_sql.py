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
  every table named either `jobs`, a WITH query of the statement itself, or a
  table the exercise names (pg_stat_activity for lesson 09).
- No value grows without bound: a WITH RECURSIVE is refused, and so is a
  statement whose expressions, once the planner inlines its WITH queries and
  FROM subqueries, would pass MAX_EXPANSION nodes and characters of text
  (`expansion`). A chain of
  WITH queries that each use the last one's column twice (`k || k`,
  `concat(k, k)`, `jsonb_build_array(k, k)`) calls no forbidden function, yet
  doubles per link, and the planner builds that tree where no cancel reaches.
- This reader is the first line, not the boundary: the server's own prepare
  reads the statement again (`sandbox.parse`), and what the statement could do
  if it got through anyway is bounded by the role it runs as (`sandbox`).

psql placeholders (`:name`, `:'name'`) are found among the scanner's tokens
and turned into psycopg's `%(name)s` form for running and PostgreSQL's `$1`
form for parsing and the server's prepare.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pglast
from pglast import ast
from pglast.enums import SubLinkType
from pglast.parser import ParseError, scan

from ..errors import BadInput

MAX_CHARS = 20_000
MAX_DEPTH = 120  # nodes deep; the course's own claim is about 15
# What a statement may grow to once PostgreSQL's planner inlines its WITH
# queries and FROM subqueries, counting a node as 1 and a name or literal as its
# characters (the model answers reach about 500): a chain of WITH queries that
# each use the last one's column twice doubles per link, and the planner builds
# that tree in memory before anything can cancel it. Counting characters also
# bounds the text a statement can build from its literals (one 19,000-character
# literal used three times is refused), so no row it writes or returns can be
# more than about this many times a column's own size.
MAX_EXPANSION = 50_000
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
    # The library's cleanup, sql/cleanup_done.sql, is `id = ANY(ARRAY(SELECT id ... LIMIT :batch))`:
    # the planner then reads the LIMIT's ids first and fetches each by the primary key (lesson 10).
    "10/cleanup": Allowance(array_subquery=True),
}


class Refused(BadInput):
    """The learner's SQL was not run: the message says why and what to write."""


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
        raise unreadable(exc) from None
    except RecursionError:
        raise Refused("it is nested too deeply for a queue statement, so nothing was run") from None
    if not stmts:
        raise Refused("there is only a comment here: write one SQL statement")
    if len(stmts) > 1:
        raise Refused("exactly one statement, please: PostgreSQL found more than one, so nothing was run")
    return stmts[0].stmt


def kind_word(stmt: Any) -> str:
    """The statement's kind as the learner would name it, from the tree."""
    name = type(stmt).__name__
    if getattr(stmt, "withClause", None) is not None:
        return "WITH"
    if name == "SelectStmt":
        return "VALUES" if stmt.valuesLists else "SELECT"
    if name == "IndexStmt":
        return "CREATE"
    return {"InsertStmt": "INSERT", "UpdateStmt": "UPDATE", "DeleteStmt": "DELETE", "MergeStmt": "MERGE"}.get(
        name, ""
    )


def walk(node: Any, depth: int = 0):
    """Every pglast node under `node` (itself included), with its depth."""
    stack = [(node, depth)]
    while stack:
        item, d = stack.pop()
        if isinstance(item, (tuple, list)):
            stack.extend((x, d) for x in item)
        elif isinstance(item, ast.Node):
            yield item, d
            stack.extend((getattr(item, slot), d + 1) for slot in item)


def function_name(call: Any) -> tuple[str | None, str]:
    """(schema or None, name) of a FuncCall, lower case as the server folds it."""
    parts = [p.sval for p in call.funcname]
    return (parts[-2] if len(parts) > 1 else None), parts[-1]


def _check_tree(stmt: Any, nodes: frozenset[str], allowance: Allowance) -> None:
    """Refuse any node, function or table the exercise does not need."""
    ctes = {str(n.ctename) for n, _ in walk(stmt) if isinstance(n, ast.CommonTableExpr)}
    functions = FUNCTIONS | allowance.functions
    every = list(walk(stmt))
    if any(depth > MAX_DEPTH for _, depth in every):
        raise Refused("it is nested too deeply for a queue statement, so nothing was run")
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
            _check_table(node, ctes, allowance)


def _output_name(target: Any) -> str:
    """The column name PostgreSQL gives a target: its alias, else the column,
    function or type it reads."""
    if target.name:
        return str(target.name)
    val: Any = target.val
    last: Any = None
    if isinstance(val, ast.ColumnRef):
        last = (val.fields or (None,))[-1]
    elif isinstance(val, ast.FuncCall):
        return function_name(val)[1]
    elif isinstance(val, ast.TypeCast) and val.typeName is not None:
        last = (val.typeName.names or (None,))[-1]
    return str(last.sval) if isinstance(last, ast.String) else "?column?"


def _outputs(query: Any) -> list[list[Any]]:
    """The output expressions of a WITH query or FROM subquery, one list per
    branch of a UNION (a VALUES list counts as a branch)."""
    if isinstance(query, ast.SelectStmt) and query.larg is not None:
        return _outputs(query.larg) + _outputs(query.rarg)
    if isinstance(query, ast.SelectStmt) and query.valuesLists:
        return [list(getattr(row, "items", None) or row) for row in query.valuesLists]
    if isinstance(query, ast.SelectStmt):
        targets = query.targetList
    else:
        targets = getattr(getattr(query, "returningClause", None), "exprs", None)
    return [[t.val for t in targets or () if isinstance(t, ast.ResTarget)]]


def _cost(expr: Any) -> tuple[int, Counter]:
    """An expression's own size (a node 1, a name or literal its characters),
    and the names of the columns (or whole rows, "*" for all) it reads, each as
    often as it reads it."""
    own, reads = 0, Counter[str]()
    for node, _ in walk(expr):
        text = getattr(node, "sval", None) or getattr(node, "fval", None) or getattr(node, "bsval", None)
        own += max(1, len(text)) if isinstance(text, str) else 1
        if isinstance(node, ast.ColumnRef):
            fields: Any = node.fields
            last = fields[-1]
            if isinstance(last, ast.A_Star):
                reads["*"] += 1
            elif len(fields) == 1:
                reads[last.sval] += 1
                reads["row:" + last.sval] += 1  # a bare name may be a whole row of a WITH query
            else:
                reads[last.sval] += 1
    return own, reads


def expansion(stmt: Any) -> int:
    """An upper bound on the size (nodes, and characters of its names and
    literals) of the statement's largest column once every WITH query and FROM
    subquery is inlined: each column name costs
    the most any definition of that name can cost, each whole row the sum of
    its columns. Conservative: names are matched, not resolved."""
    # A column's definitions are kept once each (it costs the largest); a whole
    # row's are all kept (it costs their sum, a column named twice counts twice).
    defs: dict[str, set[tuple[int, tuple]]] = {}
    rows: dict[str, list[tuple[int, tuple]]] = {}
    links = [0]  # definitions made: no chain of them is longer

    def define(name: str, expr: Any) -> None:
        links[0] += 1
        own, reads = _cost(expr)
        shape = (own, tuple(sorted(reads.items())))
        if name.startswith("row:"):
            rows.setdefault(name, []).append(shape)
        else:
            defs.setdefault(name, set()).add(shape)

    for node, _ in walk(stmt):
        if isinstance(node, ast.ResTarget) and node.val is not None:
            define(_output_name(node), node.val)
        if isinstance(node, ast.CommonTableExpr):
            rel, query, aliases = str(node.ctename), node.ctequery, node.aliascolnames
        elif isinstance(node, ast.RangeSubselect) and node.alias is not None:
            rel, query, aliases = str(node.alias.aliasname), node.subquery, node.alias.colnames
        else:
            continue
        for branch in _outputs(query):
            for column, expr in zip(aliases or (), branch, strict=False):
                define(column.sval, expr)
            for expr in branch:
                define("row:" + rel, expr)
    limit = MAX_EXPANSION + 1
    cost: dict[str, int] = dict.fromkeys([*defs, *rows], 1)

    def of(shape: tuple[int, tuple], everything: int) -> int:
        own, reads = shape
        return own + sum(n * (everything if r == "*" else cost.get(r, 1)) for r, n in reads)

    for _ in range(links[0] + 2):  # one round per link of the longest possible chain
        everything = min(limit, sum(v for k, v in cost.items() if not k.startswith("row:")))
        new = {name: min(limit, max(of(s, everything) for s in shapes)) for name, shapes in defs.items()}
        new |= {name: min(limit, sum(of(s, everything) for s in shapes)) for name, shapes in rows.items()}
        if new == cost:
            break
        cost = new
    return max(cost.values(), default=0)


def _order(node: Any) -> int:
    if isinstance(node, ast.IntoClause):
        return 0
    return 1 if isinstance(node, (ast.FuncCall, ast.RangeVar)) else 2


def _check_table(node: Any, ctes: set[str], allowance: Allowance) -> None:
    table, schema = node.relname, node.schemaname
    ok = node.catalogname is None and (
        (schema is None and table in ctes)
        or (schema in (None, "public") and table in TABLES)
        or (schema in (None, "pg_catalog") and table in allowance.tables)
    )
    if not ok:
        whole = ".".join(p for p in (node.catalogname, schema, table) if p)
        reach = ", ".join(sorted(TABLES | allowance.tables))
        raise Refused(f"this exercise reads only {reach}; {shown(whole, 60)} is not one, so nothing was run")


MAX_ARRAY_ROWS = 10_000


def bounded(select: Any) -> bool:
    """Whether a SELECT's rows are capped by a LIMIT that is a placeholder (the checker
    passes a batch size) or a number no larger than MAX_ARRAY_ROWS."""
    limit = getattr(select, "limitCount", None)
    if isinstance(limit, ast.ParamRef):
        return True
    value = getattr(getattr(limit, "val", None), "ival", None)
    return isinstance(value, int) and 0 <= value <= MAX_ARRAY_ROWS


def _check_growth(stmt: Any, allowance: Allowance) -> None:
    """Refuse a recursive WITH (no exercise needs one, and each round can
    double a value), an ARRAY(SELECT ...) (it gathers every row it reads into
    one value: the aggregates that do the same are off the allow-list), and a
    statement that grows past MAX_EXPANSION (nodes and characters) when the
    planner inlines it."""
    every = [n for n, _ in walk(stmt)]
    if any(isinstance(n, ast.WithClause) and n.recursive for n in every):
        raise Refused("this exercise has no use for WITH RECURSIVE, so nothing was run")
    arrays = [n for n in every if isinstance(n, ast.SubLink) and n.subLinkType == SubLinkType.ARRAY_SUBLINK]
    if arrays and allowance.array_subquery and not all(bounded(a.subselect) for a in arrays):
        raise Refused(
            f"an ARRAY(SELECT ...) here needs a LIMIT (a placeholder, or at most {MAX_ARRAY_ROWS:,}): "
            "it gathers every row it reads into one value, so nothing was run"
        )
    if arrays and not allowance.array_subquery:
        raise Refused(
            "this exercise has no use for ARRAY(SELECT ...), which gathers every row into one value "
            "(use = ANY or IN (SELECT ...)), so nothing was run"
        )
    if expansion(stmt) > MAX_EXPANSION:
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
    if not isinstance(text, str) or not text.strip():
        raise Refused("write one SQL statement first: the cell is empty")
    if len(text) > MAX_CHARS:
        raise Refused(f"that is {len(text):,} characters; one statement here fits in {MAX_CHARS:,}")
    if "\x00" in text:
        raise Refused("the text holds a NUL character")
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
    _check_tree(stmt, nodes, allowance)
    _check_growth(stmt, allowance)
    if first == "CREATE":
        _check_index(stmt)
    return LearnerSQL(text, first, tuple(scanned[:3]), names, for_psycopg, for_server, stmt)
