"""Write results so that a crash or Ctrl-C never leaves a half-written file or directory under the
final name, and an existing result is only replaced once its successor is complete."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_dir(final: Path, force: bool = False) -> Iterator[Path]:
    """Yield a fresh temporary directory beside ``final``; rename it to ``final`` on success.

    On any exception (including KeyboardInterrupt) the temporary directory is removed and ``final``
    is untouched. With ``force`` an existing ``final`` is moved aside first and deleted only after
    the new one is in place.
    """
    final = Path(final)
    if final.exists() and not force:
        raise FileExistsError(f"{final}: already exists (use --force to replace it)")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if final.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{final.name}.old-", dir=final.parent))
        os.rename(final, old / "x")
    os.rename(tmp, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()


def write_text(path: Path, text: str) -> None:
    """Write a file atomically (temp file in the same directory, fsync, rename), with the usual
    permissions (mkstemp's 0600 would surprise users sharing results)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.fchmod(fd, _FILE_MODE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
