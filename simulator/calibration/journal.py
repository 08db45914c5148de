"""The calibration journal: every finished evaluation of a campaign, so that ``simrun calibrate`` resumes.

A campaign (a spec, or one case of a spec with ``cases:``) keeps its journal in its work directory,
``<report>.work/journal.jsonl`` beside its report directory (``calibration/croit-mach2/report.work/``).
One JSON object per line:

* line 1, the header: the campaign, the day it started (the default date of its profile and report), and
  the digests of its inputs (:func:`campaign_inputs`): the spec (without ``budget``, ``workers``,
  ``output`` and ``description``, which change no evaluation), the resolved problem (base system,
  experiment with ``sets``, every target's figures), the parameters of every profile the system names
  (resolved, ``extends`` followed), the simulator's sources that decide an evaluation (all of
  ``simulator/`` except the presentation modules in :data:`PRESENTATION`), and the Python and library
  versions; it is written once, atomically;
* one line per finished evaluation: the parameter values, the simulated summary row of every target item
  (the per-point results), the loss and RMS log error, the stage that proposed it, the campaign wall
  clock when it finished and the session; appended with one ``write`` and an ``fsync``;
* every line carries ``sum``, a SHA-256 of its canonical JSON, so a damaged line is recognised.

The journal is a memo of a deterministic function (values -> results: every evaluation uses the same
seed), keyed by the inputs' digests. The optimiser is seeded, so re-running the campaign proposes the same
points in the same order: each journaled point is taken from the journal instead of simulated, and the
run carries on from the first point that is not in it. Every result the optimiser sees, new or replayed,
is the journal's round trip of it, and the history, the best point and the report depend on nothing else
(wall-clock figures go to ``timing.json``), so a resumed campaign writes the byte-identical profile and
report of an uninterrupted one.

Never used silently: a journal of another campaign or of changed inputs stops the run (one message naming
the file and what differs, exit 2; ``--fresh`` moves it aside and starts over); a damaged line stops it
too (exit 2, nothing written), except the LAST line, which a kill or a crash may have cut off mid-write:
that entry is dropped (said so) and evaluated again. Failures are journaled only when the model rejected
the point (a :class:`SimError`, deterministic); a worker that died or ran out of memory is not a result.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError

__all__ = ["FORMAT", "PRESENTATION", "Journal", "JournalEntry", "campaign_inputs", "input_diff", "read_journal", "rebase_code",
           "rows_differ", "work_dir"]

FORMAT = "simrun-calibrate-journal"
VERSION = 1
#: modules of ``simulator/`` that only present a finished fit (report, profile, console, journal); a change to
#: them does not stop a resume. Every other source file of the package is in the code digest.
PRESENTATION = ("cli.py", "calibration/cli.py", "calibration/report.py", "calibration/profile.py",
                "calibration/journal.py", "calibration/validation.py", "calibration/measure.py", "calibration/length.py")
_INPUT_NAMES = {"spec": "the spec", "problem": "the resolved system, experiment or targets",
                "profiles": "the profiles' parameters", "code": "the simulator's sources", "runtime": "Python or library versions"}


def input_diff(header: dict[str, Any], inputs: dict[str, str]) -> list[str]:
    """The inputs (keys of ``_INPUT_NAMES``, in its order) whose digest in a journal's header differs from ``inputs``."""
    have = header.get("inputs", {})
    return [k for k in _INPUT_NAMES if have.get(k) != inputs.get(k)]


def work_dir(report_dir: Path) -> Path:
    """The work directory of a campaign whose report goes to ``report_dir``: ``<report_dir>.work``."""
    return report_dir.with_name(report_dir.name + ".work")


# ------------------------------------------------------------------------------------ canonical JSON
def _default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, (Path, tuple, set)):
        return str(o) if isinstance(o, Path) else list(o)
    raise TypeError(f"not JSON: {type(o).__name__}")


def canon(obj: Any) -> str:
    """Canonical JSON (sorted keys, no spaces; floats as their exact repr; NaN/Infinity allowed)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_default)


def _digest(obj: Any) -> str:
    return hashlib.sha256(canon(obj).encode()).hexdigest()[:16]


def _normal(obj: Any) -> Any:
    """``obj`` as it reads back from the journal (dict keys strings, numpy scalars plain)."""
    return json.loads(canon(obj))


def _line(obj: dict[str, Any]) -> bytes:
    body = _normal(obj)
    body["sum"] = hashlib.sha256(canon(body).encode()).hexdigest()[:16]
    return (canon(body) + "\n").encode()


def _check_sum(obj: Any) -> bool:
    if not isinstance(obj, dict) or not isinstance(obj.get("sum"), str):
        return False
    s = obj.pop("sum")
    ok = hashlib.sha256(canon(obj).encode()).hexdigest()[:16] == s
    obj["sum"] = s
    return ok


# ------------------------------------------------------------------------------------ inputs
def _profile_params(obj: Any, out: dict[str, Any], base_dir: Path, depth: int = 0) -> None:
    """The resolved parameters of every profile named (``profile:`` keys, nested) in ``obj``; a profile file
    (``x.yaml``) is looked up as the spec's system does, relative to the spec's directory."""
    from simulator.devices.registry import load_profile

    if depth > 8:
        return
    if isinstance(obj, dict):
        ref = obj.get("profile")
        if isinstance(ref, str) and ref not in out:
            params = None  # validation reports a profile that does not load
            for kw in ({"base_dir": base_dir, "confined": True}, {}):
                try:
                    params = load_profile(ref, **kw)["params"]
                    break
                except ConfigError:
                    continue
            out[ref] = params
            _profile_params(params, out, base_dir, depth + 1)
        for v in obj.values():
            _profile_params(v, out, base_dir, depth + 1)
    elif isinstance(obj, list):
        for v in obj:
            _profile_params(v, out, base_dir, depth + 1)


def code_digest() -> str:
    """SHA-256 of the simulator's sources (relative path + bytes) except :data:`PRESENTATION`."""
    import simulator

    root = Path(simulator.__file__).resolve().parent
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if rel in PRESENTATION or "__pycache__" in rel:
            continue
        h.update(rel.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _runtime() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = [f"python {sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2]}"]
    for pkg in ("numpy", "scipy", "numba", "simpy"):
        try:
            parts.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            parts.append(f"{pkg} -")
    return ", ".join(parts)


def campaign_inputs(problem: Any) -> dict[str, str]:
    """Digests of everything that decides an evaluation's result or the optimiser's proposals."""
    loaded = problem.loaded
    spec = loaded.spec.model_dump(mode="json", by_alias=True, exclude={"budget", "workers", "output", "description"})
    items = [{"label": it.label, "measured": it.measured, "weight": it.weight, "labels": it.labels, "options": it.options,
              "predict": it.predict} for it in problem.items + problem.pred_items]
    prof: dict[str, Any] = {}
    _profile_params([problem.base_system, problem._exp_raw], prof, loaded.dir)
    return {
        "spec": _digest({"spec": spec, "case": loaded.case}),
        "problem": _digest({"system": problem.base_system, "experiment": _without_prose(problem._exp_raw), "items": items,
                            "params": [f.key for f in problem.params]}),
        "profiles": _digest(prof),
        "code": code_digest(),
        "runtime": _digest(_runtime()),
    }


def _without_prose(exp: dict[str, Any] | None) -> dict[str, Any] | None:
    """The experiment without its ``description`` (documentation: editing it must not orphan a campaign's journal)."""
    if not isinstance(exp, dict):
        return exp
    return {k: v for k, v in exp.items() if k != "description"}


def _git_commit() -> str:
    """The commit of the simulator's checkout (with ``+dirty`` when its sources differ), or ``?``."""
    import subprocess

    import simulator

    root = Path(simulator.__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "simulator"], capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    return (head or "?") + ("+dirty" if dirty else "")


# ------------------------------------------------------------------------------------ reading
@dataclass
class JournalEntry:
    n: int  # 1-based order in the journal
    values: dict[str, Any]
    rows: dict[int, dict[str, Any]]
    loss: float
    rms: float
    failed: str | None
    stage: str
    wall_s: float  # campaign wall clock when it finished
    session: int


@dataclass
class JournalFile:
    path: Path
    header: dict[str, Any]
    entries: list[JournalEntry]
    torn: bool  # the last line was cut off (dropped from ``entries``)
    valid_bytes: int  # length of the intact prefix


def _corrupt(path: Path, line: int, why: str) -> ConfigError:
    return ConfigError(f"the calibration journal is damaged at line {line} ({why}); nothing was run or written. Move it "
                       "away to start over (or run with --fresh, which moves it aside)", source=str(path), field=f"line {line}")


def read_journal(path: Path) -> JournalFile:
    """Read and check a journal (read-only). A damaged line raises a ConfigError naming the file and line,
    except the last line when it is cut off or unreadable (``torn``: dropped)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read the calibration journal: {e.strerror or e}", source=str(path)) from None
    lines = data.split(b"\n")
    # lines[-1] is what follows the last newline: empty for an intact file
    ends = []
    pos = 0
    for ln in lines:
        pos += len(ln) + 1
        ends.append(pos)
    complete = len(lines) - 1
    torn = bool(lines[-1].strip(b"\0 \t\r"))
    if complete == 0:
        raise _corrupt(path, 1, "no complete header line")

    def parse(i: int) -> dict[str, Any] | None:
        try:
            obj = json.loads(lines[i].decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None
        return obj if _check_sum(obj) else None

    header = parse(0)
    if header is None or header.get("journal") != FORMAT:
        raise _corrupt(path, 1, "not a simrun calibration journal header")
    if header.get("version") != VERSION:
        raise ConfigError(f"journal version {header.get('version')!r}, this simulator reads version {VERSION}; nothing was run. "
                          "Resume it with the simulator that wrote it, or run with --fresh", source=str(path), field="line 1")
    entries: list[JournalEntry] = []
    valid = ends[0]
    for i in range(1, complete):
        obj = parse(i)
        last = i == complete - 1 and not torn
        if obj is None or obj.get("kind") not in ("eval", "end"):
            if last:
                torn = True  # a crash can leave a last line of garbage (or NULs) with a newline
                break
            raise _corrupt(path, i + 1, "not a valid entry: bad JSON or checksum")
        if obj["kind"] == "eval":
            try:
                e = JournalEntry(n=len(entries) + 1, values=dict(obj["values"]),
                                 rows={int(k): dict(v) for k, v in obj["rows"].items()},
                                 loss=float(obj["loss"]), rms=float(obj["rms"]), failed=obj.get("failed"),
                                 stage=str(obj.get("stage", "")), wall_s=float(obj["wall_s"]), session=int(obj["session"]))
            except (KeyError, TypeError, ValueError, AttributeError):
                raise _corrupt(path, i + 1, "an entry without its values, results or loss") from None
            entries.append(e)
        valid = ends[i]
    return JournalFile(path, header, entries, torn, valid)


# ------------------------------------------------------------------------------------ the journal
class Journal:
    """An open journal (the caller holds the work directory's lock)."""

    def __init__(self, path: Path, header: dict[str, Any], entries: list[JournalEntry], score: Callable[..., Any],
                 param_keys: list[str]):
        self.path = path
        self.header = header
        self.session = 1 + max((e.session for e in entries), default=0)
        self.entries = entries
        self._score = score
        self._keys = sorted(param_keys)
        self._by_key: dict[tuple, JournalEntry] = {}
        for e in entries:
            if sorted(e.values) != self._keys:
                raise _corrupt(path, e.n + 1, "its parameters are not this campaign's")
            self._by_key.setdefault(memo_key(e.values), e)
        self.wall0 = max((e.wall_s for e in entries), default=0.0)  # wall clock of the campaign so far
        self._fd: int | None = None

    @property
    def date(self) -> str:
        return str(self.header.get("date") or _dt.date.today().isoformat())

    # the EvalResult of an entry: scored again from its rows (the loss must come out identical)
    def result_of(self, e: JournalEntry) -> Any:
        from simulator.calibration.problem import EvalResult

        if e.failed:
            return EvalResult(math.inf, math.inf, 0.0, math.nan, {}, [], failed=e.failed)
        r = self._score(e.values, e.rows)
        if not (r.loss == e.loss or (math.isnan(r.loss) and math.isnan(e.loss))):
            raise _corrupt(self.path, e.n + 1, f"its loss {e.loss!r} does not follow from its results ({r.loss!r}): "
                           "edited, or written by other code")
        return r

    def lookup(self, values: dict[str, Any]) -> JournalEntry | None:
        return self._by_key.get(memo_key(values))

    def record(self, values: dict[str, Any], result: Any, stage: str, wall_s: float) -> Any:
        """Journal a finished evaluation and return the result the optimiser uses: its journal round trip
        (so a resumed campaign sees exactly what an uninterrupted one saw). A failure that is not the model's
        rejection of the point (a SimError) is not journaled, nor a failed start point (bad input)."""
        from simulator.errors import SimError

        if result.failed and (not isinstance(result.error, SimError) or stage == "start"):
            return result
        e = JournalEntry(n=len(self.entries) + 1, values=_normal(values), rows=_normal_rows(result.rows) if not result.failed else {},
                         loss=0.0, rms=0.0, failed=result.failed, stage=stage, wall_s=round(wall_s, 3), session=self.session)
        out = self._score(e.values, e.rows) if not result.failed else result
        e.loss, e.rms = float(out.loss), float(out.rms)
        self._append({"kind": "eval", "n": e.n, "values": e.values, "rows": e.rows, "loss": e.loss, "rms": e.rms,
                      "failed": e.failed, "stage": stage, "wall_s": e.wall_s, "session": e.session})
        self.entries.append(e)
        self._by_key.setdefault(memo_key(values), e)
        return out

    def end(self, info: dict[str, Any]) -> None:
        """A closing line (informational: the fit finished; a larger budget may continue later)."""
        self._append({"kind": "end", "session": self.session, **info})

    def _append(self, obj: dict[str, Any]) -> None:
        data = _line(obj)
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
            os.write(self._fd, data)
            os.fsync(self._fd)
        except OSError as e:
            raise ConfigError(f"cannot write the calibration journal: {e.strerror or e}", source=str(self.path)) from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # ---------------------------------------------------------------------------- opening
    @classmethod
    def open(cls, path: Path, problem: Any, inputs: dict[str, str], *, fresh: bool = False,
             say: Callable[[str], None] = lambda s: None) -> Journal:
        """Open (or create) the journal of ``problem`` at ``path``; the caller holds the lock. A torn last
        entry is dropped (the file rewritten without it); a journal of other inputs raises (unless ``fresh``:
        then it is moved aside)."""
        from simulator.experiment.runner import atomic_write_text

        entries: list[JournalEntry] = []
        header: dict[str, Any] | None = None
        if path.exists():
            jf = read_journal(path)
            diff = input_diff(jf.header, inputs)
            if fresh:
                aside = _aside(path)
                os.replace(path, aside)
                say(f"--fresh: the previous journal ({len(jf.entries)} evaluations) was moved to {aside}")
            elif diff:
                raise mismatch_error(path, jf, diff)
            else:
                header, entries = jf.header, jf.entries
                if jf.torn:
                    with path.open("rb") as f:
                        keep = f.read(jf.valid_bytes)
                    tmp = path.with_name(f".{path.name}.tmp")
                    tmp.write_bytes(keep)
                    os.replace(tmp, path)
                    say(f"{path}: its last entry was cut off (an interrupted write) and was dropped; that evaluation runs again")
        if header is None:
            now = _dt.datetime.now(_dt.timezone.utc)
            loaded = problem.loaded
            header = {"journal": FORMAT, "version": VERSION, "campaign": loaded.spec.name, "case": loaded.case,
                      "spec": str(loaded.path), "created": now.isoformat(timespec="seconds"), "date": _dt.date.today().isoformat(),
                      "commit": _git_commit(), "runtime": _runtime(), "inputs": inputs}
            atomic_write_text(path, _line(header).decode())
            with contextlib.suppress(OSError):
                os.chmod(path, 0o644)  # readable like the report (mkstemp makes it private)
        return cls(path, header, entries, problem.score, [f.key for f in problem.params])


def _aside(path: Path) -> Path:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    k = 0
    while True:
        cand = path.with_name(f"{path.stem}.{stamp}{'.' + str(k) if k else ''}.old{path.suffix}")
        if not cand.exists():
            return cand
        k += 1


def mismatch_error(path: Path, jf: JournalFile, diff: list[str]) -> ConfigError:
    what = ", ".join(_INPUT_NAMES[k] for k in diff)
    h = jf.header
    only_code = diff == ["code"] and any(not e.failed for e in jf.entries)
    return ConfigError(
        f"this journal ({len(jf.entries)} evaluations, campaign {h.get('campaign')!r}"
        + (f" case {h.get('case')!r}" if h.get("case") else "")
        + f", started {h.get('created')} at commit {h.get('commit')}) was made with other inputs: {what} differ; nothing "
        "was run. To resume it, run the code and files it was made with; to start over, add --fresh (it is moved aside)"
        + ("; or, if the code change should not alter results (a speed change), add --revalidate: its last evaluation "
           "is simulated again and the journal is kept only if every result comes out identical" if only_code else ""),
        source=str(path), field="inputs")


def rows_differ(journaled: dict[int, dict[str, Any]], fresh: dict[int, dict[str, Any]]) -> str | None:
    """Where re-simulated results differ from the journaled ones (their journal round trip is compared:
    identical means bit for bit), or None."""
    new = _normal_rows(fresh)
    for k in sorted(set(journaled) | set(new)):
        a, b = journaled.get(k), new.get(k)
        if a is None or b is None:
            return f"result row {k} is {'missing' if b is None else 'new'}"
        for m in sorted(set(a) | set(b)):
            if canon(a.get(m)) != canon(b.get(m)):
                return f"result row {k}, {m}: journaled {a.get(m)!r}, now {b.get(m)!r}"
    return None


def rebase_code(path: Path, inputs: dict[str, str], checked: JournalEntry) -> None:
    """Move a journal onto the current code after :func:`rows_differ` found evaluation ``checked`` identical:
    the header's code digest becomes the current one and a ``rebased`` record keeps the old digest, the
    commits and the evaluation checked; the entries are kept byte for byte."""
    from simulator.experiment.runner import atomic_write_text

    jf = read_journal(path)
    with path.open("rb") as f:
        data = f.read(jf.valid_bytes)
    rest = data.split(b"\n", 1)[1] if b"\n" in data else b""
    h = dict(jf.header)
    h.pop("sum", None)
    old = dict(h.get("inputs", {}))
    if set(input_diff(h, inputs)) - {"code"}:
        raise ValueError("only a journal that differs in its code digest can be rebased")
    h["rebased"] = [*h.get("rebased", []), {
        "from_code": old.get("code"), "to_code": inputs["code"], "from_commit": h.get("commit"), "to_commit": _git_commit(),
        "checked_evaluation": checked.n, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}]
    h["inputs"] = {**old, "code": inputs["code"]}
    h["commit"] = _git_commit()
    atomic_write_text(path, _line(h).decode() + rest.decode())
    with contextlib.suppress(OSError):
        os.chmod(path, 0o644)


def _normal_rows(rows: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {int(k): v for k, v in _normal({str(k): v for k, v in rows.items()}).items()}


def memo_key(vals: dict[str, Any]) -> tuple:
    """The optimiser's memo key of a parameter assignment (floats to 12 significant digits, so that a value
    that went through the unit coordinates and back, e.g. a byte count on a log scale, is the same point)."""
    return tuple((k, float(f"{v:.12g}") if isinstance(v, float) else v) for k, v in sorted(vals.items()))
