"""tfjob's Kubeflow Pipelines v2 component (the ``kfp`` extra: ``pip install 'tfjob[kfp]'``).

:func:`train_op` makes the step: a lightweight Python component that runs one tfjob job
on any backend (:func:`tfjob.pipelines.step.run_step`) and outputs

- ``model`` — a ``Model`` artifact whose URI is the SavedModel the job exported,
- ``metrics`` — a ``Metrics`` artifact with the job's final metrics,
- ``job_id`` and ``backend`` — strings (``tfjob status JOB_ID`` reads the job),

so the next step loads ``model.uri`` without knowing the job dir's layout. Terminating the
step (a cancelled run) cancels the job; a failed job fails the step with one line naming
the failing task. The same pipeline runs on Kubeflow Pipelines, on Vertex AI Pipelines and
locally with ``kfp.local``; the step's image needs ``tfjob[kfp]`` installed (give it as
``base_image``, or ``packages_to_install``).

Importing this module imports KFP (and only this module does).
"""

# No `from __future__ import annotations`: KFP reads the component's annotations as types.
from typing import Any, Dict, List, NamedTuple, Optional

from kfp import dsl
from kfp.dsl import Metrics, Model, Output

#: The image the step runs in when none is given: it must have tfjob[kfp] installed.
DEFAULT_BASE_IMAGE = "python:3.11-slim"


def _tfjob_train(
    model: Output[Model],
    metrics: Output[Metrics],
    module: str = "",
    package: str = "",
    image: str = "",
    backend: str = "local",
    workers: int = 0,
    ps: int = 0,
    evaluators: int = 0,
    job_dir: str = "",
    args: List[str] = [],
    options: Dict[str, Any] = {},
    timeout: float = 0.0,
    require_model: bool = True,
) -> NamedTuple("Outputs", [("job_id", str), ("backend", str)]):  # type: ignore[valid-type]  # KFP's way to name outputs
    """Run a tfjob job to its end; output its SavedModel, final metrics, id and backend.

    Args:
        module: the trainer module (``trainer.task``).
        package: the trainer: a directory, sdist or ``gs://`` URI the step can read.
        image: the trainer's image, for a job of containers.
        backend: ``local``, ``vertex``, ``kubeflow``, ``jobset``, ``trainjob``…
        workers, ps, evaluators: replica counts (0: none).
        job_dir: where the job writes its checkpoints, metrics and ``model/``.
        args: the trainer's own arguments.
        options: any other ``tfjob.Job`` keyword (project, region, staging_bucket,
            machine types, env…).
        timeout: seconds before the job is cancelled and the step fails (0: none).
        require_model: fail the step when the job exported no SavedModel.
    """
    import sys
    from collections import namedtuple

    from tfjob.errors import TfjobError
    from tfjob.pipelines.step import build_job, run_step

    try:
        job = build_job(
            module=module,
            package=package,
            image=image,
            backend=backend,
            workers=workers,
            ps=ps,
            evaluators=evaluators,
            job_dir=job_dir,
            args=args,
            options=options,
        )
        result = run_step(job, timeout=timeout or None, require_model=require_model)
    except TfjobError as e:
        # One line naming the failing task (JobFailedError) or the mistake, not a traceback.
        print(f"error: {e}", file=sys.stderr, flush=True)
        raise SystemExit(e.exit_code) from None
    if result.model_uri:
        model.uri = result.model_uri
    model.metadata.update({"framework": "tensorflow", "format": "SavedModel", "job_id": result.job_id, "backend": result.backend})
    for name, value in sorted(result.metrics.items()):
        metrics.log_metric(name, value)
    outputs = namedtuple("Outputs", ["job_id", "backend"])  # type: ignore[name-match]  # the type KFP reads (above)
    return outputs(result.job_id, result.backend)


def train_op(
    base_image: str = DEFAULT_BASE_IMAGE,
    packages_to_install: Optional[List[str]] = None,
    install_kfp_package: bool = True,
    pip_index_urls: Optional[List[str]] = None,
) -> Any:
    """The tfjob training component for a KFP v2 pipeline.

    Args:
        base_image: the step's image; it must have ``tfjob[kfp]`` (or give it in
            ``packages_to_install``) and read the trainer ``package`` (a ``gs://`` sdist,
            a directory baked into it).
        packages_to_install: pip requirements installed in the step before it runs.
        install_kfp_package: install the KFP SDK in the step (KFP's default); False when
            the image has it.
        pip_index_urls: where those packages come from.

    Returns:
        A component: call it in a ``@dsl.pipeline`` with the job's parameters
        (``module``, ``package``, ``backend``, ``workers``, ``ps``, ``job_dir``, ``args``,
        ``options``…); its task has ``.outputs["model"]``, ``["metrics"]``, ``["job_id"]``
        and ``["backend"]``.
    """
    component = dsl.component(
        _tfjob_train,
        base_image=base_image,
        packages_to_install=list(packages_to_install or []),
        install_kfp_package=install_kfp_package,
        pip_index_urls=pip_index_urls,
    )
    # KFP's executor, without its ~200 lines of executor-input JSON in the step's log
    # (tfjob.pipelines.executor; TFJOB_KFP_VERBOSE=1 shows them).
    command = component.component_spec.implementation.container.command
    shown = [part.replace(f"-m {_KFP_EXECUTOR} ", f"-m {QUIET_EXECUTOR} {_KFP_EXECUTOR} ") for part in command]
    if shown == command:
        raise RuntimeError(f"the installed KFP's component command no longer runs {_KFP_EXECUTOR}: {command[:2]}")
    component.component_spec.implementation.container.command = shown
    return component


_KFP_EXECUTOR = "kfp.dsl.executor_main"
#: The step's entry point: KFP's executor, quiet (see :mod:`tfjob.pipelines.executor`).
QUIET_EXECUTOR = "tfjob.pipelines.executor"


#: The image and module google-cloud-pipeline-components' CustomTrainingJobOp launches its
#: CustomJob with (it creates the job, waits for it and cancels it when the step is cancelled).
GCPC_LAUNCHER_IMAGE = "gcr.io/ml-pipeline/google-cloud-pipeline-components:2.22.0"
GCPC_CUSTOM_JOB_LAUNCHER = "google_cloud_pipeline_components.container.v1.custom_job.launcher"


def custom_training_job_op(args: Dict[str, Any], image: str = GCPC_LAUNCHER_IMAGE) -> Any:
    """A Vertex AI Pipelines step that runs a tfjob job as a CustomJob, for environments
    without google-cloud-pipeline-components (its 2.x needs google-cloud-aiplatform<2).

    The step is what ``CustomTrainingJobOp(**args)`` compiles to: the same launcher image
    and module, ``--type CustomJob``, the same ``--payload`` layout, and a ``gcp_resources``
    output the Vertex AI Pipelines console links to the job. Where that package is
    installed, ``CustomTrainingJobOp(**args)`` is the same step.

    Args:
        args: :func:`tfjob.pipelines.vertex.custom_training_job_args` of the job (staged).
        image: the launcher image.

    Returns:
        A component with no inputs (the job is fixed when the pipeline is defined) and
        one output, ``gcp_resources``.
    """
    from tfjob.pipelines.vertex import custom_job_payload, dumps

    payload = dumps(custom_job_payload(args))
    project = args.get("project", "{{$.pipeline_google_cloud_project_id}}")
    location = args.get("location", "{{$.pipeline_google_cloud_location}}")

    def tfjob_custom_job(gcp_resources: dsl.OutputPath(str)) -> dsl.ContainerSpec:  # type: ignore[valid-type]
        return dsl.ContainerSpec(
            image=image,
            command=["python3", "-u", "-m", GCPC_CUSTOM_JOB_LAUNCHER],
            args=[
                "--type",
                "CustomJob",
                "--payload",
                payload,
                "--project",
                project,
                "--location",
                location,
                "--gcp_resources",
                gcp_resources,
            ],
        )

    return dsl.container_component(tfjob_custom_job)
