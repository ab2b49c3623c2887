"""``nteval encode``: the first encoding of a collection, ahead of pins and gates (issue 58)."""
from __future__ import annotations

from pathlib import Path

import click

from ..encode import encode_index, export_index_texts, import_index_vectors
from ..errors import InputError
from ..systems.registry import get as kind_of
from ..systems.registry import known as is_kind
from ..systems.sets import builtin_systems, find_named_system, shipped_sets, suggest_system
from .app import friendly_errors, main
from .options import INDEX, QUIET, SCHEDULER, progress


def _systems(names: tuple[str, ...], systems_file: Path | None) -> list:
    """The dense systems --system names: a fusion stands for the dense systems it fuses, however deep
    (a gate of it encodes them; hostile turn 8, N4)."""
    files = [systems_file] + [builtin_systems(n) for n in shipped_sets()]
    out: list = []

    def add(name: str, via: str | None, seen: frozenset) -> None:
        found = find_named_system(name, files)
        if found is None:
            raise InputError(None, f"--system {via or name}{'' if via else suggest_system(name, files)}: no such system "
                                   f"{name + ' ' if via else ''}in {systems_file or 'the shipped sets'}")
        s = found[0]
        inputs = s.params.get("systems") if is_kind(s.algorithm) and kind_of(s.algorithm).fusion else None
        if not inputs or name in seen:
            if s.name not in {x.name for x in out}:
                out.append(s)
            return
        before = len(out)
        for x in inputs:
            add(str(x), via or name, seen | {name})
        if not any(x.algorithm == "dense" for x in out[before:]):
            raise InputError(None, f"--system {via or name}: a fusion of {', '.join(map(str, inputs))}, none of them "
                                   "dense: it encodes nothing")
        out[before:] = [x for x in out[before:] if x.algorithm == "dense"]

    for name in names:
        add(name, None, frozenset())
    return out


@main.command("encode")
@INDEX
@click.option("--system", "names", multiple=True, metavar="NAME",
              help="A dense system (of --systems or the shipped sets) whose encoder to run over the abstracts, as a "
                   "gate of it would; repeatable. Default: the fair references' encoder over titles and abstracts, "
                   "as a pin needs.")
@click.option("--systems", "systems_file", type=click.Path(path_type=Path), default=None,
              help="A systems YAML holding the --system names.")
@click.option("--export-texts", "export", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the texts this encoding reads (JSON lines: id, text) to encode them elsewhere, e.g. on a "
                   "GPU; prints the encoder identity the vectors must have. Encodes nothing.")
@click.option("--import", "source", type=click.Path(path_type=Path), default=None,
              help="Take vectors made elsewhere (a directory: docids.txt and vectors.npy, one row per docid) into "
                   "the index's store, after re-encoding a seeded sample here: refused when they are not this "
                   "encoder's.")
@SCHEDULER
@QUIET
@friendly_errors
def encode_cmd(index_dir: Path, names: tuple[str, ...], systems_file: Path | None, export: Path | None,
               source: Path | None, scheduler: str | None, quiet: bool) -> None:
    """Encode the whole collection once, before any pin or gate (here in one one-thread process per
    core, or on a Dask cluster with --scheduler): the fair references' neural encoder over INDEX/all,
    or --system's over INDEX/nt. The vectors go where a pin or gate finds them (beside the index, or
    $NTEVAL_DENSE_CACHE): they encode nothing after. With --export-texts and --import, the vectors are
    made elsewhere and checked here."""
    if export is not None or source is not None:
        if export is not None and source is not None:
            raise InputError(None, "--export-texts and --import: give one (export the texts, encode them elsewhere, "
                                   "then import the vectors)")
        if scheduler:
            raise InputError(None, "--scheduler with --export-texts/--import: they encode nothing on a cluster (the "
                                   "import re-encodes a sample here); leave --scheduler out")
        systems = _systems(names, systems_file) if names else [None]
        if len(systems) != 1:
            raise InputError(None, "--export-texts/--import: give one --system (a dense one) or none (the references)")
        if export is not None:
            e = export_index_texts(index_dir, export, systems[0])
            click.echo(f"{e['documents']:,} texts of {e['index']} in {e['out']}: encode them with {e['encoder']} "
                       f"(identity {e['identity']}, {e['dim']} dimensions), then nteval encode --import")
            return
        assert source is not None
        i = import_index_vectors(index_dir, source, systems[0])
        click.echo(f"imported {i['documents']:,} vectors of {i['index']} for {i['encoder']}: {i['checked']} sampled "
                   f"documents encoded here agree (least cosine {i['min_cosine']:.6f}) ({i['cache']})")
        return
    done = encode_index(index_dir, _systems(names, systems_file) if names else None, scheduler, progress(quiet))
    for d in done:
        how = (f"{d['encoded_this_time']:,} encoded now" + (f", {d['reused']:,} carried" if d.get("reused") else "")
               + (f" in {d['seconds']:.0f} s ({d['docs_per_s']} documents/s"
                  + (f" on {d['cluster']['workers']} workers" if d.get("cluster") else "")
                  + (f" in {d['processes']} one-thread processes" if d.get("processes") else "") + ")"
                  if d.get("encoded_this_time") else ""))
        click.echo(f"{d['system']}: {d['documents']:,} documents of {d['index']} with {d['encoder']}: "
                   + (how if d["now"] else "cached already, nothing to encode") + f" ({d['cache']})")
