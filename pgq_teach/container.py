"""PostgreSQL in Docker, through testcontainers (PGQ_BACKEND=docker or auto)."""

from __future__ import annotations

import os

from .errors import SetupError

DEFAULT_IMAGE = "postgres:18"
_running = []  # keep the container object alive as long as this process


def engine_answers(timeout: float = 1.0) -> bool:
    """True if a Docker engine answers a ping within `timeout` seconds."""
    try:
        import docker

        docker.from_env(timeout=timeout).ping()
        return True
    except Exception:
        return False


def start() -> tuple[str, str]:
    """Start a container; return (connection string, image)."""
    image = os.environ.get("PGQ_IMAGE", DEFAULT_IMAGE)
    try:
        from docker.errors import DockerException
        from testcontainers.community.postgres import PostgresContainer
    except ImportError as exc:
        raise SetupError(f"The Docker backend needs testcontainers: {exc}") from None
    try:
        box = PostgresContainer(image)
        box.start()
    except DockerException as exc:
        raise SetupError(
            "PGQ_BACKEND=docker, but no Docker engine answers "
            f"({type(exc).__name__}). Start Docker, or unset PGQ_BACKEND to use "
            "the embedded PostgreSQL, which needs nothing installed."
        ) from None
    _running.append(box)
    return box.get_connection_url(driver=None), image
