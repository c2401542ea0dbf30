"""The learner's SQL text, read before it goes anywhere near a server.

What is read here: the statement's first word (comments skipped) and its psql
placeholders (`:name`, `:'name'`), turned into psycopg's `%(name)s` form for
running and PostgreSQL's `$1` form for the server's parse check. Whether it
is one statement, and valid, is the server's call (`sandbox.parse`), not a
split on `;` here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BadInput

MAX_CHARS = 20_000
# The statements an exercise can ask for; DDL, COPY, SET, transaction control
# and the rest are refused before anything runs.
STATEMENT_WORDS = frozenset({"WITH", "SELECT", "UPDATE", "DELETE", "INSERT", "VALUES", "MERGE"})


class Refused(BadInput):
    """The learner's SQL was not run: the message says why and what to write."""


@dataclass(frozen=True)
class LearnerSQL:
    """One statement as the learner typed it, with its placeholders."""

    text: str
    first_word: str
    leading: tuple[str, ...]  # the first three words, upper case
    placeholders: tuple[str, ...]
    for_psycopg: str
    for_server: str

    def params(self, values: dict) -> dict:
        """The values this statement uses, by name."""
        return {name: values[name] for name in self.placeholders}

    def positional(self, values: dict) -> list:
        """The same values in `$1, $2, ...` order."""
        return [values[name] for name in self.placeholders]


def _scan(text: str):
    """Yield (kind, piece) for the text: 'code', 'skip' (comments, strings,
    quoted identifiers, dollar quotes) and 'param' (a placeholder's name)."""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            yield "comment", text[i:end]
            i = end
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            if depth:
                raise Refused("a /* comment is never closed with */")
            yield "comment", text[i:j]
            i = j
        elif ch in "'\"":
            j = i + 1
            while True:
                j = text.find(ch, j)
                if j < 0:
                    raise Refused(f"a {ch} quote is never closed")
                if text.startswith(ch * 2, j):
                    j += 2
                    continue
                break
            yield "skip", text[i : j + 1]
            i = j + 1
        elif ch == "$" and (tag_end := _dollar_tag(text, i)) is not None:
            tag = text[i:tag_end]
            close = text.find(tag, tag_end)
            if close < 0:
                raise Refused(f"a {tag} quote is never closed")
            yield "skip", text[i : close + len(tag)]
            i = close + len(tag)
        elif ch == ":" and (found := _placeholder(text, i)) is not None:
            name, end = found
            yield "param", name
            i = end
        elif ch == ":" and text.startswith("::", i):
            yield "code", "::"
            i += 2
        else:
            yield "code", ch
            i += 1


def _dollar_tag(text: str, i: int) -> int | None:
    j = i + 1
    while j < len(text) and (text[j].isalnum() or text[j] == "_"):
        j += 1
    if j < len(text) and text[j] == "$" and not text[i + 1 : j][:1].isdigit():
        return j + 1
    return None


def _placeholder(text: str, i: int) -> tuple[str, int] | None:
    if i and (text[i - 1] == ":" or text[i - 1].isalnum() or text[i - 1] == "_"):
        return None
    j = i + 1
    quoted = j < len(text) and text[j] == "'"
    j += quoted
    k = j
    while k < len(text) and (text[k].isalnum() or text[k] == "_"):
        k += 1
    if k == j or (quoted and not text.startswith("'", k)):
        return None
    return text[j:k], k + quoted


def read(text: str, allowed: tuple[str, ...], words: frozenset[str] = STATEMENT_WORDS) -> LearnerSQL:
    """Check the text's shape and placeholders; Refused if it cannot be run.
    `words`: the statements this exercise accepts, by their first word."""
    if not isinstance(text, str) or not text.strip():
        raise Refused("write one SQL statement first: the cell is empty")
    if len(text) > MAX_CHARS:
        raise Refused(f"that is {len(text):,} characters; one statement here fits in {MAX_CHARS:,}")
    if "\x00" in text:
        raise Refused("the text holds a NUL character")
    code, names, psy, server = [], [], [], []
    for kind, piece in _scan(text):
        if kind == "param":
            if piece not in allowed:
                known = ", ".join(f":{a}" for a in allowed) or "none"
                raise Refused(f":{piece} is not a value this exercise passes in (it passes: {known})")
            if piece not in names:
                names.append(piece)
            psy.append(f"%({piece})s")
            server.append(f"${names.index(piece) + 1}")
            code.append(" ? ")
            continue
        if kind == "code":
            code.append(piece)
        psy.append(piece.replace("%", "%%"))
        server.append(piece)
    words_of = "".join(code).replace("(", " ").split()
    first = words_of[0].upper() if words_of else ""
    if not first:
        raise Refused("there is only a comment here: write one SQL statement")
    if first not in words:
        kinds = (
            "one query (WITH, SELECT, UPDATE, DELETE or INSERT)"
            if words == STATEMENT_WORDS
            else (" or ".join(sorted(words)) + " statement")
        )
        raise Refused(f"this exercise runs {kinds}; {first} is not one, so nothing was run")
    leading = tuple(w.upper() for w in words_of[:3])
    return LearnerSQL(text, first, leading, tuple(names), "".join(psy).strip(), "".join(server).strip())
