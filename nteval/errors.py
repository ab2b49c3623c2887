"""One exception type for bad user input: the CLI prints it as one line and exits non-zero."""
from __future__ import annotations

from os import PathLike

#: Longest repr of a user-supplied value put into an error message (see :func:`short`).
MAX_VALUE_CHARS = 80


def short(value: object, limit: int = MAX_VALUE_CHARS) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for error messages.

    A user value interpolated raw into a message can be arbitrarily large (a YAML alias bomb
    expands to gigabytes): this uses :mod:`reprlib`, which looks at a bounded part of nested
    containers and strings, so the cost is bounded too.
    """
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxtuple, r.maxdict, r.maxset = 3, 6, 6, 6, 6
    r.maxstring = r.maxother = r.maxlong = limit
    text = r.repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class InputError(Exception):
    """Bad input. ``str(err)`` is a complete one-line message naming the file and the place."""

    def __init__(self, path: str | PathLike[str] | None, message: str, place: str | None = None):
        self.path = str(path) if path is not None else None
        self.place = place
        self.message = " ".join(str(message).split())  # always one line
        where = self.path or ""
        if place:
            where = f"{where}:{place}" if where else place
        super().__init__(f"{where}: {self.message}" if where else self.message)

    def __reduce__(self):  # survives pickling across worker processes
        return (InputError, (self.path, self.message, self.place))


class LuceneError(RuntimeError):
    """A Lucene builder JVM failed (not the input's fault: e.g. a full disk). The CLI says it in one
    line, exit status 1; a build keeps its parsed files, so the same command resumes once the cause
    is fixed."""


def read_json_file(path: str | PathLike[str], label: str, fix: str):
    """The JSON value in file ``path``; a file that is not UTF-8 or not JSON is a one-line
    :class:`InputError` "``label``: what is wrong (``fix``)" with the line and column."""
    import json
    from pathlib import Path

    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InputError(path, f"{label}: not UTF-8 text ({fix})") from None
    except json.JSONDecodeError as err:
        raise InputError(path, f"{label}: {err.msg} ({fix})", place=f"line {err.lineno}, column {err.colno}") from None


def env_int(name: str, default: int, minimum: int = 0) -> int:
    """The whole number in environment variable ``name`` (``default`` when unset or empty); any
    other value is a one-line :class:`InputError` naming the variable."""
    import os

    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise InputError(None, f"{name} must be a whole number ≥ {minimum}, got {short(raw)}")
    return value


def suggest(word: object, choices: object) -> str:
    """" (did you mean X?)" for the closest of ``choices`` to a misspelt ``word``, else ""."""
    import difflib

    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)  # type: ignore[union-attr]
    return f" (did you mean {close[0]}?)" if close else ""
