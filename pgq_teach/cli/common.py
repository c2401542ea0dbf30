"""What every command of `pgq-teach` shares: its lines out (`say`, `say_fitted`),
numbers typed in plain digits (`typed`), and argparse as the course wants it
(`Parser`: refusals in one line, exit code 2, no abbreviations; `DefaultsShown`:
each option's help ends with its default; `joined_negative_values`)."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from .. import checks, tables

# The subcommands of `pgq-teach`, to which each command's module adds its parser.
Subcommands = argparse._SubParsersAction


def say(text: str) -> None:
    """One line to standard output, flushed at once."""
    print(text, flush=True)


def say_fitted(text: str) -> None:
    """Prose, wrapped to the terminal's width (a long line indents its continuation)."""
    say(tables.fit(text, indent="  "))


def typed(kind):
    """An argparse type: a number in plain ASCII digits (checks.number_text), so
    "３" or "1_0" is refused, not read as 3 or 10. Other text argparse refuses
    as it always does ("invalid int value: 'two'")."""

    def parse(text: str):
        if not text.isascii() or "_" in text:
            what = "whole number" if kind is int else "number"
            raise argparse.ArgumentTypeError(f"{text!r} is not a {what} in plain digits 0-9")
        return checks.number_text(text, kind)

    parse.__name__ = kind.__name__
    return parse


class Parser(argparse.ArgumentParser):
    """argparse, with its refusals in one line (and exit code 2, as argparse gives), and no
    abbreviations: `--max-att 3` is refused, not read as --max-attempts (nor would a new
    option quietly change what an old abbreviation meant)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def joined_negative_values(argv: list[str]) -> list[str]:
    """`--delay -1e12` as `--delay=-1e12`: argparse takes a value that starts
    with "-" and is not a plain integer or decimal for an option, and would
    say "expected one argument" instead of refusing the number itself."""
    out: list[str] = []
    for token in argv:
        if (
            out
            and out[-1].startswith("--")
            and "=" not in out[-1]
            and token.startswith("-")
            and _is_number(token)
        ):
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class DefaultsShown(argparse.HelpFormatter):
    """Help that ends each option's text with its default, unless the text already gives it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        unset = (
            action.default is None or isinstance(action.default, bool) or action.default == argparse.SUPPRESS
        )
        # a flag (store_true, or --no-restart storing False) says what it does; "default True" would mislead
        if "default" in text or unset or not action.option_strings:
            return action.help
        return f"{text} (default %(default)s)"
