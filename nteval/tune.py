"""``nteval tune``: a system's parameters tuned without a full grid (Optuna's seeded TPE), with the
NT topics split for honesty.

The NT topics of a protocol are split into ``folds`` (seeded, by topic id). For each fold, an
Optuna study searches the parameters on the *other* folds' topics (its objective: the mean of the
protocol's verdict measure over them) and its best setting is then scored on the fold it never
saw — cross-validation over topics, as PyTerrier's KFoldGridSearch does with judged topics. Each
topic is so scored once, by a setting chosen without it: the **held-out score** is the honest
estimate of what tuning buys. The setting recommended is the one best over all topics among every
setting tried (an in-sample figure, reported as such), and the final comparison — tuned
(cross-validated) vs the system's defaults vs the recommended setting — gives paired tests and
significance groups.

Ranges come from the kind's declarations: ``k1=0.2:2.0`` (continuous), an integer parameter's range
is searched over integers, and bounds outside the declared ones are one-line errors. The studies
live in ``OUT/tune.sqlite3`` (Optuna's RDB storage): a killed tuning resumes where it stopped and
loses no finished trial; the parameters of trial *n* of a fold depend only on the seed, the fold,
*n* and the finished trials before it, so the same seed gives the same trials, resumed or not.
Every setting's per-topic scores are cached under OUT (a setting tried twice is searched once).
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import protocols as registry
from .atomic import write_text
from .effects import MMD
from .errors import InputError, short
from .formats.trec import canonical, read_qrels, read_topics
from .grid.cells import file_digest, read_exclusions
from .grid.run import find_system, prepare, protocol_list
from .grid.spec import GridSpec
from .index import read_manifest
from .params import check_declared, param, same_as
from .progress import shown, tqdm
from .protocols import get
from .report.plots import pyplot, save_png
from .runs import drop_held
from .scores import evaluate_runs
from .session import session
from .settings import Execution, RunSettings, SystemSet, reject_unknown, take
from .significance import compare_systems
from .systems.engines import require
from .systems.execute import open_target, run_system
from .systems.system import System, make_system

__all__ = ["Range", "TuneSpec", "parse_range", "run_tune", "topic_folds"]

#: settings are tried, reported and scored at this many decimals
DECIMALS = 6
#: the studies of a tuning, in its OUT
STORE = "tune.sqlite3"
#: a study's user attributes that say which tuning it belongs to: everything that decides a
#: trial's value before the topics are drawn, and the digests of the topics and qrels it was run on
INPUTS_ATTR, JUDGMENTS_ATTR = "nteval_inputs", "nteval_judgments"


@dataclass(frozen=True)
class Range:
    """A parameter searched between ``low`` and ``high`` (inclusive), over integers when the
    kind declares an integer parameter."""

    name: str
    low: float
    high: float
    integer: bool = False


def parse_range(text: str, system: System) -> Range:
    """``NAME=LOW:HIGH`` for a parameter ``system``'s kind declares (one-line error otherwise)."""
    name, sep, rest = text.partition("=")
    name = name.strip()
    declared = system.kind.declared()
    if not sep or name not in declared:
        known = ", ".join(p for p, d in declared.items() if isinstance(d.default, (int, float))
                          and not isinstance(d.default, bool))
        raise InputError(None, f"--param {short(text)}: write NAME=LOW:HIGH with a numeric parameter of "
                               f"{system.algorithm} ({known or 'it has none'})")
    parts = rest.split(":")
    try:
        low, high = (float(parts[0]), float(parts[1])) if len(parts) == 2 else (None, None)
    except ValueError:
        low = high = None
    if low is None or high is None or not low < high:
        raise InputError(None, f"--param {short(text)}: write {name}=LOW:HIGH with LOW < HIGH (a range, not a list: "
                               "`nteval grid` takes lists and steps)")
    p = declared[name]
    integer = isinstance(p.default, int) and not isinstance(p.default, bool)
    for v in (low, high):  # the kind's own bounds (one line naming the system and the parameter)
        p.coerce(int(v) if integer and float(v).is_integer() else v, f"system {system.name}", None)
    if integer and not (low.is_integer() and high.is_integer()):
        raise InputError(None, f"--param {short(text)}: {name} is a whole number: give whole bounds")
    if not integer:  # settings are tried at 6 decimals (_round): the rounded range must be a range of valid values
        lo6, hi6 = _round(low), _round(high)
        if not lo6 < hi6:
            raise InputError(None, f"--param {short(text)}: tune tries settings to {DECIMALS} decimals and this range "
                                   f"rounds to the single value {lo6:g}: give a wider range")
        for given, v in ((low, lo6), (high, hi6)):
            if v != given:
                try:
                    p.coerce(v, f"system {system.name}", None)
                except InputError as err:
                    raise InputError(None, f"--param {short(text)}: {given:g} rounds to {v:g} at tune's {DECIMALS} "
                                           f"decimals, and {err.message}") from None
    return Range(name, low, high, integer)


@dataclass(frozen=True)
class TuneSpec:
    """What one tuning searches. ``ranges``: the parameters and their bounds; ``system``: an
    algorithm or a system name (its other parameters stay fixed); ``protocol``: one protocol, or
    ``both`` (focused and high-recall, each tuned on its own); ``trials``: per fold; ``folds``:
    topic folds (each fold's study never sees its topics); ``measure``: the objective (None: the
    protocol's verdict measure)."""

    ranges: tuple[Range, ...]
    system: str = param("bm25", "an algorithm (bm25, qld, ...) or a system name from --systems / the shipped sets")
    systems: Any = same_as(SystemSet, "source")
    protocol: str = param("focused", "protocol(s) to tune under: a name from `nteval protocols`, several joined by "
                                     "commas, or both (focused,highrecall)")
    trials: int = param(25, "trials per fold (Optuna TPE, seeded)", min=1, max=10_000)
    folds: int = param(2, "topic folds: each fold's best setting is scored on the topics its study never saw",
                       min=2, max=20)
    measure: str | None = param(None, "the objective, an ir_measures name (none: the protocol's verdict measure)")
    n_topics: int = param(1000, "documents sampled as NT topics (D0)", min=1, flag="--topics")
    seed: int = param(42, "seed of the topics, the folds and the sampler (same seed, same trials)", min=0)
    depth: int = same_as(RunSettings, "depth")
    min_topics: int = same_as(RunSettings, "min_topics")
    plots: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranges", tuple(self.ranges))
        if not self.ranges:
            raise InputError(None, "give at least one --param NAME=LOW:HIGH to tune")
        check_declared(self, as_options=True)


def topic_folds(qids: list[str], seed: int, folds: int) -> list[list[str]]:
    """Topics in ``folds`` parts of near-equal size: ordered by the sha256 of ``seed:fold:qid``,
    dealt in turn (the same on any machine for a seed: no PRNG stream)."""
    order = sorted(qids, key=lambda q: hashlib.sha256(f"{seed}:fold:{q}".encode()).digest())
    return [order[f::folds] for f in range(folds)]


class _Scorer:
    """Per-topic scores of a setting over a protocol's topics (searched once, cached under OUT, keyed
    on the index's fingerprint, the topics', qrels' and held-out lists' digests, the system, the
    depth and the measure)."""

    def __init__(self, judgments: Any, base: System, depth: int, measure: str, cache: Path, progress: bool | None):
        self.j, self.base, self.depth, self.measure, self.cache = judgments, base, depth, measure, cache
        self.topics = read_topics(judgments.dir / "topics.tsv")
        self.qrels = read_qrels(judgments.dir / "qrels.txt")
        held = judgments.index_name.endswith("-holdout")
        self.held = read_exclusions(judgments.dir / "holdout.tsv") if held else None
        self.index = str(Path(judgments.index_dir) / judgments.index_name.removesuffix("-holdout"))
        self.progress = progress
        self.searched = 0
        d = judgments.dir
        #: what the protocol's topics were run on (a study's JUDGMENTS_ATTR; part of every cache key)
        self.judged = {"protocol": judgments.name, "index": judgments.index_name, "measure": measure,
                       "topics": file_digest(d / "topics.tsv"), "qrels": file_digest(d / "qrels.txt"),
                       "holdout": file_digest(d / "holdout.tsv") if held else None}
        self.fingerprint = judgments.fingerprint

    def key(self, params: dict[str, Any]) -> str:
        s = make_system(self.base.name, self.base.algorithm, {**self.base.params, **params})
        return hashlib.sha256(json.dumps([s.key(), self.depth, self.measure, sorted(self.topics), self.fingerprint,
                                          self.judged], sort_keys=True).encode()).hexdigest()

    def __call__(self, params: dict[str, Any]) -> dict[str, float]:
        key = self.key(params)
        path = self.cache / f"{key[:32]}.json"
        try:
            cached = json.loads(path.read_text(encoding="utf-8"))
            if cached.get("key") == key:
                return cached["per_topic"]
        except (OSError, ValueError):
            pass

        system = make_system(self.base.name, self.base.algorithm, {**self.base.params, **params})
        extra = max((len(v) for v in self.held.values()), default=0) if self.held else 0
        raw = run_system(open_target(self.index, self.j.name), system, self.topics, self.depth + extra)
        if self.held:
            raw = drop_held(raw, self.held)
        run = {q: canonical(raw.get(q, []), self.depth) for q in self.topics}
        per = evaluate_runs({system.name: run}, self.qrels, [self.measure], progress=False).per_topic[system.name]
        scores = {q: round(v[self.measure], 6) for q, v in per.items()}
        write_text(path, json.dumps({"key": key, "params": params, "per_topic": scores}) + "\n")
        self.searched += 1
        return scores


def _distributions(ranges: tuple[Range, ...]) -> dict[str, Any]:
    import optuna

    return {r.name: (optuna.distributions.IntDistribution(int(r.low), int(r.high)) if r.integer
                     else optuna.distributions.FloatDistribution(r.low, r.high)) for r in ranges}


def _study(storage: str, name: str, inputs: dict[str, Any], judged: dict[str, Any]):
    """Fold ``name``'s study, created with the ``inputs`` and ``judged`` it belongs to, or loaded
    (:func:`_check_store` has refused a store of other inputs; a study on other topics or qrels than
    ``judged`` is refused here)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=storage, study_name=name, direction="maximize", load_if_exists=True)
    attrs = study.user_attrs
    if INPUTS_ATTR not in attrs:
        study.set_user_attr(INPUTS_ATTR, inputs)
        study.set_user_attr(JUDGMENTS_ATTR, judged)
    elif _plain(attrs.get(JUDGMENTS_ATTR)) != _plain(judged):
        path = storage.removeprefix("sqlite:///")
        raise InputError(path, f"study {name} was run on other topics or qrels than {judged['protocol']}'s now "
                               f"(the protocol drew other topics from the same inputs): {_FRESH}")
    from optuna.trial import TrialState

    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.WAITING)):
        study.tell(t.number, state=TrialState.FAIL)  # a trial a killed tuning left unfinished: asked again
    return study


def _tune_fold(study, dists: dict[str, Any], objective, trials: int, seed: int, bar, label: str = "") -> None:
    import optuna
    from optuna.trial import TrialState

    done = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    bar.update(done)
    while done < trials:
        # a sampler seeded by (seed, how many trials are finished): trial n is the same whether
        # the study ran at once or was resumed (no liar values from unfinished trials either)
        study.sampler = optuna.samplers.TPESampler(seed=seed * 100_003 + done, constant_liar=False,
                                                   n_startup_trials=min(10, max(1, trials // 3)))
        trial = study.ask(dists)
        # the setting scored is the one reported: at DECIMALS decimals (parse_range checked the range)
        setting = {k: _round(v) for k, v in trial.params.items()}
        bar.set_postfix_str(f"{label}: trial {done + 1}, " + ", ".join(f"{k}={v:.3g}" for k, v in setting.items()),
                            refresh=True)
        study.tell(trial, objective(setting))
        done += 1
        bar.set_postfix_str(f"{label}: best {study.best_value:.4f} after {done} trials", refresh=False)
        bar.update(1)


def _mean(scores: dict[str, float], qids: list[str]) -> float:
    return sum(scores[q] for q in qids) / len(qids) if qids else 0.0


def _tune_protocol(j: Any, spec: TuneSpec, base: System, out: Path, execution: Execution) -> dict[str, Any]:
    proto = get(j.name)
    measure = spec.measure or proto.verdict.measure
    scorer = _Scorer(j, base, spec.depth, measure, out / j.name / "tune-cache", execution.progress)
    qids = sorted(scorer.qrels)
    parts = topic_folds(qids, spec.seed, spec.folds)
    dists = _distributions(spec.ranges)
    storage = f"sqlite:///{(out / STORE).absolute()}"
    bar = tqdm(total=spec.trials * spec.folds, unit=" trial", desc=f"tune {j.name}", disable=not shown(execution.progress),
               file=sys.stderr, mininterval=0.5)
    folds = []
    try:
        for f, held in enumerate(parts):
            train = [q for q in qids if q not in set(held)]
            study = _study(storage, _study_name(j.name, f, spec.folds), j.inputs, scorer.judged)
            _tune_fold(study, dists, lambda params, train=train: _mean(scorer(params), train), spec.trials,
                       spec.seed * 31 + f, bar, f"fold {f + 1}/{spec.folds}")
            from optuna.trial import TrialState

            done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))[: spec.trials]
            best = max(done, key=lambda t: (t.value, -t.number))
            chosen = {k: _round(v) for k, v in best.params.items()}  # the setting its value was scored with
            folds.append({"fold": f, "train_topics": len(train), "held_topics": len(held),
                          "best": chosen, "train_score": round(best.value, 6),
                          "held_score": round(_mean(scorer(chosen), held), 6),
                          "default_train_score": round(_mean(scorer({}), train), 6),
                          "trials": [{"number": t.number, "params": {k: _round(v) for k, v in t.params.items()},
                                      "train_score": round(t.value, 6)} for t in done]})
    finally:
        bar.close()
    # each topic scored by the setting its fold's study chose without it
    tuned = {q: scorer(folds[f]["best"])[q] for f, held in enumerate(parts) for q in held}
    default = scorer({})
    tried = {json.dumps(t["params"], sort_keys=True): t["params"] for fo in folds for t in fo["trials"]}
    recommended = max(tried.values(), key=lambda p: (_mean(scorer(p), qids), json.dumps(p, sort_keys=True)))
    per_topic = {"tuned (cross-validated)": tuned, "defaults": default, "recommended (in-sample)": scorer(recommended)}
    sig = compare_systems(per_topic, measure, seed=spec.seed)
    result = {
        "protocol": j.name, "measure": measure, "topics": len(qids), "folds": folds,
        "held_out_score": round(_mean(tuned, qids), 6),
        "default": {"params": {r.name: base.params.get(r.name) for r in spec.ranges}, "score": round(_mean(default, qids), 6)},
        "recommended": {"params": recommended, "score_in_sample": round(_mean(scorer(recommended), qids), 6)},
        "comparison": sig, "settings_searched": scorer.searched,
    }
    result["advice"] = tune_advice(result, spec.ranges, base)
    if spec.plots:
        result["trace"] = str(_trace(result, out / f"tune_trace_{j.name}.png"))
    return result


#: "at the edge" of a range searched: within this share of its width from a bound
EDGE = 0.05


def tune_advice(result: dict[str, Any], ranges: tuple[Range, ...], base: System) -> dict[str, Any]:
    """What to do with a protocol's tuning: take the recommended setting only when the tuned
    setting beats the defaults on held-out topics by a paired test (Holm) *and* by at least the
    minimum meaningful difference (5 % of the better score, as the verdicts use); otherwise keep
    the defaults. Also: the parameters whose recommended value lies at the edge of the range
    searched (where the declared bounds allow going further): the range should be widened."""
    mmd = MMD.parse(None)
    tuned, default = result["held_out_score"], result["default"]["score"]
    pair = next((p for p in result["comparison"]["pairs"]
                 if {p["a"], p["b"]} == {"tuned (cross-validated)", "defaults"}), None)
    separated = bool(pair and pair["significant"])
    gain = tuned - default
    meaningful = gain > 0 and gain >= mmd.threshold(tuned, default)
    share = f"{100 * gain / default:+.1f} %" if default else f"{gain:+.4f}"
    reasons = []
    if not separated:
        reasons.append("the paired test cannot tell the tuned setting apart from the defaults on held-out topics")
    if gain <= 0:
        reasons.append(f"tuning gained nothing on held-out topics ({share})")
    elif not meaningful:
        reasons.append(f"its held-out gain ({share}) is below the minimum meaningful difference ({mmd.describe()})")
    declared = base.kind.declared()
    edge = []
    for r in ranges:
        v = result["recommended"]["params"].get(r.name)
        if not isinstance(v, (int, float)):
            continue
        width, d = r.high - r.low, declared[r.name]
        low_open = d.min is None or r.low > d.min
        high_open = d.max is None or r.high < d.max
        if low_open and v - r.low <= EDGE * width:
            edge.append({"param": r.name, "value": v, "bound": r.low, "side": "low"})
        elif high_open and r.high - v <= EDGE * width:
            edge.append({"param": r.name, "value": v, "bound": r.high, "side": "high"})
    return {"keep_defaults": bool(reasons), "reasons": reasons, "held_out_gain": round(gain, 6),
            "held_out_gain_text": share, "mmd": mmd.describe(), "tuned_vs_defaults_significant": separated,
            "on_edge": edge}


def _round(v: Any) -> Any:
    return round(v, DECIMALS) if isinstance(v, float) else v


def _study_name(protocol: str, fold: int, folds: int) -> str:
    return f"{protocol}-fold{fold}-of{folds}"


def _plain(value: Any) -> Any:
    """``value`` as JSON gives it back (tuples as lists): what a study's user attribute compares to."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def tuning_inputs(spec: TuneSpec, base: System, fingerprint: str, sample: dict[str, Any]) -> dict[str, Any]:
    """Everything that decides the value of a tuning's trials before its topics are drawn: the
    index (its fingerprint), the system, the ranges, the measure, the depth, the folds, the seed and
    the topic sampling (the drawn topics' and qrels' digests are each study's JUDGMENTS_ATTR)."""
    return _plain({"index": fingerprint, "system": {"name": base.name, "algorithm": base.algorithm, "key": base.key()},
                   "ranges": [[r.name, r.low, r.high] + (["integer"] if r.integer else []) for r in spec.ranges],
                   "measure": spec.measure, "depth": spec.depth, "folds": spec.folds, "seed": spec.seed,
                   "topics": spec.n_topics, "sample": sample})


_FRESH = "its trials are not this tuning's; give another --out, or --force to delete that tuning and start afresh"


def _difference(old: dict[str, Any], new: dict[str, Any]) -> str:
    """The first input in which a stored tuning differs from this one, in words."""
    def ranges(r: list[list[Any]]) -> str:
        return ", ".join(f"{v[0]}={v[1]:g}:{v[2]:g}" for v in r)

    for key, label in (("index", "index"), ("system", "system"), ("ranges", "ranges"), ("measure", "measure"),
                       ("depth", "depth"), ("folds", "folds"), ("seed", "seed"), ("topics", "topics requested"),
                       ("sample", "topic sampling filters")):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if key == "index":
            return f"another index (fingerprint {str(a)[:12]}…, this one's {str(b)[:12]}…)"
        if key == "system":
            a, b = (f"{s.get('name')} ({s.get('algorithm')})" if isinstance(s, dict) else s for s in (a, b))
            if a == b:
                return f"system {a} with other fixed parameters"
        if key == "ranges" and isinstance(a, list) and isinstance(b, list):
            a, b = ranges(a), ranges(b)
        return f"{label} {a}, not {b}"
    return "other inputs"


def _stored_studies(path: Path) -> dict[str, dict[str, Any]]:
    """The studies in a tuning's store and their user attributes, read without writing (Optuna
    would add its tables to any SQLite file); a store that is damaged or not Optuna's is a one-line
    error naming it and saying what to do."""
    import sqlite3

    if not path.exists() and not path.is_symlink():
        return {}
    if not path.is_file():
        raise InputError(path, "is not a file, so not the studies of a tuning nteval wrote: move it away or give "
                               "another --out")
    if path.stat().st_size == 0:
        return {}
    try:
        db = sqlite3.connect(f"file:{path.absolute()}?mode=ro", uri=True, timeout=30)
        try:
            if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise sqlite3.DatabaseError("database disk image is malformed")
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and not {"studies", "study_user_attributes", "trials", "version_info"} <= tables:
                raise InputError(path, "is an SQLite database without Optuna's tables, not the studies of a tuning "
                                       "nteval wrote: move it away or give another --out")
            rows = db.execute("SELECT s.study_name, a.key, a.value_json FROM studies s LEFT JOIN study_user_attributes a"
                              " ON a.study_id = s.study_id").fetchall() if tables else []
        finally:
            db.close()
    except sqlite3.Error as err:
        raise InputError(path, f"the studies of this tuning are damaged (sqlite: {' '.join(str(err).split())}): delete "
                               "the file (the tuning then starts afresh) or give another --out") from None
    studies: dict[str, dict[str, Any]] = {}
    for name, key, value in rows:
        attrs = studies.setdefault(name, {})
        if key is not None:
            try:
                attrs[key] = json.loads(value)
            except ValueError:
                attrs[key] = None
    return studies


def _check_store(out: Path, inputs: dict[str, Any], names: set[str], force: bool) -> None:
    """Refuse (one line) an OUT whose store holds a tuning of other inputs — its trials would be
    reported as this tuning's — or, with ``force``, delete what an earlier tuning wrote there: its
    store, tune.json, trace plots and score caches (nothing else)."""
    path = out / STORE
    studies = _stored_studies(path)  # (a damaged or foreign file is refused even with force: nteval did not write it)
    if force:
        if studies or (out / "tune.json").exists():
            print(f"note: --force: deleting the earlier tuning in {out} ({len(studies)} studies, tune.json, "
                  "trace plots, score caches)", file=sys.stderr)
        for f in [path, *(out / f"{STORE}{x}" for x in ("-journal", "-wal", "-shm")), out / "tune.json",
                  *out.glob("tune_trace_*.png")]:
            f.unlink(missing_ok=True)
        import shutil

        for cache in out.glob("*/tune-cache"):
            shutil.rmtree(cache, ignore_errors=True)
        return
    for name, attrs in sorted(studies.items()):
        if INPUTS_ATTR not in attrs:
            why = "made by an older nteval that did not record what it tuned"
        elif attrs[INPUTS_ATTR] != inputs:
            why = _difference(attrs[INPUTS_ATTR], inputs)
        elif name not in names:
            why = f"study {name}, of another protocol or number of folds than asked now"
        else:
            continue
        raise InputError(path, f"holds a tuning of other inputs ({why}): {_FRESH}")


def _trace(result: dict[str, Any], path: Path) -> Path:
    """Each fold's training objective by trial, and the best so far."""
    fig, ax = pyplot().subplots(figsize=(6.4, 4.2), dpi=110)
    for fo, color in zip(result["folds"], ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd") * 4):
        ys = [t["train_score"] for t in fo["trials"]]
        xs = list(range(1, len(ys) + 1))
        ax.plot(xs, ys, "o", color=color, ms=3.5, alpha=0.6)
        best = [max(ys[: i + 1]) for i in range(len(ys))]
        ax.plot(xs, best, "-", color=color, lw=1.6,
                label=f"fold {fo['fold']}: best {fo['train_score']:.4f} (held out {fo['held_score']:.4f})")
        ax.axhline(fo["default_train_score"], color=color, ls="--", lw=1,
                   label=f"fold {fo['fold']}: defaults {fo['default_train_score']:.4f} on the same topics")
    ax.set_xlabel("trial")
    ax.set_ylabel(f"{result['measure']} on the fold's training topics")
    ax.set_title(f"{result['protocol']}: TPE trials (held-out score {result['held_out_score']:.4f})", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    return save_png(fig, path)


def run_tune(index_dir: str | Path, out: str | Path, ranges: Any, spec: TuneSpec | None = None,
             execution: Execution | None = None, **options: Any) -> dict[str, Any]:
    """Tune ``spec.system``'s parameters over ``ranges`` (a list of :class:`Range` or
    ``"NAME=LOW:HIGH"`` strings) under each protocol of ``spec.protocol``: OUT/tune.json (the
    held-out score, each fold's best, the recommended setting, the final comparison), a trace plot
    per protocol, and the studies in OUT/tune.sqlite3 (a killed tuning resumes). Keywords: any field
    of :class:`TuneSpec` or :class:`~nteval.settings.Execution`, and the protocols' sampling filters."""
    require("optuna", "tune", "nteval tune")
    rest = dict(options)
    force = bool(rest.pop("force", False))
    execution = take(Execution, execution, rest)
    names = {"system", "systems", "protocol", "trials", "folds", "measure", "n_topics", "seed", "depth", "min_topics",
             "plots"}
    mine = {k: rest.pop(k) for k in list(rest) if k in names}

    sample_fields = {f for f, *_ in registry.get("focused").Spec.describe()} - {"n_topics", "seed"}
    sample = {k: rest.pop(k) for k in list(rest) if k in sample_fields}
    reject_unknown(rest, "run_tune", names | sample_fields | {"force"})
    base = find_system(mine.get("system", spec.system if spec else "bm25"), mine.get("systems", spec.systems if spec else None))
    parsed = tuple(r if isinstance(r, Range) else parse_range(str(r), base) for r in ranges)
    seen = [r.name for r in parsed]
    twice = next((n for i, n in enumerate(seen) if n in seen[:i]), None)
    if twice is not None:
        raise InputError(None, f"--param {twice} given twice")
    spec = replace(spec, ranges=parsed, **mine) if spec is not None else TuneSpec(parsed, **mine)
    if not base.kind.computed:
        raise InputError(None, f"--system {base.name}: nteval does not compute its runs; nothing to tune")
    protocols = protocol_list(spec.protocol)
    if not protocols:
        raise InputError(None, "--protocol: name a protocol to tune under")
    t0 = time.perf_counter()
    with session(out, index_dir, execution.scheduler) as index_abs:
        out = Path(out)
        fingerprint = read_manifest(index_abs)["fingerprint"]
        inputs = tuning_inputs(spec, base, fingerprint, sample)
        _check_store(out, inputs, {_study_name(p, f, spec.folds) for p in protocols for f in range(spec.folds)}, force)
        grid = GridSpec((), system=spec.system, systems=spec.systems, protocol=",".join(protocols), n_topics=spec.n_topics,
                        seed=spec.seed, depth=spec.depth, min_topics=spec.min_topics, sample=sample, plots=False)
        judgments, info = prepare(index_abs, out, grid, {}, None, execution.progress)
        results = {j.name: _tune_protocol(_WithIndex(j, index_abs, fingerprint, inputs), spec, base, out, execution)
                   for j in judgments}
        report = {"index": str(index_abs), "system": {"name": base.name, "algorithm": base.algorithm,
                                                       "params": base.params},
                  "ranges": {r.name: [r.low, r.high] + (["integer"] if r.integer else []) for r in spec.ranges},
                  "trials_per_fold": spec.trials, "folds": spec.folds, "seed": spec.seed, "depth": spec.depth,
                  **info, "protocols": results, "seconds": round(time.perf_counter() - t0, 1)}
        write_text(out / "tune.json", json.dumps(report, indent=2) + "\n")
        return report


class _WithIndex:
    """A grid Judgments with the index directory it searches, the index's fingerprint and the
    tuning's inputs (the tuning's scorer and studies need them)."""

    def __init__(self, j: Any, index_dir: Path, fingerprint: str, inputs: dict[str, Any]):
        self._j, self.index_dir, self.fingerprint, self.inputs = j, index_dir, fingerprint, inputs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._j, name)
