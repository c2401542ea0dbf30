"""How far a learner's statement reaches once PostgreSQL resolves and inlines it: every table
name resolved in its scope as the server resolves it (a WITH query it can see, or a table), and
an upper bound on the size and the table reads the planner would build from it (`Reading`,
`expansion`). `learner_sql.read` asks it before anything runs; the threat model is in
`learner_sql`'s docstring.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from pglast import ast
from pglast.enums import CTEMaterialize

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
    - `resolved`: the WITH query each FROM name that is one refers to;
    - `not_materialized`, `stray_notify`: a WITH ... AS NOT MATERIALIZED, and a
      pg_notify anywhere but the targets of a SELECT over the one row an INSERT
      returned, or that INSERT's own RETURNING.

    Each query, WITH query and expression is read once, so the time is linear
    in the statement's size."""

    LIMIT = max(MAX_EXPANSION, MAX_RELATIONS) + 1

    def __init__(self, stmt: Any):
        self.kinds: dict[int, str] = {}
        self.resolved: dict[int, Any] = {}  # per FROM name that is a WITH query: that WITH query
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
            isinstance(node, ast.InsertStmt) and _one_row(node.selectStmt) and not multiplies(returning)
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
                self.resolved[id(node)] = cte
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
        return not multiplies(node.targetList)

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
    return not source.fromClause and not multiplies(source.targetList)


def multiplies(targets: Any) -> bool:
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
