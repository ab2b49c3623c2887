"""When progress bars show. Every function that draws one takes ``progress``: ``True`` or
``False`` forces it; ``None``, the Python API's default, shows bars only when stderr is a terminal
(not in a log file, a CI job, or a notebook's captured output: pass ``progress=True`` there)."""
from __future__ import annotations

import sys


def shown(progress: bool | None) -> bool:
    """Whether a bar shows for this ``progress`` setting."""
    return sys.stderr.isatty() if progress is None else bool(progress)
