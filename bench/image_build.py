"""Images built from a trainer directory (issue 26): `tfjob build` cold and warm, and what a
one-line change pushes against the whole image.

Opt-in (``--only images``): it needs rootful podman (set up as ``tests/podman_ci.py`` sets it
up, tfjob's base image built on the TensorFlow stand-in) and Debian's ``docker-registry``, which
it runs on 127.0.0.1 with its storage in a temporary directory. The trainer is the
``custom-container`` template (the census trainer and its Dockerfile).

* ``build``: ``tfjob build DIR --image-repo REG/PATH`` with nothing of it anywhere (no image
  of its key in the engine's store, no layer of its own in the build cache, a registry that
  holds nothing): build, then push; against the same command once it is built and
  pushed (unchanged inputs: one manifest ``HEAD`` and nothing else).
* ``one-line change``: the bytes the registry received for the image after one line of
  ``trainer/task.py`` changed (the blobs whose upload completed, by the registry's access
  log, sized by the manifest), against the bytes of the whole image (every layer and the config).

    .venv/bin/python bench/image_build.py [--runs 3] [--quick] [--json FILE]
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from common import BIN, ROOT, Figure, Sample, clean_env, private_home, section_main

SECTION = "images"


def _tests():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "tests"))
    import podman_ci
    import registry_ci

    return podman_ci, registry_ci


def unavailable() -> str | None:
    """Why the section cannot run here (None when it can)."""
    podman_ci, registry_ci = _tests()
    missing = podman_ci.missing_tools() + ([registry_ci.EXE] if registry_ci.missing() else [])
    if missing:
        return f"needs {', '.join(missing)} (apt-get install {' '.join(podman_ci.PACKAGES)} {registry_ci.PACKAGE})"
    if os.geteuid() != 0:
        return "needs rootful podman (run as root, as CI does)"
    return None


def _manifest(host: str, path: str, digest: str) -> dict:  # type: ignore[type-arg]
    request = urllib.request.Request(f"http://{host}/v2/{path}/manifests/{digest}", headers={
        "Accept": "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def measure(runs: int, quick: bool = False) -> list[Figure]:
    reason = unavailable()
    if reason is not None:
        raise RuntimeError(f"the images section {reason}")
    podman_ci, registry_ci = _tests()
    env = podman_ci.configure()
    podman_ci.ensure_standin(env)
    if not podman_ci.has_image(podman_ci.BASE, env):
        podman_ci.build_base(env)
    values: dict[str, list[float]] = {"cold": [], "warm": [], "change": [], "whole": []}
    with tempfile.TemporaryDirectory(prefix="tfjob-bench-images-") as tmp, private_home() as home:
        root = Path(tmp)
        job_env = clean_env(TFJOB_HOME=str(home), CONTAINERS_CONF=env["CONTAINERS_CONF"],
                            CONTAINERS_STORAGE_CONF=env["CONTAINERS_STORAGE_CONF"], TFJOB_BUILD_FLAGS=shlex.join(podman_ci.BUILD_FLAGS))  # fmt: skip
        trainer = root / "census"
        subprocess.run(
            [str(BIN / "tfjob"), "init", str(trainer), "--template", "custom-container"], check=True, capture_output=True, env=job_env
        )
        task = trainer / "trainer" / "task.py"

        registry = registry_ci.start(root / "registry-0")

        def build(path: str) -> tuple[float, dict]:  # type: ignore[type-arg]
            start = time.perf_counter()
            done = subprocess.run([str(BIN / "tfjob"), "build", str(trainer), "-m", "trainer.task", "--image-repo", f"{registry.host}/{path}", "-o", "json"],
                                  capture_output=True, text=True, env=job_env, timeout=1800)  # fmt: skip
            elapsed = time.perf_counter() - start
            if done.returncode != 0:
                raise RuntimeError(f"tfjob build exited {done.returncode}: {done.stderr[-2000:]}")
            return elapsed, json.loads(done.stdout)

        try:
            for i in range(runs):
                # Cold: a trainer never built (a line of its own), a registry that holds nothing.
                registry.stop()
                registry = registry_ci.start(root / f"registry-{i + 1}")
                task.write_text(task.read_text() + f"# bench cold {time.time_ns()}\n")
                path = f"bench/census-{i}"
                cold, first = build(path)
                warm, again = build(path)
                if again["built"] or again["pushed"]:
                    raise RuntimeError(f"an unchanged trainer was built or pushed again: {again}")
                seen = len(registry.requests())
                task.write_text(task.read_text() + "# one line more\n")
                _, changed = build(path)
                layers = _manifest(registry.host, path, changed["digest"])
                sizes = {b["digest"]: b["size"] for b in [*layers["layers"], layers["config"]]}
                uploaded = {m.group(1).replace("%3A", ":") for method, p, _ in registry.requests()[seen:] if method == "PUT"
                            for m in [re.search(r"[?&]digest=(sha256(?:%3A|:)[0-9a-f]{64})", p)] if m}  # fmt: skip
                values["cold"].append(cold)
                values["warm"].append(warm)
                values["change"].append(float(sum(sizes.get(d, 0) for d in uploaded)))
                values["whole"].append(float(sum(sizes.values())))
        finally:
            registry.stop()
            listed = subprocess.run(
                ["podman", "images", "-q", "--filter", "label=dev.tfjob.build.key"], capture_output=True, text=True, env=env
            )
            podman_ci.remove_images(env, *sorted(set(listed.stdout.split())))
    return [
        Figure("images.build", SECTION, "tfjob build + push: cold (warm as baseline)", Sample("cold: build and push", values["cold"]),
               Sample("warm: unchanged, nothing built or pushed", values["warm"])),
        Figure("images.one_line_push", SECTION, "bytes pushed for a one-line change (whole image as baseline)",
               Sample("one-line change", values["change"], "B"), Sample("whole image", values["whole"], "B")),
    ]  # fmt: skip


if __name__ == "__main__":
    sys.exit(section_main(measure, __doc__))
