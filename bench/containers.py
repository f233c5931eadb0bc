"""The container path (issue 12): image builds, and a 1+2+1 job as containers beside processes.

Opt-in (``--only containers``): it needs rootful podman and builds images. The engine is
set up as the container tests set it up (``tests/podman_ci.py``: runc, cgroupfs, storage
in ``~/.cache/tfjob-ci``, a local stand-in for ``tensorflow/tensorflow:2.18.0``).
Interleaved in each round, so machine load hits all alike:

* ``base build``: ``podman build --no-cache`` of ``container/Dockerfile`` (tfjob's wheel
  stage, then tf-keras and the wheel on the stand-in), against installing tf-keras by
  hand in a container of the stand-in (``pip install --no-deps``): what the base adds
  to the TensorFlow image it starts from. At most 2 runs: each takes about a minute.
* ``trainer build``: ``podman build --no-cache`` of a trainer image ``FROM`` the base
  (``COPY`` of the trainer, as the ``custom-container`` template does), against a
  one-step build ``FROM`` the same base (``RUN true``): the engine's own cost.
* ``start-up``: ``tfjob submit --image IMG`` of a 1 chief + 2 workers + 1 ps job, from
  the command's start to the chief's first log line, against the same job as processes.
* ``teardown``: from that line (the chief ends right after it) to the command's exit with
  the 3 other tasks still running — stopped, and every container removed (checked after
  each run: none may be left) — against the same for processes.

    .venv/bin/python bench/containers.py [--runs 5] [--quick] [--json FILE]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import BIN, ROOT, Figure, Sample, clean_env, command, private_home, section_main

SECTION = "containers"
IMAGE = "localhost/tfjob-bench:1"
_TASK = """\
import json, os, time
task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task", {})
print("bench: up as", task.get("type"), flush=True)
if task.get("type") != "chief":
    time.sleep(3600)  # workers and ps never end on their own: the launcher stops them
"""


def _podman_ci():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "tests"))
    import podman_ci

    return podman_ci


def unavailable() -> str | None:
    """Why the section cannot run here (None when it can)."""
    podman_ci = _podman_ci()
    missing = podman_ci.missing_tools()
    if missing:
        return f"needs {', '.join(missing)} (apt-get install {' '.join(podman_ci.PACKAGES)})"
    if os.geteuid() != 0:
        return "needs rootful podman (run as root, as CI does)"
    return None


def _job(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(seconds to the chief's first line, seconds from it to the command's exit)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    first = None
    tail: list[str] = []
    for line in proc.stderr:
        tail = [*tail[-40:], line]
        if first is None and line.startswith("[chief-0]") and "bench: up as chief" in line:
            first = time.perf_counter()
    code = proc.wait()
    end = time.perf_counter()
    if code != 0 or first is None:
        raise RuntimeError(f"{' '.join(argv)} exited {code} (first line seen: {first is not None}):\n{''.join(tail)}")
    return first - start, end - first


def measure(runs: int, quick: bool = False) -> list[Figure]:
    """Image builds and the container job's start-up and teardown, each against its baseline."""
    reason = unavailable()
    if reason is not None:
        raise RuntimeError(f"the containers section {reason}")
    podman_ci = _podman_ci()
    env = podman_ci.configure()
    podman_ci.ensure_standin(env)
    warmup = 0 if quick else 1
    flags = podman_ci.BUILD_FLAGS
    with tempfile.TemporaryDirectory(prefix="tfjob-bench-containers-") as tmp, private_home() as home:
        root = Path(tmp)
        trainer = root / "trainer"
        (trainer / "benchpkg").mkdir(parents=True)
        (trainer / "benchpkg" / "__init__.py").write_text("")
        (trainer / "benchpkg" / "task.py").write_text(_TASK)
        (trainer / "Containerfile").write_text(f"FROM {podman_ci.BASE}\nCOPY --chown=1000:1000 benchpkg/ /trainer/benchpkg/\n")
        (root / "one-step").mkdir()
        (root / "one-step" / "Containerfile").write_text(f"FROM {podman_ci.BASE}\nRUN true\n")
        podman = ["podman", "build", *flags, "--no-cache", "-q"]
        by_hand = ["podman", "run", "--rm", *flags, "--entrypoint", "python", podman_ci.STANDIN,
                   "-m", "pip", "install", "-q", "--no-cache-dir", "--no-deps", "--user", "tf-keras==2.18.*"]  # fmt: skip
        base = command([*podman, "-f", "container/Dockerfile", "-t", podman_ci.BASE, "."], env=env, cwd=ROOT)
        hand = command(by_hand, env=env)
        build = command([*podman, "-t", IMAGE, str(trainer)], env=env)
        one_step = command([*podman, "-t", "localhost/tfjob-bench-one-step:1", str(root / "one-step")], env=env)

        values: dict[str, list[float]] = {k: [] for k in ("base", "hand", "build", "one_step", "up_c", "up_p", "down_c", "down_p")}
        job_env = clean_env(
            TFJOB_HOME=str(home), CONTAINERS_CONF=env["CONTAINERS_CONF"], CONTAINERS_STORAGE_CONF=env["CONTAINERS_STORAGE_CONF"]
        )
        shape = ["-m", "benchpkg.task", "--workers", "2", "--ps", "1", "--backend", "local"]
        in_containers = [str(BIN / "tfjob"), "submit", "--image", IMAGE, *shape]
        as_processes = [str(BIN / "tfjob"), "submit", str(trainer), *shape]
        try:
            for i in range(warmup + runs):
                timed = {"base": base, "hand": hand} if i < warmup + min(runs, 2) else {}  # about a minute each: ≤ 2 runs
                timed.update(build=build, one_step=one_step)  # FROM the base just built
                results = {key: run() for key, run in timed.items()}
                for key, argv in (("c", in_containers), ("p", as_processes)):
                    results[f"up_{key}"], results[f"down_{key}"] = _job(argv, job_env)
                    if key == "c":
                        left = subprocess.run(["podman", "ps", "-a", "-q", "--filter", "label=tfjob.job"], env=env,
                                              capture_output=True, text=True, timeout=60).stdout.split()  # fmt: skip
                        if left:
                            raise RuntimeError(f"containers left behind by the job: {left}")
                if i >= warmup:
                    for key, value in results.items():
                        values[key].append(value)
        finally:
            podman_ci.remove_images(env, IMAGE, "localhost/tfjob-bench-one-step:1")

    def sample(key: str, name: str) -> Sample:
        return Sample(name, values[key])

    return [
        Figure("containers.base_build", SECTION, "base image build (container/Dockerfile)", sample("base", "podman build base"),
               sample("hand", "pip install tf-keras in the stand-in")),
        Figure("containers.trainer_build", SECTION, "trainer image build FROM the base", sample("build", "podman build trainer"),
               sample("one_step", "podman build FROM base, RUN true")),
        Figure("containers.startup", SECTION, "1+2+1 as containers: submit to the chief's first line", sample("up_c", "containers"),
               sample("up_p", "processes")),
        Figure("containers.teardown", SECTION, "1+2+1 as containers: chief's end to exit, 3 to stop", sample("down_c", "containers"),
               sample("down_p", "processes")),
    ]  # fmt: skip


if __name__ == "__main__":
    sys.exit(section_main(measure, __doc__))
