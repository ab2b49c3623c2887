"""One exception type for bad user input: the CLI prints it as one line and exits non-zero."""
from __future__ import annotations

from os import PathLike


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
