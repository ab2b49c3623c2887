"""One exception type for bad user input: the CLI prints it as one line and exits non-zero."""
from __future__ import annotations

import re
from collections.abc import Iterable
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


#: a password written in a URL: ``user:PASSWORD@`` (the userinfo of ``scheme://``: up to the last @
#: before the path, as URL parsers read it), or a
#: ``password=PASSWORD`` parameter (libpq's URL parameters, a keyword string); a ``${NAME}``
#: placeholder is not one (it is replaced when a request is made, and shows as written)
_URL_PASSWORDS = (re.compile(r"(://[^:/?#\s]*:)(?!\$\{[A-Za-z_][A-Za-z0-9_]*\}@)([^/?#\s]*)(@)"),
                  re.compile(r"((?:^|[?&\s])password=)(?!\$\{[A-Za-z_][A-Za-z0-9_]*\}(?:[&\s]|$))([^&\s]*)()"))


def url_passwords(text: str) -> list[str]:
    """The passwords written in the URLs of ``text`` (see :func:`redact_url`)."""
    return [m.group(2) for p in _URL_PASSWORDS for m in p.finditer(str(text)) if m.group(2)]


def ambiguous_password(url: str) -> bool:
    """Whether a postgresql:// URL's password holds an unencoded ``@``: URL parsers (and
    :func:`redact_url`) read the password up to the last ``@`` of the authority, libpq up to the
    first, and then names the rest of it as the host in its error ("failed to resolve host
    'REST@db'"), which no redaction of the password as written can catch."""
    m = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)", str(url))
    return m is not None and m.group(1).count("@") > 1


#: the refusal of :func:`ambiguous_password` (never showing the URL: its password is in it)
AMBIGUOUS_PASSWORD = ("the password in the URL holds an '@': libpq takes the host from after the first '@', so the "
                      "rest of the password would be shown as a host name; write it percent-encoded (%40), or give it "
                      "with PGPASSWORD (its value is not shown)")


def redact_url(text: str) -> str:
    """``text`` (a URL, or a line holding one) as outputs show it: the passwords written in it
    (``user:***@``, ``password=***``) replaced by ``***``."""
    for p in _URL_PASSWORDS:
        text = p.sub(lambda m: f"{m.group(1)}***{m.group(3)}" if m.group(2) else m.group(0), str(text))
    return str(text)


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


def suggest(word: object, choices: Iterable[object]) -> str:
    """" (did you mean X?)" for the closest of ``choices`` to a misspelt ``word``, else ""."""
    import difflib

    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


#: errno values that say where a command writes is not writable (the user's choice of place: exit 2)
_NOT_WRITABLE = {"EROFS": "read-only file system", "EACCES": "permission denied", "EPERM": "operation not permitted"}
#: errno values that say the device is full (the machine's state, not the input: exit 1)
_FULL = {"ENOSPC": "no space left on the device", "EDQUOT": "disk quota exceeded",
         "EFBIG": "a file over this process's file-size limit (ulimit -f)"}


def explain_lucene_failure(err: BaseException, out: object = None) -> str:
    """A Lucene builder's failure in words: a full disk (the JVM's IOException) is said as nteval
    says it for its own files; anything else is the builder's own last word."""
    text = str(err)
    for java, said in (("No space left on device", "no space left on the device"),
                       ("Disk quota exceeded", "the disk quota is exceeded"), ("File too large", "a file is too large")):
        if java in text:
            return (f"{said}{f' writing {out}' if out is not None else ''} (Lucene: {text.split(': ', 1)[-1][:160]}); "
                    "complete files are kept, nothing half-written: free space (or choose another place) and run the "
                    "command again")
    return text


def explain_failure(err: BaseException, index: object = None, out: object = None) -> tuple[str, int] | None:
    """A one-line message and exit status for a failure of the machine or of an index's files
    rather than of nteval: a full disk, a read-only or forbidden place, a damaged document store or
    Lucene index (``index``: the command's index directory, ``out``: where it writes, named in the
    message). ``None``: not such a failure (a bug: let it show)."""
    import errno as errnos
    import sqlite3
    from concurrent.futures import BrokenExecutor

    rebuild = "rebuild it with nteval index --force"
    where = f"{index}: " if index is not None else ""
    if isinstance(err, BrokenExecutor):   # (loky's TerminatedWorkerError too: a worker killed, out of memory)
        text = short(" ".join(str(err).split()), 160)
        return (f"a worker process of nteval ended before its work was done ({text}); what was finished is kept: run "
                "the command again to resume (an encoding: NTEVAL_ENCODER_THREADS=N encodes in this process)", 1)
    if isinstance(err, sqlite3.Error):
        text = " ".join(str(err).split())
        if "full" in text:
            return (f"no space left on the device{f' writing {out}' if out is not None else ''} (sqlite: {text}); "
                    "complete files are kept, nothing half-written: free space (or choose another place) and run the "
                    "command again", 1)
        if "readonly" in text or "read-only" in text:
            return f"{where}cannot write the document store (sqlite: {text})", 2
        if isinstance(err, sqlite3.DatabaseError):
            return f"{where}the document store docs.sqlite is damaged (sqlite: {text}): {rebuild}", 2
        return None
    if type(err).__name__ == "JavaException":  # jnius: a Lucene exception inside the searcher
        text = " ".join(str(err).split())
        for name in ("CorruptIndexException", "IndexFormatTooOldException", "IndexFormatTooNewException",
                     "NoSuchFileException", "EOFException"):
            if name in text:
                import re

                detail = text.split(name, 1)[1].lstrip(": ")
                file = re.search(r'path="([^"]+)"', detail)
                detail = detail.split(" (resource=")[0].split(": actual ")[0][:120]
                named = f" ({file.group(1)})" if file else ""
                return f"{where}the Lucene index is damaged{named}: {name}: {detail}: {rebuild}", 2
        return None
    if isinstance(err, OSError):
        code = errnos.errorcode.get(err.errno or -1, "")
        name = f" {err.filename}" if err.filename else (f" {out}" if out is not None else "")
        if code in _FULL or (err.errno is None and " requested and " in str(err)):  # numpy's short write
            fix = "raise the limit" if code == "EFBIG" else "free space (or choose another place)"
            return f"{_FULL.get(code, 'no space left on the device')} writing{name or ' the output'}; complete " \
                   f"files are kept, nothing half-written: {fix} and run the command again", 1
        if code in _NOT_WRITABLE:
            return f"cannot write{name or ' here'}: {_NOT_WRITABLE[code]}", 2
        if err.strerror:
            return f"{err.filename or out or 'a file'}: {err.strerror}", 1
    return None
