"""Measuring helpers for bench/: one way to time, compare and print.

Every figure is a :class:`Figure`: a :class:`Sample` (repeated measurements; the
median is the figure, min–max its spread), the :class:`Sample` of a baseline measured
in the same run, their ratio, and a :class:`Target` with whether it is met.

Measurements go through :func:`rounds`: each round runs every item once, in turn,
so that load from other processes on the machine hits the figure and its baseline
alike. An item is any ``() -> float`` — :func:`command` times a process,
:func:`call` a Python call, and a section may return another quantity (bytes, MiB).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
BIN = Path(sys.executable).parent

#: One measured run of something: returns the quantity measured (seconds unless said otherwise).
Run = Callable[[], float]


@dataclass
class Sample:
    """Repeated measurements of one thing (seconds unless ``unit`` says otherwise)."""

    name: str
    values: list[float]
    unit: str = "s"

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def show(self) -> str:
        """``median (min–max)`` in the unit's natural scale."""
        return f"{fmt(self.median, self.unit)} ({fmt(self.low, self.unit, bare=True)}–{fmt(self.high, self.unit, bare=True)})"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "unit": self.unit, "median": self.median, "min": self.low, "max": self.high, "values": self.values}


def fmt(value: float, unit: str, bare: bool = False) -> str:
    """A value in its unit: seconds as ms (or s above 10 s), bytes as B/KiB/MiB."""
    if unit == "s":
        if abs(value) >= 1:
            text, suffix = f"{value:.2f}", " s"
        else:  # two decimals below 10 ms: the pure parts take fractions of a millisecond
            text, suffix = f"{value * 1000:.{2 if abs(value) < 0.01 else 1}f}", " ms"
    elif unit == "B":
        if value >= 1 << 20:
            text, suffix = f"{value / (1 << 20):.1f}", " MiB"
        elif value >= 1 << 10:
            text, suffix = f"{value / (1 << 10):.1f}", " KiB"
        else:
            text, suffix = f"{value:.0f}", " B"
    elif unit == "MiB":
        text, suffix = f"{value:.1f}", " MiB"
    else:
        text, suffix = f"{value:g}", f" {unit}"
    return text if bare else text + suffix


@dataclass(frozen=True)
class Target:
    """What a figure must achieve.

    Attributes:
        kind: ``ratio-max`` (figure/baseline ≤ bound), ``speedup-min`` (baseline/figure
            ≥ bound), ``overhead-max`` (figure − baseline ≤ bound, in the figure's unit),
            ``max`` (figure ≤ bound), ``equal`` (figure == bound).
        bound: the number.
        difference: the figure is itself a difference of measurements (a slope), so a
            negative or noise-dominated value is unmeasurable (``overhead-max`` always is one).
    """

    kind: str
    bound: float
    difference: bool = False

    def text(self, unit: str) -> str:
        """The target as the table shows it (``≤ 8×``, ``overhead ≤ 60.0 ms``)."""
        if self.kind == "ratio-max":
            return f"≤ {self.bound:g}×"
        if self.kind == "speedup-min":
            return f"≥ {self.bound:g}× faster"
        if self.kind == "overhead-max":
            return f"overhead ≤ {fmt(self.bound, unit)}"
        if self.kind == "max":
            return f"≤ {fmt(self.bound, unit)}"
        if self.kind == "equal":
            return f"= {fmt(self.bound, unit)}"
        raise ValueError(f"unknown target kind {self.kind!r}")

    def met(self, sample: Sample, baseline: Sample | None) -> bool:
        """Whether the median of ``sample`` (against that of ``baseline``) meets the target."""
        value = sample.median
        if self.kind == "max":
            return value <= self.bound
        if self.kind == "equal":
            return value == self.bound
        if baseline is None:
            raise ValueError(f"a {self.kind} target needs a baseline")
        if self.kind == "ratio-max":
            return value <= self.bound * baseline.median
        if self.kind == "speedup-min":
            return baseline.median >= self.bound * value
        if self.kind == "overhead-max":
            return value - baseline.median <= self.bound
        raise ValueError(f"unknown target kind {self.kind!r}")


@dataclass
class Figure:
    """One line of the report: a measurement, its baseline, their ratio and the target."""

    key: str
    section: str
    name: str
    sample: Sample
    baseline: Sample | None = None
    target: Target | None = None

    @property
    def ratio(self) -> float | None:
        """figure / baseline (None without a baseline, or a zero one)."""
        if self.baseline is None or self.baseline.median == 0:
            return None
        return self.sample.median / self.baseline.median

    @property
    def overhead(self) -> float | None:
        """figure − baseline, in the figure's unit (None without a baseline)."""
        return None if self.baseline is None else self.sample.median - self.baseline.median

    @property
    def unmeasurable(self) -> str | None:
        """Why this run cannot tell whether a difference meets its target, or None.

        A difference (an overhead over a baseline, a slope) is below the run's noise when it
        comes out negative — doing more cannot take less — or when its range (min–max of the
        figure less max–min of the baseline) reaches both 0 and beyond the target: then "met"
        would be the luck of the median.
        """
        t = self.target
        if t is None:
            return None
        if t.kind == "overhead-max" and self.baseline is not None:
            value = self.sample.median - self.baseline.median
            low, high = self.sample.low - self.baseline.high, self.sample.high - self.baseline.low
        elif t.kind == "max" and t.difference:
            value, low, high = self.sample.median, self.sample.low, self.sample.high
        else:
            return None
        unit = self.sample.unit
        if value < 0:
            return f"{fmt(value, unit)} is negative: the noise of this run is larger than what is measured"
        if low <= 0 < t.bound < high:
            return f"{fmt(low, unit)} to {fmt(high, unit)} spans 0 and the target: noise-dominated"
        return None

    @property
    def met(self) -> bool | None:
        """True/False against the target; None for a figure without one (shown for context)
        or one this run cannot tell (:attr:`unmeasurable`)."""
        if self.target is None or self.unmeasurable:
            return None
        return self.target.met(self.sample, self.baseline)

    def ratio_text(self) -> str:
        """The comparison as the table shows it: ``4.47×``, ``20.0× faster``, ``+14.5 ms (1.52×)``."""
        if self.target is not None and self.target.kind == "speedup-min" and self.sample.median > 0 and self.baseline:
            return f"{self.baseline.median / self.sample.median:.1f}× faster"
        if self.target is not None and self.target.kind == "overhead-max" and self.overhead is not None:
            sign = "+" if self.overhead >= 0 else "−"
            ratio = "" if self.ratio is None else f" ({self.ratio:.2f}×)"
            return f"{sign}{fmt(abs(self.overhead), self.sample.unit)}{ratio}"
        ratio = self.ratio
        return "—" if ratio is None else f"{ratio:.2f}×"

    def to_dict(self) -> dict[str, Any]:
        """The figure as JSON-able data (both samples with every value)."""
        return {
            "key": self.key,
            "section": self.section,
            "name": self.name,
            "sample": self.sample.to_dict(),
            "baseline": None if self.baseline is None else self.baseline.to_dict(),
            "ratio": self.ratio,
            "overhead": self.overhead,
            "ratio_text": self.ratio_text(),
            "target": None
            if self.target is None
            else {"kind": self.target.kind, "bound": self.target.bound, "text": self.target.text(self.sample.unit)},
            "met": self.met,
            "unmeasurable": self.unmeasurable,
        }


# -- measuring -----------------------------------------------------------------------------
def command(
    argv: Sequence[str | Path],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    before: Callable[[], object] | None = None,
) -> Run:
    """A run that starts ``argv``, waits for it and returns its wall time; it must exit 0.
    ``before`` is called first, outside the timing (e.g. to change a file)."""
    args = [str(a) for a in argv]

    def run() -> float:
        if before is not None:
            before()
        start = time.perf_counter()
        proc = subprocess.run(args, env=None if env is None else dict(env), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-2000:]}")
        return elapsed

    return run


def call(fn: Callable[[], object]) -> Run:
    """A run that times ``fn()`` in this process."""

    def run() -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    return run


def with_cpu(run: Run, into: list[float]) -> Run:
    """``run``, which also appends to ``into`` the CPU time (user + system) of the processes
    it started and waited for — with a process's own waited-for children, e.g. a launcher's
    tasks. On a shared machine CPU time moves far less with other load than wall time."""
    import resource

    def measured() -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        value = run()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        into.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        return value

    return measured


def rounds(items: Mapping[str, Run], runs: int, *, warmup: int = 1, units: Mapping[str, str] | None = None) -> dict[str, Sample]:
    """Run every item once per round, ``warmup`` unmeasured rounds then ``runs`` measured ones.

    Interleaving puts a burst of load from elsewhere on the figure and on its baseline
    alike, instead of on whichever happened to run then.
    """
    values: dict[str, list[float]] = {name: [] for name in items}
    for i in range(warmup + runs):
        for name, run in items.items():
            value = run()
            if i >= warmup:
                values[name].append(float(value))
    return {name: Sample(name, v, (units or {}).get(name, "s")) for name, v in values.items()}


def time_command(
    name: str,
    argv: Sequence[str | Path],
    runs: int,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    warmup: int = 1,
) -> Sample:
    """Wall time of a command, ``runs`` times after ``warmup`` unmeasured runs; it must exit 0."""
    return rounds({name: command(argv, env=env, cwd=cwd)}, runs, warmup=warmup)[name]


def time_call(name: str, fn: Callable[[], object], runs: int, warmup: int = 1) -> Sample:
    """Wall time of a Python call in this process."""
    return rounds({name: call(fn)}, runs, warmup=warmup)[name]


_SHARED: dict[tuple[str, int], Sample] = {}


def remember(sample: Sample, runs: int) -> Sample:
    """Offer a baseline measured by one section to the others of the same bench run."""
    _SHARED.setdefault((sample.name, runs), sample)
    return sample


def cached(name: str, runs: int) -> Sample | None:
    """A baseline another section already measured in this run (see :func:`remember`)."""
    return _SHARED.get((name, runs))


@contextlib.contextmanager
def private_home(prefix: str = "tfjob-bench-") -> Iterator[Path]:
    """A temporary directory that is this process' ``TFJOB_HOME`` meanwhile (job store, builds)."""
    before = os.environ.get("TFJOB_HOME")
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        os.environ["TFJOB_HOME"] = str(Path(tmp) / "home")
        try:
            yield Path(tmp)
        finally:
            if before is None:
                os.environ.pop("TFJOB_HOME", None)
            else:
                os.environ["TFJOB_HOME"] = before


def clean_env(**extra: str) -> dict[str, str]:
    """The environment for measured commands: no cloud settings, no TF_CONFIG, quiet TF, and
    bytecode caches written and used as on a user's machine (a shell's
    PYTHONDONTWRITEBYTECODE would make every command compile tfjob from source)."""
    dropped = ("TF_CONFIG", "CLUSTER_SPEC", "GOOGLE_", "CLOUDSDK_", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.update({"TF_CPP_MIN_LOG_LEVEL": "2", "TF_USE_LEGACY_KERAS": "1"})
    env.update(extra)
    return env


# -- reporting -----------------------------------------------------------------------------
def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "load_average_1m": load,
    }


def render_table(figures: Sequence[Figure], title: str = "") -> str:
    """The figures as one aligned text table (pure)."""
    header = ("section", "figure", "median (min–max)", "baseline, same run", "ratio", "target", "met")
    rows = [header]
    for f in figures:
        base = "—" if f.baseline is None else f"{f.baseline.name}: {f.baseline.show()}"
        met = "unmeasurable" if f.unmeasurable else {True: "yes", False: "NO", None: "—"}[f.met]
        rows.append(
            (f.section, f.name, f.sample.show(), base, f.ratio_text(), "—" if f.target is None else f.target.text(f.sample.unit), met)
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = [title] if title else []
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def report(figures: Sequence[Figure], *, runs: int, quick: bool, elapsed: float, sections: Sequence[str]) -> dict[str, Any]:
    """The JSON document of a bench run."""
    targets = [f for f in figures if f.target is not None]
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "runs": runs,
        "quick": quick,
        "sections": list(sections),
        "elapsed_s": elapsed,
        "targets_met": sum(1 for f in targets if f.met),
        "targets_unmeasurable": sum(1 for f in targets if f.unmeasurable),
        "targets": len(targets),
        "figures": [f.to_dict() for f in figures],
    }


def title_line(doc: Mapping[str, Any]) -> str:
    """The table's first line: when, on what, how many runs."""
    m = doc["machine"]
    load = "" if m.get("load_average_1m") is None else f", load {m['load_average_1m']:.1f}"
    return (
        f"tfjob bench {doc['date']} — {m['cpus']} CPUs ({m['cpu']}), {m['system']}, Python {m['python']}{load}; "
        f"median of {doc['runs']} runs{' (quick)' if doc['quick'] else ''}, min–max in brackets"
    )


def section_main(measure: Callable[[int, bool], list[Figure]], description: str, argv: Sequence[str] | None = None) -> int:
    """The command line of a per-area module: ``[--runs N] [--quick] [--json FILE]``."""
    parser = argparse.ArgumentParser(description=description.strip().splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="measured runs per figure (the median is shown)")
    parser.add_argument("--quick", action="store_true", help="small sizes, no warm-up: checks that every figure comes out")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    figures = measure(args.runs, args.quick)
    doc = report(figures, runs=args.runs, quick=args.quick, elapsed=time.perf_counter() - started, sections=[])
    print(render_table(figures, title_line(doc)))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0
