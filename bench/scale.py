"""The pure parts at scale: a 1,000-worker + 100-ps job, in this process.

* Vertex AI: ``build_spec`` → ``render_custom_job`` → strict parse of the body into
  ``aiplatform_v1.CustomJob`` (what the client does before sending it);
* Kubeflow: ``build_spec`` → ``render_tfjob`` (which checks the operator's admission
  rules);
* ``TF_CONFIG`` of a Kubeflow task in that 1,101-task cluster → ``task_info_from_env``;
* the local plan ``tfjob render --backend local`` prints: its bytes per task at 501 tasks
  (1+400+100; a local job has at most 512) against 51 (target, issue 17: linear in tasks,
  ≤ 1.1× — each task's TF_CONFIG repeats the cluster, so writing it for every task would
  grow with the square).

Baselines of the same run: the same render for a 1+4+2 job (does the cost grow with
the workers?) and ``json.loads`` of the same ``TF_CONFIG`` (the floor of any parser).
Target (issue 8): a 1,000-worker render ≤ 50 ms.

    .venv/bin/python bench/scale.py [--runs 5] [--quick] [--json FILE]
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

from common import Figure, Target, call, rounds, section_main

SECTION = "scale"
WORKERS, PS = 1000, 100
TARGET_RENDER_S = 0.050
TARGET_LOCAL_PER_TASK = 1.1
LOCAL_WORKERS, LOCAL_PS = 400, 100
#: Pure calls take milliseconds: more rounds for a steadier median, still well inside the budget.
ROUNDS_PER_RUN = 4


def vertex_render(workers: int, ps: int) -> Callable[[], dict[str, Any]]:
    """Spec, body and strict parse of a Vertex AI CustomJob with ``workers`` and ``ps``."""
    from google.cloud import aiplatform_v1

    from tfjob.backends.vertex.render import render_custom_job
    from tfjob.description.request import build_spec

    def run() -> dict[str, Any]:
        spec = build_spec(dict(name="scale", module="trainer.task", package="trainer", workers=workers, ps=ps))
        body = render_custom_job(spec, package_uris=["gs://bucket/tfjob/packages/0123/trainer-0.0.0.tar.gz"], submission_id="0" * 32)
        aiplatform_v1.CustomJob.from_json(json.dumps(body))  # strict: an unknown field raises
        return body

    return run


def kubeflow_render(workers: int, ps: int) -> Callable[[], dict[str, Any]]:
    """Spec and validated TFJob manifest with ``workers`` and ``ps``."""
    from tfjob.backends.kubeflow.render import render_tfjob
    from tfjob.description.request import build_spec

    def run() -> dict[str, Any]:
        spec = build_spec(dict(name="scale", module="trainer.task", image="gcr.io/p/trainer:1", workers=workers, ps=ps))
        return render_tfjob(spec)

    return run


def local_render_bytes_per_task(workers: int, ps: int) -> Callable[[], float]:
    """Bytes per task of the local plan (as ``tfjob render --backend local`` prints it)."""
    from tfjob.backends.local.backend import LocalBackend
    from tfjob.backends.local.options import LocalOptions
    from tfjob.description.request import build_spec

    def run() -> float:
        spec = build_spec(dict(name="scale", module="trainer.task", package="trainer", workers=workers, ps=ps))
        return len(json.dumps(LocalBackend().render(spec, LocalOptions()), indent=2)) / len(spec.tasks())

    return run


def tf_config(workers: int, ps: int) -> str:
    """The ``TF_CONFIG`` Kubeflow gives the last worker of a chief + ``workers`` + ``ps`` cluster."""
    from tfjob.cluster import render_kubeflow_cluster, render_task_env

    cluster = render_kubeflow_cluster("scale", "default", {"chief": 1, "worker": workers, "ps": ps})
    return render_task_env(cluster, "worker", workers - 1, "kubeflow")["TF_CONFIG"]


def measure(runs: int, quick: bool = False) -> list[Figure]:
    """Renders at 1,000 workers against 4, and the TF_CONFIG parse against json.loads."""
    from tfjob.cluster import task_info_from_env

    text = tf_config(WORKERS, PS)
    info = task_info_from_env({"TF_CONFIG": text})
    if (info.role, info.index, len(info.cluster.as_dict()["worker"])) != ("worker", WORKERS - 1, WORKERS):
        raise RuntimeError(f"the 1,101-task TF_CONFIG read back as {info.role}-{info.index}")
    samples = rounds(
        {
            "vertex 1+1000+100": call(vertex_render(WORKERS, PS)),
            "vertex 1+4+2": call(vertex_render(4, 2)),
            "kubeflow 1+1000+100": call(kubeflow_render(WORKERS, PS)),
            "kubeflow 1+4+2": call(kubeflow_render(4, 2)),
            "task_info_from_env": call(lambda: task_info_from_env({"TF_CONFIG": text})),
            "json.loads": call(lambda: json.loads(text)),
        },
        runs * ROUNDS_PER_RUN,
        warmup=1,  # the first call pays the imports
    )
    size = rounds(
        {
            "local 1+400+100": local_render_bytes_per_task(LOCAL_WORKERS, LOCAL_PS),
            "local 1+40+10": local_render_bytes_per_task(LOCAL_WORKERS // 10, LOCAL_PS // 10),
        },
        1,
        warmup=0,
        units={"local 1+400+100": "B", "local 1+40+10": "B"},
    )  # a size: the same every run
    target = Target("max", TARGET_RENDER_S)
    return [
        Figure(
            "scale.vertex_render",
            SECTION,
            "Vertex render + strict parse, 1+1000+100",
            samples["vertex 1+1000+100"],
            samples["vertex 1+4+2"],
            target,
        ),
        Figure(
            "scale.kubeflow_render",
            SECTION,
            "Kubeflow render + validate, 1+1000+100",
            samples["kubeflow 1+1000+100"],
            samples["kubeflow 1+4+2"],
            target,
        ),
        Figure(
            "scale.tf_config_parse",
            SECTION,
            f"parse a 1,101-task TF_CONFIG ({len(text) // 1024} KiB)",
            samples["task_info_from_env"],
            samples["json.loads"],
        ),
        Figure(
            "scale.local_render",
            SECTION,
            "local render, bytes per task, 1+400+100",
            size["local 1+400+100"],
            size["local 1+40+10"],
            Target("ratio-max", TARGET_LOCAL_PER_TASK),
        ),  # fmt: skip
    ]


if __name__ == "__main__":
    sys.exit(section_main(measure, __doc__))
