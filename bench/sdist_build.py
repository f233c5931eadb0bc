"""Packaging a trainer: sdist time for 2,000 files, determinism, bytes on an unchanged re-submit.

* ``build_sdist`` of a generated 2,000-file trainer package, against the same files
  written by the standard library's ``tarfile`` (``w:gz``) in the same rounds;
* determinism: the sha256 of every build of that trainer (at least 3): one digest;
* bytes uploaded by staging on a first and on a second, unchanged submit (target 0),
  through the real ``google-cloud-storage`` client against gcp-storage-emulator in
  this process (a fresh bucket each round).

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
        from tfjob.spec import build_spec

        self.spec = build_spec(name="bench", module="trainer.task", package=str(pkg), workers=4, ps=2)
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


def measure(runs: int, quick: bool = False) -> list[Figure]:
    """sdist against tarfile, the builds' digests, and staging bytes against the emulator."""
    from tfjob.packaging import build_sdist

    files = QUICK_FILES if quick else FILES
    digests: list[str] = []
    with private_home("tfjob-bench-pkg-") as tmp:
        pkg = write_trainer(tmp / "src", files)
        assert sum(1 for p in pkg.rglob("*") if p.is_file()) == files

        def sdist() -> None:
            digests.append(build_sdist(pkg, tmp / "out", module="trainer.task").sha256)

        warmup = 0 if quick else 1
        timed = rounds({"build_sdist": call(sdist), "tarfile w:gz": call(lambda: _tarfile_gz(pkg, tmp / "plain.tar.gz"))}, runs, warmup=warmup)
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
        Figure("packaging.second_upload", SECTION, "bytes uploaded, second unchanged submit", staged["second, unchanged submit"], staged["first submit"], Target("equal", 0)),
    ]


if __name__ == "__main__":
    sys.exit(section_main(measure, __doc__))
