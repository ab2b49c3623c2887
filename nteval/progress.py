"""When and how progress shows. Every function that draws a bar takes ``progress``: ``True`` or
``False`` forces it; ``None``, the Python API's default, shows bars only when stderr is a terminal
(not in a log file, a CI job, or a notebook's captured output: pass ``progress=True`` there).

**Off a terminal, the command line prints plain lines** (unless ``--quiet``): a command's bars
that would not show print a line on stderr every :data:`EVERY` seconds while they run, whether or
not the step advances (``nteval: systems: 648/1,000 q (65 %), 9.02 q/s, 01:09 elapsed, about 00:39
left, bm25``). A CI job that prints nothing for minutes cannot be told from a hung one, and some
CI services stop it. ``NTEVAL_PROGRESS_EVERY`` sets the seconds (default 30)."""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

#: seconds between the plain progress lines off a terminal (``NTEVAL_PROGRESS_EVERY``)
EVERY = 30.0
#: whether a bar that does not show prints plain lines instead (the command line, off a terminal)
_LINES = False
#: the plain bars whose heartbeat runs (a command's end stops those it made, even one never closed)
_BEATING: weakref.WeakSet = weakref.WeakSet()
#: work the bars of :data:`PENDING_BARS` do not count, that must be done before they finish (an
#: encoding of the collection before a system searches): what → seconds left (None: not timed yet)
_PENDING: dict[str, float | None] = {}
#: the bars whose time left includes :data:`_PENDING` (run_all's)
PENDING_BARS = frozenset({"systems"})


def pending(what: str, seconds: float | None = None, done: bool = False) -> None:
    """Say how long ``what`` (work the systems bar does not count) has left (None: not timed yet), or
    that it is ``done``."""
    if done:
        _PENDING.pop(what, None)
    else:
        _PENDING[what] = seconds


def pending_left() -> tuple[float, int]:
    """(the seconds the pending work has left, how many of them are not timed yet)."""
    return sum(v for v in _PENDING.values() if v is not None), sum(1 for v in _PENDING.values() if v is None)


def pending_note() -> str:
    """", +1:15:02 encoding" for a terminal bar's postfix ("" when nothing timed is pending)."""
    from tqdm import tqdm as bar

    left, _ = pending_left()
    return f", +{bar.format_interval(left)} encoding" if left else ""


@contextlib.contextmanager
def plain_lines(enabled: bool) -> Iterator[None]:
    """For the block (a command), bars that do not show print :class:`PlainLines` instead, when
    ``enabled`` and stderr is not a terminal."""
    global _LINES
    before, _LINES = _LINES, bool(enabled) and not _on_terminal(sys.stderr)
    earlier = set(_BEATING)
    try:
        yield
    finally:
        _LINES = before
        for b in set(_BEATING) - earlier:  # (a bar left open by an error: no line after its command)
            b.stop_beating()


def every() -> float:
    """The seconds between plain lines: ``NTEVAL_PROGRESS_EVERY`` (at least 0.5), else :data:`EVERY`."""
    try:
        return max(0.5, float(os.environ.get("NTEVAL_PROGRESS_EVERY") or EVERY))
    except ValueError:
        return EVERY


def talking(progress: bool | None) -> bool:
    """Whether a command says how it goes (bars, or plain lines off a terminal): not under ``--quiet``."""
    return shown(progress) or (_LINES and progress is not False)


def shown(progress: bool | None) -> bool:
    """Whether progress shows for this ``progress`` setting."""
    return sys.stderr.isatty() if progress is None else bool(progress)


def _on_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def tqdm(*args: Any, **kwargs: Any) -> Any:
    """A tqdm bar, as ``tqdm.tqdm`` takes it; one that does not show (``disable``) is a
    :class:`PlainLines` instead while a command runs off a terminal (:func:`plain_lines`)."""
    from tqdm import tqdm as bar

    if kwargs.get("disable") and _LINES:
        return PlainLines(*args, **kwargs)
    return bar(*args, **kwargs)


def _plain_class() -> type:
    from tqdm import tqdm as bar

    class Plain(bar):
        """A tqdm whose only output is a plain line on stderr every :func:`every` seconds (a
        heartbeat thread says it even when the step does not advance); nothing for a step shorter
        than that."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._every = every()
            kwargs.update(disable=False, mininterval=min(float(kwargs.get("mininterval") or 1.0), self._every),
                          file=_Nowhere())
            self._said = self._moved = time.monotonic()
            self._stop = threading.Event()
            super().__init__(*args, **kwargs)
            self._beat = threading.Thread(target=self._heartbeat, name="nteval-progress", daemon=True)
            self._beat.start()
            _BEATING.add(self)

        def stop_beating(self) -> None:
            self._stop.set()
            _BEATING.discard(self)

        def _heartbeat(self) -> None:
            while not self._stop.wait(min(self._every / 3, 10.0)):
                if time.monotonic() - self._said >= self._every:
                    self._say()

        def update(self, n: float | None = 1) -> bool | None:
            if n:
                self._moved = time.monotonic()
            return super().update(n)

        def display(self, msg: Any = None, pos: Any = None) -> bool:
            if hasattr(self, "_said") and time.monotonic() - self._said >= self._every:
                self._say()
            return True

        def _say(self) -> None:
            self._said = time.monotonic()
            try:
                stalled = time.monotonic() - self._moved
                print(f"nteval: {plain_line(self.format_dict, stalled if stalled >= self._every else None)}",
                      file=sys.stderr, flush=True)
            except (ValueError, OSError):  # (stderr closed under us: nothing to say it on)
                self._stop.set()

        def close(self) -> None:
            if hasattr(self, "_stop"):
                self.stop_beating()
            super().close()

    return Plain


class _Nowhere:
    """Where tqdm's own drawing goes off a terminal (the lines are printed by :class:`PlainLines`)."""

    def write(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass


def plain_line(d: dict[str, Any], stalled: float | None = None) -> str:
    """One progress line from tqdm's ``format_dict``: what, how far, how fast, how long. ``stalled``:
    seconds since the step last advanced, when that is longer than a line's interval: the rate and
    the time left are then not the step's (it waits on something else, an encoding say), and the
    line says how long it has waited instead (new user, turn 6, F2: "about 00:03 left" for 16 min)."""
    from tqdm import tqdm as bar

    unit = d.get("unit") or "it"
    n, total = d.get("n", 0), d.get("total")
    what = f"{d.get('prefix') or 'working'}: {n:,.0f}" + (f"/{total:,.0f}" if total else "") + f"{unit}"
    if total:
        what += f" ({100 * n / total:.0f} %)"
    elapsed = float(d.get("elapsed") or 0.0)
    rate = (n / elapsed if elapsed else None) if stalled else (d.get("rate") or (n / elapsed if elapsed else None))
    if rate:
        what += f", {rate:,.0f}{unit}/s" if rate >= 100 else f", {rate:.3g}{unit}/s"
    what += f", {bar.format_interval(elapsed)} elapsed"
    extra, untimed = pending_left() if d.get("prefix") in PENDING_BARS else (0.0, 0)
    if stalled:
        what += f", waiting: no step finished for {bar.format_interval(stalled)}"
        if extra:
            what += f", about {bar.format_interval(extra)} of encoding left"
    elif total and rate:
        what += f", about {bar.format_interval((total - n) / rate + extra)} left"
        if extra:
            what += f" ({bar.format_interval(extra)} of it encoding)"
    if untimed:
        what += f", {untimed} encoding{'s' if untimed > 1 else ''} not timed yet"
    postfix = d.get("postfix")
    return what + (f", {postfix}" if postfix else "")


_PLAIN: type | None = None


def PlainLines(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 (a class, made on first use: tqdm loads lazily)
    global _PLAIN
    if _PLAIN is None:
        _PLAIN = _plain_class()
    return _PLAIN(*args, **kwargs)
