"""Packaging a trainer: sdist time for 2,000 files, determinism, bytes on an unchanged re-submit.

* ``build_sdist`` of a generated 2,000-file trainer package, against the same files
  written by the standard library's ``tarfile`` (``w:gz``) in the same rounds;
* determinism: the sha256 of every build of that trainer (at least 3): one digest;
* bytes uploaded by staging on a first and on a second, unchanged submit (target 0),
  through the real ``google-cloud-storage`` client against gcp-storage-emulator in
  this process (a fresh bucket each round);
* ignore matching on adversarial patterns (issue 24): ``collect_files`` of a deep tree of
  40-character names under an ignore file of ``*a*a…*c`` and ``**/**/…/x`` lines. Linear
  means the time per (file × ignore line) does not grow with the size: it is measured at
  300 files × 8,000 lines against 75 files × 2,000 lines (16× the work; target ≤ 1.5×);
  and a 1 MiB ignore file of such lines over 300 files (18 s before; target ≤ 2 s),
  against the same walk with no ignore file.

(Named ``sdist_build`` so that running from bench/ never shadows PyPA's ``packaging``.)

    .venv/bin/python bench/sdist_build.py [--runs 5] [--quick] [--json FILE]
"""

from __future__ import annotations

import os
import socket
import sys
import tarfile
from pathlib import Path

from common import Figure, Sample, Target, call, private_home, rounds, section_main

SECTION = "packaging"
FILES = 2000
QUICK_FILES = 200
#: Every build's digest is compared; at least this many builds.
MIN_BUILDS = 3


def write_trainer(parent: Path, files: int) -> Path:
    """A trainer package of exactly ``files`` files: ``trainer.task`` and subpackages of modules."""
    pkg = parent / "trainer"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("from trainer import part00\n\nprint('training')\n")
    written, part = 2, 0
    while written < files:
        sub = pkg / f"part{part:02d}"
        sub.mkdir()
        (sub / "__init__.py").write_text("")
        written += 1
        for i in range(min(99, files - written)):
            body = f"VALUE = {part * 1000 + i}\n\n\ndef shift(x: float) -> float:\n    return x + VALUE\n"
            # A few data files too: package data goes into the sdist's setup.py.
            name, text = (f"table{i:03d}.csv", f"a,b\n{i},{part}\n") if i % 10 == 9 else (f"mod{i:03d}.py", body)
            (sub / name).write_text(text)
            written += 1
        part += 1
    return pkg


def _tarfile_gz(pkg: Path, out: Path) -> None:
    with tarfile.open(out, "w:gz") as tar:
        tar.add(pkg, arcname=pkg.name)


def _emulator() -> tuple[object, str]:
    from gcp_storage_emulator.server import create_server

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = create_server("127.0.0.1", port, in_memory=True)
    server.start()
    return server, f"http://127.0.0.1:{port}"


class Staging:
    """A first submit's staging into a fresh bucket, then an unchanged submit's: bytes uploaded.

    The package is built by the submit path itself (``plan_submission``), as
    ``tfjob submit`` does; the real storage client talks to the emulator.
    """

    def __init__(self, pkg: Path) -> None:
        from tfjob.backends.vertex.options import VertexOptions
        from tfjob.backends.vertex.staging import storage_client
        from tfjob.description.request import build_spec

        self.spec = build_spec(dict(name="bench", module="trainer.task", package=str(pkg), workers=4, ps=2))
        self.client = storage_client("bench", None)
        self.options = VertexOptions()
        self.round = 0

    def _stage(self) -> float:
        from tfjob.backends.vertex.staging import stage_packages
        from tfjob.backends.vertex.submission import plan_submission

        plan = plan_submission(self.spec, self.options, dry_run=False)
        return float(stage_packages(plan.uploads, region=plan.region, client=self.client).bytes_uploaded)

    def first(self) -> float:
        """Stage into a new bucket (everything is uploaded)."""
        from tfjob.backends.vertex.options import VertexOptions

        self.round += 1
        bucket = f"bench-{self.round}"
        self.client.create_bucket(bucket)
        self.options = VertexOptions(project="bench", region="us-central1", staging_bucket=f"gs://{bucket}")
        return self._stage()

    def again(self) -> float:
        """Stage the unchanged trainer into the same bucket again."""
        return self._stage()


def adversarial_tree(parent: Path, files: int, lines: int, depth: int = 20) -> Path:
    """``files`` files with 40-character names ``depth`` directories deep, under ``lines``
    adversarial ignore lines (half ``*a*a…*cN``, half ``**/**/…/xN``; none matches)."""
    pkg = parent / "trainer"
    deep = pkg.joinpath(*["d"] * depth)
    deep.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for i in range(files - 1):
        (deep / f"{'a' * 40}{i}.txt").write_text("x")
    rules = ["*a" * 20 + f"*c{i}" if i % 2 == 0 else "/" + "**/" * 20 + f"x{i}" for i in range(lines)]
    (pkg / ".tfjobignore").write_text("\n".join(rules) + "\n")
    return pkg


def measure_ignore(runs: int, quick: bool) -> list[Figure]:
    """Ignore matching: time per file × line at two sizes, and the 1 MiB ignore file."""
    from tfjob.packaging import MAX_IGNORE_RULES, collect_files

    small, large = ((30, 200), (120, 800)) if quick else ((75, 2000), (300, 8000))
    with private_home("tfjob-bench-ignore-") as tmp:
        trees = {
            "small": adversarial_tree(tmp / "small", *small),
            "large": adversarial_tree(tmp / "large", *large),
            "1mib": adversarial_tree(tmp / "1mib", 300, 0),
            "none": adversarial_tree(tmp / "none", 300, 0),
        }
        width = 1024 * 1024 // MAX_IGNORE_RULES - 1  # a 1 MiB file of MAX_IGNORE_RULES lines (a fifth with --quick)
        count = MAX_IGNORE_RULES // 5 if quick else MAX_IGNORE_RULES
        rules = ["*a" * ((width - len(f"*c{i}")) // 2) + f"*c{i}" for i in range(count)]
        (trees["1mib"] / ".tfjobignore").write_text("\n".join(rules) + "\n")
        size = (trees["1mib"] / ".tfjobignore").stat().st_size
        (trees["none"] / ".tfjobignore").unlink()
        timed = rounds({name: call(lambda path=path: collect_files(path)) for name, path in trees.items()}, runs, warmup=0 if quick else 1)
    per_unit = {
        name: Sample(f"{files} files × {lines:,} lines", [round(v / (files * lines) * 1e9, 1) for v in timed[name].values], "ns")
        for name, (files, lines) in (("small", small), ("large", large))
    }
    return [
        Figure("packaging.ignore_linear", SECTION, f"ignore matching per file×line, {large[0]}×{large[1]:,} vs {small[0]}×{small[1]:,}",
               per_unit["large"], per_unit["small"], Target("ratio-max", 1.5)),
        Figure("packaging.ignore_1mib", SECTION, f"walk of 300 files under a {size // 1024} KiB adversarial ignore file",
               timed["1mib"], timed["none"], Target("max", 2.0)),
    ]  # fmt: skip


def measure(runs: int, quick: bool = False) -> list[Figure]:
    """sdist against tarfile, the builds' digests, staging bytes against the emulator, ignore matching."""
    from tfjob.packaging import build_sdist

    files = QUICK_FILES if quick else FILES
    digests: list[str] = []
    with private_home("tfjob-bench-pkg-") as tmp:
        pkg = write_trainer(tmp / "src", files)
        assert sum(1 for p in pkg.rglob("*") if p.is_file()) == files

        def sdist() -> None:
            digests.append(build_sdist(pkg, tmp / "out", module="trainer.task").sha256)

        warmup = 0 if quick else 1
        timed = rounds(
            {"build_sdist": call(sdist), "tarfile w:gz": call(lambda: _tarfile_gz(pkg, tmp / "plain.tar.gz"))}, runs, warmup=warmup
        )
        while len(digests) < MIN_BUILDS:
            sdist()

        server, url = _emulator()
        os.environ["STORAGE_EMULATOR_HOST"] = url
        try:
            staging = Staging(pkg)
            units = {"first submit": "B", "second, unchanged submit": "B"}
            staged = rounds({"first submit": staging.first, "second, unchanged submit": staging.again}, runs, warmup=0, units=units)
        finally:
            server.stop()  # type: ignore[attr-defined]
            os.environ.pop("STORAGE_EMULATOR_HOST", None)

    distinct = Sample("distinct sha256", [float(len(set(digests)))], "digests")
    return [
        Figure("packaging.sdist", SECTION, f"build_sdist of a {files}-file trainer", timed["build_sdist"], timed["tarfile w:gz"]),
        Figure("packaging.deterministic", SECTION, f"distinct sha256 over {len(digests)} builds", distinct, None, Target("equal", 1)),
        Figure(
            "packaging.second_upload",
            SECTION,
            "bytes uploaded, second unchanged submit",
            staged["second, unchanged submit"],
            staged["first submit"],
            Target("equal", 0),
        ),
        *measure_ignore(runs, quick),
    ]


if __name__ == "__main__":
    sys.exit(section_main(measure, __doc__))
