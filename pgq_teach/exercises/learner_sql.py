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

import copy
import re
from dataclasses import dataclass, field
from typing import Any

import pglast
from pglast import ast
from pglast.enums import CTEMaterialize, SubLinkType
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
# How many tables the planner may read once it inlines every WITH query into
# each place that names it. A chain of WITH queries that each read the last one
# twice doubles per link, and the planner copies every subtree before anything
# can cancel it (61 MB at 12 links, the cluster down at about 21). A 300-table
# join is still read: the planner's own limits (join_collapse_limit, GEQO) bound it.
MAX_RELATIONS = 1_000
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


def _column_name(expr: Any) -> str | None:
    """The name PostgreSQL gives an output column with no alias, where the
    reader is sure of it (FigureColname's strong cases); None where it is not:
    such a column is then matched by any name."""
    if isinstance(expr, ast.ColumnRef):
        last = (expr.fields or (None,))[-1]
        return str(last.sval) if isinstance(last, ast.String) else None
    if isinstance(expr, ast.FuncCall):
        return function_name(expr)[1]
    if isinstance(expr, ast.TypeCast):
        inner = _column_name(expr.arg)
        if inner is not None:
            return inner
        names = expr.typeName.names if expr.typeName is not None else None
        last = (names or (None,))[-1]
        return str(last.sval) if isinstance(last, ast.String) else None
    return None


OutputColumn = tuple[str | None, int]  # an output column: its name (None: not sure of it) and its cost


@dataclass
class _Item:
    """A FROM item as the reader sees it: its columns and what each costs
    once inlined. A table's own columns cost 1 each."""

    name: str | None
    outputs: list[OutputColumn]
    table: bool = False

    def __post_init__(self) -> None:
        self.named: dict[str, int] = {}
        self.other = 1 if self.table else 0  # the dearest column whose name the reader is not sure of
        for name, cost in self.outputs:
            if name is None:
                self.other = max(self.other, cost)
            else:
                self.named[name] = max(self.named.get(name, 0), cost)
        self.row = 1 + (TABLE_WIDTH if self.table else sum(cost for _, cost in self.outputs))

    def column(self, name: str) -> int:
        return max(self.named.get(name, 0), self.other, 1)

    def star(self) -> list[OutputColumn]:
        return [(None, 1)] * TABLE_WIDTH if self.table else list(self.outputs)

    def named_as(self, name: str | None) -> _Item:
        """The same item under another name, its columns shared, not read again."""
        item = copy.copy(self)
        item.name = name
        return item


TABLE_WIDTH = 20  # columns a table's whole row counts as (jobs has 14)
MAX_TARGETS = 1664  # PostgreSQL's own limit on a target list (MaxTupleAttributeNumber)


class _Level:
    """One query's scope: the WITH queries it may name so far, its FROM items, and the scope around it."""

    def __init__(self, parent: _Level | None):
        self.parent = parent
        self.ctes: dict[str, Any] = {}
        self.items: list[_Item] = []
        self.by_name: dict[str, _Item] = {}
        self.named: dict[str, int] = {}
        self.other = 0
        self._merged: set[int] = set()  # the columns already in `named`: one WITH query named often
        self.notify = False  # pg_notify may be called here: the targets over the rows an INSERT returned

    def add(self, item: _Item) -> None:
        self.items.append(item)
        if item.name is not None:
            self.by_name[item.name] = item
        if id(item.named) not in self._merged:
            self._merged.add(id(item.named))
            for name, cost in item.named.items():
                self.named[name] = max(self.named.get(name, 0), cost)
        self.other = max(self.other, item.other)

    def chain(self):
        level: _Level | None = self
        while level is not None:
            yield level
            level = level.parent

    def cte(self, name: str) -> Any:
        return next((lvl.ctes[name] for lvl in self.chain() if name in lvl.ctes), None)

    def item(self, name: str) -> _Item | None:
        return next((lvl.by_name[name] for lvl in self.chain() if name in lvl.by_name), None)


class Reading:
    """The statement read as PostgreSQL resolves it, in one pass:

    - `kinds`: each table name's meaning in its scope ("cte": a WITH query the
      name can see, which is its own earlier siblings and those of the queries
      around it, never itself; "target": what an INSERT, UPDATE, DELETE or
      MERGE changes, always a table; "lock": FOR UPDATE OF's name of a FROM
      item; anything else a table);
    - `biggest`: an upper bound on the size (nodes, and characters of its names
      and literals) of the statement's largest expression once every WITH query
      and FROM subquery is inlined. Each column costs what its definition
      costs; a column the reader cannot name costs the dearest of its
      relation's unnamed ones, a whole row the sum of its columns;
    - `relations`: an upper bound on the tables the planner reads once every
      WITH query is inlined into every place that names it;
    - `not_materialized`, `stray_notify`: a WITH ... AS NOT MATERIALIZED, and a
      pg_notify anywhere but the targets of a SELECT over the one row an INSERT
      returned, or that INSERT's own RETURNING.

    Each query, WITH query and expression is read once, so the time is linear
    in the statement's size."""

    LIMIT = max(MAX_EXPANSION, MAX_RELATIONS) + 1

    def __init__(self, stmt: Any):
        self.kinds: dict[int, str] = {}
        self.biggest = 0
        self.not_materialized = False
        self.stray_notify = False
        self._items: dict[int, _Item] = {}  # per WITH query: its columns, read once
        self._weight: dict[int, int] = {}  # per WITH query: the tables it reads, inlined
        self._weights = [0]
        self.query(stmt, None)
        self.relations = self._weights[0]

    def _cap(self, value: int) -> int:
        return min(value, self.LIMIT)

    def _count(self, tables: int) -> None:
        self._weights[-1] = self._cap(self._weights[-1] + tables)

    # Queries -------------------------------------------------------------------------------

    def query(self, node: Any, parent: _Level | None) -> list[OutputColumn]:
        """The output columns of a query (a SELECT, VALUES, set operation, or a
        change's RETURNING), having read everything in it."""
        level = _Level(parent)
        if getattr(node, "withClause", None) is not None:
            self._with(node.withClause, level)
        if isinstance(node, ast.SelectStmt):
            return self._select(node, level)
        if isinstance(node, (ast.InsertStmt, ast.UpdateStmt, ast.DeleteStmt, ast.MergeStmt)):
            return self._change(node, level)
        self.expr(node, level)  # anything else is refused by its node type
        return []

    def _with(self, clause: Any, level: _Level) -> None:
        for cte in clause.ctes or ():
            if cte.ctematerialized == CTEMaterialize.CTEMaterializeNever:
                self.not_materialized = True
            self._weights.append(0)
            outputs = self.query(cte.ctequery, level)  # sees its earlier siblings only
            weight = self._weights.pop()
            aliases = [str(a.sval) for a in cte.aliascolnames or ()]
            renamed = [(aliases[i] if i < len(aliases) else n, c) for i, (n, c) in enumerate(outputs)]
            self._items[id(cte)], self._weight[id(cte)] = _Item(str(cte.ctename), renamed), weight
            if not isinstance(cte.ctequery, ast.SelectStmt):  # a change runs once, named or not
                self._count(weight)
            level.ctes[str(cte.ctename)] = cte

    def _select(self, node: Any, level: _Level) -> list[OutputColumn]:
        if node.larg is not None:
            left, right = self.query(node.larg, level), self.query(node.rarg, level)
            outputs = [
                (name, max(cost, right[i][1] if i < len(right) else 0)) for i, (name, cost) in enumerate(left)
            ]
            self.expr([node.sortClause, node.limitCount, node.limitOffset], level)
            return outputs
        if node.valuesLists:
            rows = [
                [self.expr(e, level) for e in getattr(row, "items", None) or row] for row in node.valuesLists
            ]
            width = max(len(r) for r in rows)
            return [(f"column{i + 1}", max(r[i] if i < len(r) else 0 for r in rows)) for i in range(width)]
        for item in node.fromClause or ():
            self._from(item, level)
        level.notify = self._notifies_once(node, level)
        outputs = self._targets(node.targetList, level)
        level.notify = False
        self.expr(
            [
                node.whereClause, node.groupClause, node.havingClause, node.windowClause,
                node.sortClause, node.limitCount, node.limitOffset, node.distinctClause, node.intoClause,
            ],
            level,
        )  # fmt: skip
        self._locks(node.lockingClause, level)
        return outputs

    def _change(self, node: Any, level: _Level) -> list[OutputColumn]:
        target = node.relation
        self.kinds[id(target)] = "target"
        self._count(1)
        item = _Item(target.alias.aliasname if target.alias else target.relname, [], table=True)
        if isinstance(node, ast.InsertStmt):
            if node.selectStmt is not None:
                self.query(node.selectStmt, level)  # the rows it inserts do not see the target
            level.add(item)
            self.expr([node.cols, node.onConflictClause], level)
        elif isinstance(node, ast.UpdateStmt):
            level.add(item)
            for from_item in node.fromClause or ():
                self._from(from_item, level)
            self.expr([node.targetList, node.whereClause], level)
        elif isinstance(node, ast.DeleteStmt):
            level.add(item)
            for from_item in node.usingClause or ():
                self._from(from_item, level)
            self.expr(node.whereClause, level)
        else:  # MERGE
            level.add(item)
            self._from(node.sourceRelation, level)
            self.expr([node.joinCondition, node.mergeWhenClauses], level)
        returning = getattr(node.returningClause, "exprs", None) if node.returningClause is not None else None
        # An INSERT of one row returns it once: a pg_notify in its RETURNING runs once.
        level.notify = (
            isinstance(node, ast.InsertStmt) and _one_row(node.selectStmt) and not _multiplies(returning)
        )
        outputs = self._targets(returning, level)
        level.notify = False
        return outputs

    def _from(self, node: Any, level: _Level) -> None:
        if isinstance(node, ast.RangeVar):
            name = node.alias.aliasname if node.alias else node.relname
            plain = node.schemaname is None and node.catalogname is None
            cte = level.cte(str(node.relname)) if plain else None
            if cte is not None:
                self.kinds[id(node)] = "cte"
                self._count(self._weight[id(cte)])
                level.add(self._items[id(cte)].named_as(name))
            else:
                self._count(1)
                level.add(_Item(name, [], table=True))
        elif isinstance(node, ast.RangeSubselect):
            level.add(_aliased(node.alias, self.query(node.subquery, level)))
        elif isinstance(node, ast.JoinExpr):
            before = len(level.items)
            self._from(node.larg, level)
            self._from(node.rarg, level)
            self.expr(node.quals, level)
            if node.alias is not None:
                joined = [column for item in level.items[before:] for column in item.star()]
                level.add(_aliased(node.alias, joined))
        elif isinstance(node, ast.RangeFunction):
            cost = self.expr(node.functions, level)
            names = [str(c.sval) for c in (node.alias.colnames if node.alias else None) or ()]
            level.add(_aliased(node.alias, [(n, cost) for n in names] + [(None, cost)]))
        else:  # refused by its node type; its tables are judged as tables
            self.expr(node, level)

    def _locks(self, clauses: Any, level: _Level) -> None:
        for clause in clauses or ():
            for rel in getattr(clause, "lockedRels", None) or ():
                self.kinds[id(rel)] = "lock"  # names a FROM item of this query, nothing else

    def _targets(self, targets: Any, level: _Level) -> list[OutputColumn]:
        outputs: list[OutputColumn] = []
        for target in targets or ():
            if len(outputs) > MAX_TARGETS:  # PostgreSQL refuses the statement
                break
            val: Any = getattr(target, "val", None)
            fields: Any = val.fields if isinstance(val, ast.ColumnRef) else None
            if fields and isinstance(fields[-1], ast.A_Star):
                if len(fields) == 1:
                    outputs += [column for item in level.items for column in item.star()]
                else:
                    rel = fields[-2]
                    item = level.item(str(rel.sval)) if isinstance(rel, ast.String) else None
                    outputs += item.star() if item else [(None, self._cap(sum(i.row for i in level.items)))]
                continue
            cost = self.expr(val, level)
            outputs.append((getattr(target, "name", None) or _column_name(val), cost))
        return outputs

    def _notifies_once(self, node: Any, level: _Level) -> bool:
        """Whether this SELECT reads only the rows an INSERT of one row returned,
        with no set-returning function or subquery among its targets: a
        pg_notify there runs once for the job it enqueued."""
        if len(node.fromClause or ()) != 1 or not isinstance(node.fromClause[0], ast.RangeVar):
            return False
        source = node.fromClause[0]
        cte = level.cte(str(source.relname)) if source.schemaname is None else None
        if (
            cte is None
            or not isinstance(cte.ctequery, ast.InsertStmt)
            or not _one_row(cte.ctequery.selectStmt)
        ):
            return False
        return not _multiplies(node.targetList)

    # Expressions --------------------------------------------------------------------------

    def expr(self, node: Any, level: _Level) -> int:
        """An expression's size once inlined (a node 1, a name or literal its
        characters, a column what its definition costs)."""
        if isinstance(node, (list, tuple)):
            return self._cap(sum(self.expr(x, level) for x in node))
        if not isinstance(node, ast.Node):
            return 0
        if isinstance(node, ast.ColumnRef):
            cost = self._cap(1 + self._column(node, level))
        elif isinstance(node, ast.SubLink):
            outputs = self.query(node.subselect, level)
            cost = self._cap(1 + self.expr(node.testexpr, level) + max((c for _, c in outputs), default=0))
        else:
            if isinstance(node, ast.FuncCall) and function_name(node)[1] == "pg_notify" and not level.notify:
                self.stray_notify = True
            if isinstance(node, ast.RangeVar):  # somewhere no query reads it as a FROM item
                self._count(1)
            text = getattr(node, "sval", None) or getattr(node, "fval", None) or getattr(node, "bsval", None)
            own = max(1, len(text)) if isinstance(text, str) else 1
            cost = self._cap(own + sum(self.expr(getattr(node, slot), level) for slot in node))
        self.biggest = max(self.biggest, cost)
        return cost

    def _column(self, ref: Any, level: _Level) -> int:
        fields = ref.fields
        last = fields[-1]
        if isinstance(last, ast.A_Star):
            if len(fields) == 1:
                return self._cap(sum(item.row for item in level.items))
            rel = fields[-2]
            item = level.item(str(rel.sval)) if isinstance(rel, ast.String) else None
            return item.row if item else self._cap(sum(i.row for lvl in level.chain() for i in lvl.items))
        if not isinstance(last, ast.String):
            return 1
        name = str(last.sval)
        if len(fields) > 1 and isinstance(fields[-2], ast.String):
            item = level.item(str(fields[-2].sval))
            if item is not None:
                return item.column(name)
        # A bare name (or one the reader cannot place): any column of that name in
        # scope, any column it cannot name, or a whole row of that name.
        found = 1
        for lvl in level.chain():
            whole = lvl.by_name.get(name)
            found = max(found, lvl.named.get(name, 0), lvl.other, whole.row if whole else 0)
        return found


SETS = frozenset({"unnest"})  # the allowed functions that return many rows


def _one_row(source: Any) -> bool:
    """Whether an INSERT's source is one row: DEFAULT VALUES, one VALUES row, or
    a SELECT with no FROM, no set operation and no set-returning function."""
    if source is None:
        return True
    if not isinstance(source, ast.SelectStmt) or source.larg is not None or source.withClause is not None:
        return False
    if source.valuesLists:
        return len(source.valuesLists) == 1
    return not source.fromClause and not _multiplies(source.targetList)


def _multiplies(targets: Any) -> bool:
    """Whether a target list holds a subquery or a set-returning function, either
    of which can run a call in it more than once per row."""
    return any(
        isinstance(n, ast.SubLink) or (isinstance(n, ast.FuncCall) and function_name(n)[1] in SETS)
        for n, _ in walk(targets)
    )


def _aliased(alias: Any, outputs: list[OutputColumn]) -> _Item:
    """A FROM item named by its alias, whose column names replace the outputs' in order."""
    if alias is None:
        return _Item(None, outputs)
    names = [str(c.sval) for c in alias.colnames or ()]
    return _Item(
        alias.aliasname, [(names[i] if i < len(names) else n, c) for i, (n, c) in enumerate(outputs)]
    )


def expansion(stmt: Any) -> int:
    """An upper bound on the size (nodes, and characters of its names and
    literals) of the statement's largest expression once every WITH query and
    FROM subquery is inlined (`Reading`)."""
    return Reading(stmt).biggest


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


def bounded(select: Any) -> bool:
    """Whether a SELECT's rows are capped by a LIMIT that is a placeholder (the checker
    passes a batch size) or a number no larger than MAX_ARRAY_ROWS."""
    limit = getattr(select, "limitCount", None)
    if isinstance(limit, ast.ParamRef):
        return True
    value = getattr(getattr(limit, "val", None), "ival", None)
    return isinstance(value, int) and 0 <= value <= MAX_ARRAY_ROWS


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
