"""The course's own errors: each says what went wrong and what to do next."""


class PgqError(Exception):
    """Base class; the CLI and notebooks show its message without a traceback."""


class SetupError(PgqError):
    """PostgreSQL could not be provisioned or reached."""


class BadInput(PgqError, ValueError):
    """A call was refused before any SQL ran; the database is unchanged."""
