"""Write results so that a crash or Ctrl-C never leaves a half-written file or directory under the
final name, and an existing result is only replaced once its successor is complete.

Also the guards around an output directory: :func:`out_lock` (one nteval process writing an OUT at
a time) and the sweep of temporary directories left by killed runs (their names carry the owner's
pid: ``.NAME.tmp-PID-XXXX``; a later run removes those whose owner is dead).
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import InputError

_OWNED = re.compile(r"^\.(?P<name>.+)\.(?:tmp|old)-(?P<pid>\d+)-[^/]+$")


def sha256_file(path: Path) -> str:
    """The sha256 of file ``path``, read in 1 MiB chunks (a model graph or a vectors file need not fit
    in memory twice)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def sweep_stale(parent: Path, name: str) -> list[Path]:
    """Remove ``.NAME.tmp-PID-*`` / ``.NAME.old-PID-*`` beside NAME whose owner process is dead
    (left by a run killed with SIGKILL, which no handler sees). Returns what was removed."""
    removed = []
    with contextlib.suppress(OSError):
        for p in Path(parent).iterdir():
            m = _OWNED.match(p.name)
            if m and m["name"] == name and int(m["pid"]) != os.getpid() and not pid_alive(int(m["pid"])):
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() and not p.is_symlink() else p.unlink(missing_ok=True)
                removed.append(p)
    return removed


def _check_target(final: Path) -> None:
    """Refuse output names whose parent cannot hold a sibling (``.``, ``/``, the working directory
    or one of its parents): such a directory cannot be built beside and renamed into place."""
    cwd = Path.cwd().resolve()
    resolved = final.resolve()
    if resolved == cwd or resolved in cwd.parents or resolved.parent == resolved:
        raise InputError(final, "cannot be replaced: it is the current directory, one of its parents or the root "
                                "(give a new directory name, e.g. --out idx)")


def _flock_or_holder(fd: int, mode: int) -> str | None:
    """Lock ``fd`` without waiting: None when locked; else what the holder wrote in the file (its
    pid, or "" for readers), with ``fd`` closed."""
    import fcntl

    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return None
    except BlockingIOError:
        try:
            return os.pread(fd, 32, 0).decode(errors="replace").strip()
        finally:
            os.close(fd)


def _still_there(fd: int, lock: Path) -> bool:
    """Is ``fd`` still the file at ``lock``? The holder before us may have unlinked it between
    our open and our lock: then we locked an orphan inode and must retry on the current file."""
    try:
        return os.path.samestat(os.fstat(fd), os.stat(lock))
    except FileNotFoundError:
        return False


def _unwritable(out: Path, parent: Path, err: OSError, what: str) -> InputError:
    why = next((f"{p} is a file, not a directory" for p in (parent, *parent.parents) if p.is_file()),
               f"{(err.strerror or str(err)).lower()} in {parent}")
    return InputError(out, f"cannot write here ({why}): choose another {what}")


@contextlib.contextmanager
def out_lock(out: str | os.PathLike[str], what: str = "--out") -> Iterator[Path]:
    """Hold an exclusive lock on output ``out`` for the block: a file ``.NAME.lock`` beside it,
    ``flock``-ed (released by the kernel if the process dies, so never stale). A second nteval
    process writing the same ``out`` gets a one-line :class:`InputError` at once. The lock file is
    removed on release. Re-entrant within one process."""
    import fcntl

    out = Path(out)
    key = str(out.resolve())
    if key in _HELD:
        _HELD[key] += 1
        try:
            yield out
        finally:
            _HELD[key] -= 1
        return
    parent = out.resolve().parent
    lock = parent / f".{out.resolve().name}.lock"
    while True:
        try:
            parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        except (PermissionError, OSError) as err:
            if isinstance(err, (FileExistsError, NotADirectoryError)) or err.errno in (errno.EROFS, errno.EACCES,
                                                                                         errno.EPERM, errno.ENOTDIR):
                raise _unwritable(out, parent, err, what) from None
            raise
        holder = _flock_or_holder(fd, fcntl.LOCK_EX)
        if holder is not None:
            who = f" (pid {holder})" if holder.isdigit() else ""
            if not holder:  # readers hold it shared and write no pid (see read_lock)
                raise InputError(out, "another nteval process is reading this index (a protocol run, a grid, an "
                                      "export…); wait for it to finish: it would search a changing index") from None
            raise InputError(out, f"another nteval process{who} is writing here; wait for it to finish or choose "
                                  f"another {what}") from None
        if _still_there(fd, lock):
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _HELD[key] = 1
        yield out
    finally:
        _HELD.pop(key, None)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        os.close(fd)


_HELD: dict[str, int] = {}
_READING: dict[str, int] = {}


@contextlib.contextmanager
def read_lock(path: str | os.PathLike[str], what: str = "index") -> Iterator[Path]:
    """Hold a *shared* lock on ``path`` (an index) for the block: the same ``.NAME.lock`` file that
    :func:`out_lock` locks exclusively, ``flock``-ed shared. Many readers may hold it at once; while
    any does, a writer (``nteval index --update`` or ``--force``) is refused with one line, and a
    reader that comes while a writer holds it is refused too. So a protocol run never searches an
    index that changes under it, and a run cached under an index's fingerprint was made on that
    index. A reader leaves the lock file in place (another may hold it). Re-entrant; a path whose
    parent is not writable (a read-only index) is read without a lock."""
    import fcntl

    path = Path(path)
    key = str(path.resolve())
    if key in _READING or key in _HELD:  # (already read-locked, or being written, by this process)
        _READING[key] = _READING.get(key, 0) + 1
        try:
            yield path
        finally:
            _READING[key] -= 1
            if not _READING[key]:
                del _READING[key]
        return
    if not path.is_dir():  # (not an index: the caller says so; no lock file is left beside a user's file)
        yield path
        return
    lock = path.resolve().parent / f".{path.resolve().name}.lock"
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:  # a read-only place: nobody can write the index there either
            yield path
            return
        holder = _flock_or_holder(fd, fcntl.LOCK_SH)
        if holder is not None:
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise InputError(path, f"another nteval process{who} is writing this {what} (nteval index --update or "
                                   "--force); wait for it to finish") from None
        if _still_there(fd, lock):
            break
        os.close(fd)
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)  # (a writer killed by SIGKILL left its pid: no writer holds it now)
    _READING[key] = 1
    try:
        yield path
    finally:
        _READING.pop(key, None)
        os.close(fd)


@contextlib.contextmanager
def out_dir_lock(out: str | os.PathLike[str]) -> Iterator[Path]:
    """:func:`out_lock` for a command's output directory, which must be a directory if it exists
    (``--out`` naming an existing file is a one-line error, not a traceback from mkdir)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(out, "--out exists and is not a directory")
    with out_lock(out):
        yield out


def _replaceable_default(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def partial_dir(final: str | os.PathLike[str]) -> Path:
    """Where a resumable build of ``final`` works: ``.NAME.partial`` beside it. Not swept as stale
    (its name carries no pid): a later run of the same command resumes from it."""
    final = Path(final)
    return final.parent / f".{final.name}.partial"


@contextlib.contextmanager
def atomic_dir(final: Path, force: bool = False,
               replaceable: Callable[[Path], bool] = _replaceable_default,
               what: str = "a directory this command made",
               resumable: bool = False, keep: Callable[[BaseException], bool] | None = None,
               foreign: Callable[[Path], list[str]] | None = None, doing: str = "--force") -> Iterator[Path]:
    """Yield a fresh temporary directory beside ``final``; rename it to ``final`` on success.

    On any exception (including KeyboardInterrupt) the temporary directory is removed and ``final``
    is untouched. With ``force`` an existing ``final`` is moved aside first and deleted only after
    the new one is in place — and only if ``replaceable(final)`` (e.g. it is an nteval index or an
    empty directory): ``--force`` never deletes a user's folder or file. ``foreign(final)`` lists
    what a replaceable ``final`` holds that nteval did not write (a user's notes put in an index):
    if anything, the replacement is refused (:func:`refuse_foreign`) before the block runs, and
    again at the rename — the user's entries are never moved into a temporary directory that a
    crash would leave for :func:`sweep_stale` to delete. ``doing`` names the option in that
    refusal (``--force``, ``--update``). The whole build holds
    :func:`out_lock`, and ``final`` is checked again at the rename, so two builds of the same
    ``final`` never silently replace each other.

    ``resumable``: the directory is :func:`partial_dir` instead, as a killed run left it (or new);
    the caller checks what it holds. It is kept after an exception for which ``keep(exc)`` is true
    (and after SIGKILL, which runs nothing), removed after any other.
    """
    final = Path(final)
    _check_target(final)
    with out_lock(final):
        _check_existing(final, force, replaceable, what, foreign, doing)
        final.parent.mkdir(parents=True, exist_ok=True)
        sweep_stale(final.parent, final.name)
        if resumable:
            tmp = partial_dir(final)
            if tmp.is_symlink() or (tmp.exists() and not tmp.is_dir()):
                tmp.unlink()
            tmp.mkdir(exist_ok=True)
        else:
            tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-{os.getpid()}-", dir=final.parent))
            os.chmod(tmp, _DIR_MODE)  # (mkdtemp's 0700 would become the finished directory's mode)
        try:
            yield tmp
            _check_existing(final, force, replaceable, what, foreign, doing)  # again: it may have appeared meanwhile
            old = None
            if final.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{final.name}.old-{os.getpid()}-", dir=final.parent))
                os.rename(final, old / "x")
            try:
                os.rename(tmp, final)
            except BaseException:
                if old is not None:  # put the old one back
                    os.rename(old / "x", final)
                    shutil.rmtree(old, ignore_errors=True)
                raise
        except BaseException as exc:
            if not (keep is not None and keep(exc)):
                shutil.rmtree(tmp, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def refuse_foreign(final: Path, entries: list[str], doing: str = "--force", limit: int = 5) -> None:
    """The one-line refusal to replace directory ``final`` that holds ``entries`` nteval did not
    write (nothing when there are none)."""
    if not entries:
        return
    names = ", ".join(entries[:limit]) + (f" and {len(entries) - limit} more" if len(entries) > limit else "")
    raise InputError(final, f"{doing} refused: it holds {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} "
                            f"nteval did not write ({names}), which replacing it would delete; move them out of it "
                            "first (nothing was changed)")


def _check_existing(final: Path, force: bool, replaceable: Callable[[Path], bool], what: str,
                    foreign: Callable[[Path], list[str]] | None = None, doing: str = "--force") -> None:
    if not (final.exists() or final.is_symlink()):
        return
    if not force:
        raise FileExistsError(f"{final}: already exists (use --force to replace it)")
    empty_dir = final.is_dir() and not final.is_symlink() and not any(final.iterdir())
    if not (empty_dir or replaceable(final)):
        kind = "a file" if not final.is_dir() else ("a symbolic link" if final.is_symlink() else "a directory")
        raise InputError(final, f"--force refused: it is {kind} that is not {what} and not empty; "
                                "nteval only replaces its own output (move it away or choose another --out)")
    if foreign is not None and final.is_dir() and not final.is_symlink():
        refuse_foreign(final, foreign(final), doing)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()
_DIR_MODE = 0o777 & ~_umask()


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


def save_array(path: Path, array) -> None:
    """:func:`numpy.save` atomically, like :func:`write_text`. numpy reports a short write (a full
    disk) as an ``OSError`` without errno or file name: it is raised again as ENOSPC naming ``path``."""
    import errno

    import numpy as np

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".npy", dir=path.parent)
    os.fchmod(fd, _FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, array)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(err, OSError) and err.errno is None:
            raise OSError(errno.ENOSPC, f"{err} (short write)", str(path)) from err
        raise


def check_writable(path: str | os.PathLike[str], what: str = "--out") -> None:
    """A one-line :class:`InputError` now, before any work, if file ``path`` could not be written
    at the end (a read-only or forbidden directory, a file where a directory should be)."""
    path = Path(path)
    parent = path.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=parent)
        os.close(fd)
        os.unlink(tmp)
    except OSError as err:
        raise _unwritable(path, parent, err, what) from None


@contextlib.contextmanager
def file_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """An exclusive advisory lock held for the block, waiting for it (one builder of a cache
    directory at a time: grid workers may ask for the same dense vectors or engine index)."""
    import fcntl

    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
