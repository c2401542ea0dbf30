"""The course's own errors: each says what went wrong and what to do next."""


class PgqError(Exception):
    """Base class; the CLI and notebooks show its message without a traceback."""


class SetupError(PgqError):
    """PostgreSQL could not be provisioned or reached."""


class BadInput(PgqError, ValueError):
    """A call was refused before any SQL ran; the database is unchanged."""


class Duplicate(PgqError):
    """A unique enqueue with on_conflict="raise" found a live job (ready or running) of
    its kind holding its key: `job_id` is that job's id. Nothing was added."""

    def __init__(self, kind: str, unique_key: str, job_id: int):
        super().__init__(f"a live {kind} job (id {job_id}) already holds unique_key {unique_key!r}")
        self.kind, self.unique_key, self.job_id = kind, unique_key, job_id


class UniqueRace(PgqError):
    """A unique enqueue in a REPEATABLE READ or SERIALIZABLE transaction met a key that another
    session's job took after this transaction's snapshot: nothing was added, and only a new
    snapshot can see that job. Roll back the whole transaction and run it again."""

    def __init__(self, kind: str, keys: list[str]):
        named = f"unique_key {keys[0]!r}" if len(keys) == 1 else f"one of {len(keys):,} unique_keys"
        super().__init__(
            f"unique enqueue of {kind}: another session added a job with {named} after this "
            "transaction's snapshot (REPEATABLE READ or SERIALIZABLE); nothing was added: roll back and "
            "run the transaction again, or enqueue under READ COMMITTED, where the enqueue looks again itself"
        )
        self.kind, self.unique_keys = kind, keys
