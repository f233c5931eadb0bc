"""Every figure of tfjob, each against a baseline measured in the same run: one table, one JSON.

    .venv/bin/python bench/run.py [--runs 5] [--json FILE] [--only SECTION[,SECTION]] [--quick]

Sections, in order: cli (``tfjob --help`` start-up), vertex (dry-run submit, submit-path
imports), bootstrap (task start-up overhead), packaging (2,000-file sdist, determinism,
bytes on an unchanged re-submit), local (1+4+2 and 1+32+8 clusters, teardown, peak
RSS), recovery (a preempted worker, a lost chief: preemption to the trainer running again), growth (1+4+2, 1+32+8, 1+128+32 against bare interpreters, the overhead per added task
from 41 to 161 tasks, with a PNG plot),
ps_training (the census template's real PS training through tfjob against a hand launcher),
scale (1,000-worker renders, a 1,101-task TF_CONFIG); containers (image builds, a
1+2+1 job as containers against processes) only with ``--only containers``: it needs
rootful podman. Each figure is the median
of ``--runs`` runs with min–max (growth: at least 9, see ``growth.MIN_ROUNDS``), its
ratio to the baseline, the target and whether it is met — or "unmeasurable": a difference
(an overhead, a slope) that came out negative, or whose min–max spans both 0 and the target,
is below this run's noise and is not counted as met. ``--quick`` (one run, small sizes, no
warm-up) only checks that every figure comes out. A section that needs an extra this
interpreter lacks (``NEEDS``: the Vertex SDK, TensorFlow…) is skipped and named, as is the
growth plot without matplotlib. The exit status is 0 even when a target is missed or a
section skipped: the table and its last lines say so.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the section modules, when imported from elsewhere

from common import Figure, render_table, report, title_line  # noqa: E402

Measure = Callable[[int, bool], list[Figure]]


def sections() -> dict[str, Measure]:
    """Section name → its ``measure(runs, quick)``, in the order of the table."""
    import bootstrap_startup
    import cli_start
    import containers
    import growth
    import image_build
    import local_cluster
    import ps_training
    import recovery
    import resubmit
    import scale
    import sdist_build
    import vertex_submit

    return {
        cli_start.SECTION: cli_start.measure,
        vertex_submit.SECTION: vertex_submit.measure,
        bootstrap_startup.SECTION: bootstrap_startup.measure,
        sdist_build.SECTION: sdist_build.measure,
        resubmit.SECTION: resubmit.measure,
        local_cluster.SECTION: local_cluster.measure,
        recovery.SECTION: recovery.measure,
        growth.SECTION: growth.measure,
        ps_training.SECTION: ps_training.measure,
        scale.SECTION: scale.measure,
        containers.SECTION: containers.measure,
        image_build.SECTION: image_build.measure,
    }


#: Sections run only when named with --only (they need what not every machine has).
OPT_IN = ("containers", "images")

#: What a section needs beyond tfjob's own dependencies: (module, the extra that brings it).
#: Without it the section is skipped, said on stderr and in the JSON, and the rest runs.
NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    "cli": (("google.cloud.aiplatform", "vertex"),),  # its baseline: the Vertex SDK's import
    "vertex": (("google.cloud.aiplatform_v1", "vertex"), ("google.cloud.storage", "vertex")),
    "packaging": (("google.cloud.storage", "vertex"), ("gcp_storage_emulator", "test")),  # staging bytes, on the emulator
    "ps_training": (("tensorflow", "tf"), ("tf_keras", "tf")),
    "scale": (("google.cloud.aiplatform_v1", "vertex"),),  # the Vertex render checks its body with the client's types
}


def missing_extra(section: str) -> str | None:
    """Why ``section`` cannot run in this interpreter (a module its extra brings is missing), or None."""
    import importlib.util

    for module, extra in NEEDS.get(section, ()):
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:  # a parent package missing
            found = False
        if not found:
            return f"needs {module}: pip install -e '.[{extra}]'"
    return None


def parse_only(values: list[str] | None, known: list[str]) -> list[str]:
    """``--only a,b --only c`` → the sections in table order.

    Raises:
        ValueError: a name that is not a section (the message lists the sections).
    """
    if not values:
        return [name for name in known if name not in OPT_IN]
    wanted = {name.strip() for value in values for name in value.split(",") if name.strip()}
    unknown = sorted(wanted - set(known))
    if unknown:
        raise ValueError(f"--only {', '.join(unknown)}: no such section; choose from {', '.join(known)}")
    return [name for name in known if name in wanted]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="measured runs per figure; the median is shown (default 5)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    parser.add_argument("--only", action="append", metavar="SECTION", help="run only these sections (repeat or comma-separate)")
    parser.add_argument("--quick", action="store_true", help="one warm-up-free pass at small sizes: every figure, no meaning")
    args = parser.parse_args(argv)
    try:
        import tfjob  # noqa: F401
    except ImportError:
        print("error: tfjob is not importable; run the bench with the venv's interpreter: .venv/bin/python bench/run.py", file=sys.stderr)
        return 2
    known = sections()
    try:
        if args.runs < 1:
            raise ValueError(f"--runs {args.runs}: give at least 1 run (5 or more for figures worth quoting)")
        chosen = parse_only(args.only, list(known))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    started = time.perf_counter()
    figures: list[Figure] = []
    skipped: dict[str, str] = {}
    for name in chosen:
        why = missing_extra(name)
        if why:
            skipped[name] = why
            print(f"[{name}: skipped, {why}]", file=sys.stderr, flush=True)
            continue
        t = time.perf_counter()
        figures.extend(known[name](args.runs, args.quick))
        print(f"[{name}: {time.perf_counter() - t:.0f} s]", file=sys.stderr, flush=True)
    ran = [name for name in chosen if name not in skipped]
    doc = report(figures, runs=args.runs, quick=args.quick, elapsed=time.perf_counter() - started, sections=ran)
    doc["skipped"] = skipped
    grown = [f for f in figures if f.section == "growth"]
    if grown:
        import growth

        doc["growth_per_task_s"] = growth.per_task_overhead(grown)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            skipped["growth plot"] = "needs matplotlib: pip install -e '.[plots]'"
        else:
            path = Path(args.json).with_suffix(".growth.png") if args.json else growth.DEFAULT_PLOT
            doc["plots"] = {"growth": str(growth.plot(grown, path))}
    print(render_table(figures, title_line(doc)))
    for f in figures:
        if f.unmeasurable:
            print(f"unmeasurable: {f.key}: {f.unmeasurable}")
    for n, overhead, slope in doc.get("growth_per_task_s", []):
        grew = "" if slope is None else f", {slope * 1000:+.1f} ms per added task"
        print(f"growth: {n} tasks, tfjob's overhead {overhead * 1000:+.0f} ms over bare interpreters{grew}")
    if doc.get("plots"):
        print(f"plot: {doc['plots']['growth']}")
    for name, why in skipped.items():
        print(f"skipped: {name} ({why})")
    unmeasurable = f", {doc['targets_unmeasurable']} unmeasurable" if doc["targets_unmeasurable"] else ""
    print(f"{doc['targets_met']} of {doc['targets']} targets met{unmeasurable}; {doc['elapsed_s']:.0f} s in all")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
