"""``tfjob submit`` and ``tfjob render``: one job description, any backend.

The options follow gcloud's (``--master-machine-type``, ``--parameter-server-count``,
``--worker-count``, ``--package-path``, ``--master-image-uri``… are accepted as
aliases). Everything after ``--`` is passed to the trainer.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, List, Optional

import typer
from typer.core import TyperCommand

from tfjob.errors import UsageError

from .app import app

USER_ARGS = "tfjob_user_args"


class UserArgsCommand(TyperCommand):
    """Keeps everything after the first ``--`` aside for the trainer."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if "--" in args:
            i = args.index("--")
            ctx.meta[USER_ARGS] = args[i + 1 :]
            args = args[:i]
        return super().parse_args(ctx, args)


def dump(data: Any, output: str) -> str:
    """``data`` as ``json`` (indented) or ``yaml`` text."""
    if output == "yaml":
        import yaml

        return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
    return json.dumps(data, indent=2)


#: ``submit`` parameters that are not :class:`tfjob.Job` keywords (handled by the command).
_NOT_JOB_KEYWORDS = {
    "ctx", "package_path", "package_path_opt", "python_package_uris", "worker_pool_spec", "output", "run_async", "dry_run",
}  # fmt: skip
#: ``submit`` parameter names whose Job keyword differs.
_RENAMED = {
    "module_name": "module", "display_name": "name", "kube_context": "context",
    "persistent_resource": "persistent_resource_id", "reserved_ip_range": "reserved_ip_ranges", "ttl": "ttl_seconds_after_finished",
}  # fmt: skip


def job_keywords(options: dict[str, Any]) -> dict[str, Any]:
    """The command's option values → :class:`tfjob.Job` keywords, unset ones left out. Pure.

    Shared by ``submit``, ``render`` and ``tune`` so the three never drift apart.
    """
    from tfjob.spec import parse_duration, parse_key_values

    out: dict[str, Any] = {}
    for name, value in options.items():
        if value is None or name in _NOT_JOB_KEYWORDS:
            continue
        if name in ("packages", "command"):
            value = [p for item in value for p in item.split(",") if p] or None
        elif name in ("labels", "env"):
            value = parse_key_values(value, f"--{name}") or None
        elif name == "timeout":
            value = parse_duration(value)
        elif name == "max_wait":
            value = parse_duration(value, "--max-wait")
        elif name == "cancel_on_interrupt":
            value = value or None
        if value is not None:
            out[_RENAMED.get(name, name)] = value
    return out


_EXAMPLES = """\b
Examples:
  tfjob submit trainer/ --module-name trainer.task --workers 4 --ps 2 -- --train-steps 1000
  tfjob submit trainer/ -m trainer.task --scale-tier STANDARD_1 --backend vertex --dry-run
  tfjob submit --image gcr.io/p/trainer:1 --module-name trainer.task --workers 2 --backend kubeflow
  tfjob submit trainer/ -m trainer.task --config config.yaml --region us-central1
"""


def submit(
    ctx: typer.Context,
    package_path: Optional[str] = typer.Argument(
        None, metavar="[PACKAGE_PATH]", help="The trainer's source directory (a Python package, or a project holding one); with --package-path, the job's name, as gcloud takes it."
    ),
    package_path_opt: Optional[str] = typer.Option(None, "--package-path", help="Same as PACKAGE_PATH (gcloud spelling)."),
    module_name: Optional[str] = typer.Option(None, "--module-name", "-m", help="The trainer module to run, e.g. trainer.task."),
    workers: Optional[int] = typer.Option(None, "--workers", "--worker-count", help="Number of workers (Vertex pool 1)."),
    ps: Optional[int] = typer.Option(None, "--ps", "--parameter-server-count", help="Number of parameter servers (pool 2); needs --workers."),
    evaluators: Optional[int] = typer.Option(None, "--evaluators", "--evaluator-count", help="Number of evaluators (pool 3)."),
    scale_tier: Optional[str] = typer.Option(
        None,
        "--scale-tier",
        help=(
            "BASIC (1 x n1-standard-4), STANDARD_1 (1+4 n1-highcpu-8, 3 ps n1-standard-4), "
            "PREMIUM_1 (1+19 n1-highcpu-16, 11 ps n1-highmem-8), BASIC_GPU (1 x n1-standard-8 with one "
            "NVIDIA T4: the tier's K80 is retired), BASIC_TPU (chief + a Cloud TPU v2-8) or CUSTOM."
        ),
    ),
    chief: Optional[bool] = typer.Option(None, "--chief/--no-chief", help="--no-chief: no chief replica, worker 0 is the chief (Kubeflow, JobSet; --dialect kubeflow locally)."),
    tpu_topology: Optional[str] = typer.Option(None, "--tpu-topology", help="vertex: the TPU slice shape of TPU VM pools (e.g. 2x2 for ct5lp-hightpu-4t; default: one host)."),
    chief_machine_type: Optional[str] = typer.Option(None, "--chief-machine-type", "--master-machine-type", help="Machine of the chief (Compute Engine type or legacy name)."),
    worker_machine_type: Optional[str] = typer.Option(None, "--worker-machine-type", help="Machine of each worker."),
    ps_machine_type: Optional[str] = typer.Option(None, "--ps-machine-type", "--parameter-server-machine-type", help="Machine of each parameter server."),
    evaluator_machine_type: Optional[str] = typer.Option(None, "--evaluator-machine-type", help="Machine of each evaluator."),
    accelerator: Optional[str] = typer.Option(None, "--accelerator", help="type=NVIDIA_TESLA_T4,count=1 for the chief, workers and evaluators."),
    chief_accelerator: Optional[str] = typer.Option(None, "--chief-accelerator", "--master-accelerator", help="Accelerator of the chief only."),
    worker_accelerator: Optional[str] = typer.Option(None, "--worker-accelerator", help="Accelerator of the workers only."),
    ps_accelerator: Optional[str] = typer.Option(None, "--ps-accelerator", "--parameter-server-accelerator", help="Accelerator of the parameter servers."),
    evaluator_accelerator: Optional[str] = typer.Option(None, "--evaluator-accelerator", help="Accelerator of the evaluators only."),
    image: Optional[str] = typer.Option(None, "--image", "--image-uri", help="Container image every task runs (custom container)."),
    chief_image: Optional[str] = typer.Option(None, "--chief-image", "--master-image-uri", help="Container image of the chief only."),
    worker_image: Optional[str] = typer.Option(None, "--worker-image", "--worker-image-uri", help="Container image of the workers only."),
    ps_image: Optional[str] = typer.Option(None, "--ps-image", "--parameter-server-image-uri", help="Container image of the parameter servers."),
    evaluator_image: Optional[str] = typer.Option(None, "--evaluator-image", "--evaluator-image-uri", help="Container image of the evaluators."),
    script: Optional[str] = typer.Option(None, "--script", help="The trainer's Python file, run as `python PATH` (instead of --module-name), e.g. dist_mnist.py."),
    worker_pool_spec: Optional[List[str]] = typer.Option(None, "--worker-pool-spec", help="gcloud's pool syntax, once per pool in order (chief, workers, ps, evaluators): machine-type=…,replica-count=…,accelerator-type=…,container-image-uri=…,python-module=…,local-package-path=…; '' leaves a pool unused."),
    python_package_uris: Optional[List[str]] = typer.Option(None, "--python-package-uris", help="gs:// trainer package then extra packages, already built and staged (gcloud spelling; repeat or comma-separate)."),
    packages: Optional[List[str]] = typer.Option(None, "--packages", help="Extra built tarballs or wheels to install (repeat, or comma-separate)."),
    job_dir: Optional[str] = typer.Option(None, "--job-dir", help="Where the trainer writes; passed to it as --job-dir."),
    config: Optional[str] = typer.Option(None, "--config", help="A gcloud trainingInput or Vertex CustomJobSpec YAML/JSON file; flags override it."),
    backend: Optional[str] = typer.Option(None, "--backend", help=(
            "local, vertex or kubeflow (default: local unless a cloud project is configured); "
            "ai-platform renders the legacy AI Platform Training request (render / --dry-run only)."
        )),
    project: Optional[str] = typer.Option(None, "--project", help="Google Cloud project (else GOOGLE_CLOUD_PROJECT / config)."),
    region: Optional[str] = typer.Option(None, "--region", help="Google Cloud region, e.g. us-central1."),
    staging_bucket: Optional[str] = typer.Option(None, "--staging-bucket", help="gs://BUCKET for the trainer package."),
    api_endpoint: Optional[str] = typer.Option(None, "--api-endpoint", help="Vertex AI endpoint (default {region}-aiplatform.googleapis.com)."),
    executor_image: Optional[str] = typer.Option(None, "--executor-image", help="Vertex prebuilt training image for a Python package."),
    display_name: Optional[str] = typer.Option(None, "--display-name", "--name", help="The job's name (default: MODULE-DATE-TIME)."),
    labels: Optional[List[str]] = typer.Option(None, "--labels", help="key=value[,key=value] labels for the job."),
    env: Optional[List[str]] = typer.Option(None, "--env", help="KEY=VALUE set in every task (repeat)."),
    service_account: Optional[str] = typer.Option(None, "--service-account", help="Service account the tasks run as."),
    network: Optional[str] = typer.Option(None, "--network", help="VPC network to peer with (projects/N/global/networks/NAME)."),
    timeout: Optional[str] = typer.Option(None, "--timeout", help="Maximum running time: seconds, or 2h, 30m, 1h30m."),
    restart_job_on_worker_restart: Optional[bool] = typer.Option(None, "--restart-job-on-worker-restart/--no-restart-job-on-worker-restart", help="Restart all tasks when a worker restarts."),
    enable_web_access: Optional[bool] = typer.Option(None, "--enable-web-access/--no-enable-web-access", help="Vertex interactive shell into the tasks."),
    tensorboard: Optional[str] = typer.Option(None, "--tensorboard", help="Vertex TensorBoard resource to stream to."),
    command: Optional[List[str]] = typer.Option(None, "--command", help="Replace an --image's entrypoint (gcloud spelling: comma-separated, or repeat); not with --module-name."),
    requirements: Optional[str] = typer.Option(None, "--requirements", help="A bare trainer's dependencies (default: its requirements.txt): declared in the package, checked locally."),
    spot: Optional[bool] = typer.Option(None, "--spot", help="vertex: run on Spot VMs (scheduling strategy SPOT): cheaper, may be preempted."),
    flex_start: Optional[bool] = typer.Option(None, "--flex-start", help="vertex: Flex-start (Dynamic Workload Scheduler): wait for scarce GPUs/TPUs to be provisioned together."),
    max_wait: Optional[str] = typer.Option(None, "--max-wait", help="vertex: how long a --flex-start job waits for its machines (2h, 30m, seconds)."),
    disable_retries: Optional[bool] = typer.Option(None, "--disable-retries", help="vertex: fail at the first error instead of retrying the job on platform errors."),
    reservation: Optional[str] = typer.Option(None, "--reservation", help="vertex: run on reserved machines: any, none, or projects/P/zones/Z/reservations/NAME."),
    persistent_resource: Optional[str] = typer.Option(None, "--persistent-resource", "--persistent-resource-id", help="vertex: run on this persistent resource's machines (its id)."),
    boot_disk_type: Optional[str] = typer.Option(None, "--boot-disk-type", help="vertex: every pool's boot disk: pd-ssd, pd-standard or hyperdisk-balanced."),
    boot_disk_size: Optional[int] = typer.Option(None, "--boot-disk-size", help="vertex: every pool's boot disk size in GB (100-64000; default 100)."),
    kms_key: Optional[str] = typer.Option(None, "--kms-key", help="vertex: encrypt the job with this Cloud KMS key (projects/P/locations/REGION/keyRings/R/cryptoKeys/K)."),
    reserved_ip_range: Optional[List[str]] = typer.Option(None, "--reserved-ip-range", help="vertex: a reserved IP range of the --network to place the job in (repeat)."),
    network_attachment: Optional[str] = typer.Option(None, "--network-attachment", help="vertex: Private Service Connect interface: projects/P/regions/R/networkAttachments/NAME."),
    enable_dashboard_access: Optional[bool] = typer.Option(None, "--enable-dashboard-access", help="vertex: let the training dashboard reach the tasks."),
    runtime_version: Optional[str] = typer.Option(None, "--runtime-version", help="Legacy AI Platform runtime version."),
    python_version: Optional[str] = typer.Option(None, "--python-version", help="Legacy AI Platform Python version."),
    use_chief: Optional[bool] = typer.Option(None, "--use-chief/--use-master", "--use-chief-in-tf-config/--no-use-chief-in-tf-config", help="Name the primary task chief or master in the legacy TF_CONFIG."),
    dialect: Optional[str] = typer.Option(None, "--dialect", help="local: TF_CONFIG/CLUSTER_SPEC dialect, vertex (default), ai-platform or kubeflow."),
    container_engine: Optional[str] = typer.Option(None, "--container-engine", help="local: podman or docker (default: whichever is installed, podman first) for --image tasks."),
    python: Optional[str] = typer.Option(None, "--python", help="local: the Python interpreter the tasks run (default: this one)."),
    include_secrets: Optional[bool] = typer.Option(None, "--include-secrets", help="Package files that look like credentials too (each is still named in a warning)."),
    install: Optional[bool] = typer.Option(None, "--install/--no-install", help="local: pip-install the built sdist in a throw-away venv, as the cloud does."),
    strategy: Optional[str] = typer.Option(None, "--strategy", help="module (default: every task runs the trainer, as the platforms do), parameter-server (the bootstrap serves ps and workers for a chief-only trainer), auto or multi-worker."),
    tf_config: Optional[str] = typer.Option(None, "--tf-config", help="platform (default: TF_CONFIG/CLUSTER_SPEC as the platform writes them) or tf2 (rewritten for TensorFlow 2 strategies: master -> chief, evaluators out)."),
    grace: Optional[float] = typer.Option(None, "--grace", help="local: seconds between SIGTERM and SIGKILL at teardown (default 5)."),
    quiet: Optional[bool] = typer.Option(None, "--quiet", "-q", help="local: show only the summary, not the task logs."),
    detach: Optional[bool] = typer.Option(None, "--detach", "-d", help="local: run in the background and print the job id at once."),
    namespace: Optional[str] = typer.Option(None, "--namespace", help="kubeflow: the Kubernetes namespace."),
    kubeconfig: Optional[str] = typer.Option(None, "--kubeconfig", help="kubeflow: the kubeconfig file (default: $KUBECONFIG, ~/.kube/config)."),
    kube_context: Optional[str] = typer.Option(None, "--context", help="kubeflow: the kubeconfig context."),
    restart_policy: Optional[List[str]] = typer.Option(None, "--restart-policy", help="kubeflow: Never, OnFailure, ExitCode (default) or Always; ROLE=POLICY for one role (repeat)."),
    cpu: Optional[List[str]] = typer.Option(None, "--cpu", help="kubeflow: CPUs of every pod (2, 500m), or ROLE=CPUS (repeat); replaces the machine type's."),
    memory: Optional[List[str]] = typer.Option(None, "--memory", help="kubeflow: memory of every pod (8Gi), or ROLE=MEMORY (repeat)."),
    gpu: Optional[List[str]] = typer.Option(None, "--gpu", help="kubeflow: nvidia.com/gpu of every pod, or ROLE=COUNT (repeat)."),
    pod_template: Optional[str] = typer.Option(None, "--pod-template", help="kubeflow: YAML pod template (or role: template) merged into every replica: nodeSelector, tolerations, volumes, sidecars, labels…"),
    clean_pod_policy: Optional[str] = typer.Option(None, "--clean-pod-policy", help="kubeflow: Running (default), All or None."),
    backoff_limit: Optional[int] = typer.Option(None, "--backoff-limit", help="kubeflow: pod restarts before the job fails (default 3)."),
    ttl: Optional[int] = typer.Option(None, "--ttl", help="kubeflow: seconds a finished TFJob is kept (default a week)."),
    suspend: Optional[bool] = typer.Option(None, "--suspend", help="kubeflow: create the job suspended (a queue admits it later)."),
    queue: Optional[str] = typer.Option(None, "--queue", help="kubeflow: Kueue LocalQueue / scheduler queue (label and schedulingPolicy.queue)."),
    priority_class: Optional[str] = typer.Option(None, "--priority-class", help="kubeflow: PriorityClass of the job's pods."),
    min_available: Optional[int] = typer.Option(None, "--min-available", help="kubeflow: gang scheduling: tasks that must start together."),
    stream_logs: Optional[bool] = typer.Option(None, "--stream-logs", help="vertex: print the job's log lines while waiting, as `tfjob logs --follow` does (local tasks always stream)."),
    run_async: bool = typer.Option(False, "--async", help="Return the job id once submitted; do not wait for the end."),
    cancel_on_interrupt: bool = typer.Option(False, "--cancel-on-interrupt", help="Cancel a cloud job when waiting is interrupted by Ctrl-C."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the request the backend would send, and exit."),
    output: str = typer.Option("json", "--output", "-o", help="Format of --dry-run: json or yaml."),
) -> None:
    """Submit a training job (locally by default) and follow it to its end."""
    options = dict(locals())
    from tfjob.job import Job

    if output not in ("json", "yaml"):
        raise UsageError(f"--output {output!r} must be json or yaml")
    if package_path and package_path_opt and package_path != package_path_opt:
        import re

        looks_like_name = re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,127}", package_path) is not None
        if Path(package_path).exists() or display_name is not None or not looks_like_name:
            raise UsageError("give the trainer directory once: as PACKAGE_PATH or as --package-path")
        # gcloud's form: `submit JOB --package-path DIR`: the positional is the job's name.
        display_name, package_path = package_path, None
    if python_package_uris:
        uris = [u for item in python_package_uris for u in item.split(",") if u]
        if package_path or package_path_opt or packages:
            raise UsageError("--python-package-uris names the trainer package and its extras; leave out PACKAGE_PATH, --package-path and --packages")
        bad = [u for u in uris if not u.startswith("gs://")]
        if bad:
            raise UsageError(f"--python-package-uris {bad[0]!r} is not a gs:// URI; a local trainer directory is PACKAGE_PATH")
        package_path, packages = uris[0], uris[1:] or None
        options.update(packages=packages)
    if stream_logs and (run_async or detach):
        raise UsageError("--stream-logs prints the job's logs while waiting for it; drop --async/--detach (or use `tfjob logs ID --follow`)")
    rendering = ctx.info_name == "render"
    options.update(display_name=display_name)
    values = job_keywords(options)
    if worker_pool_spec:
        from tfjob.pool_flags import pool_spec_keywords

        values.update(pool_spec_keywords(worker_pool_spec, values))
        if "package" in values:
            if package_path or package_path_opt:
                raise UsageError("--worker-pool-spec local-package-path names the trainer directory; leave out PACKAGE_PATH")
            package_path = values.pop("package")
    if dry_run or rendering:
        values["dry_run"] = True
    user_args = ctx.meta.get(USER_ARGS, [])
    if user_args:
        values["args"] = user_args
    job = Job(package_path or package_path_opt, **values)
    if dry_run or rendering:
        typer.echo(dump(job.render(), output))
        return
    if job.backend_name == "local" and backend is None and job.settings.backend is None:
        job.options.notice = (
            "tfjob: no cloud project configured, so the cluster runs on this machine "
            "(--backend vertex --project P --region R runs it on Vertex AI)"
        )
    if detach or run_async:
        handle = job.submit()
    else:
        handle = job.run()
    typer.echo(handle.id)
    sys.stdout.flush()


app.command("submit", cls=UserArgsCommand, epilog=_EXAMPLES, no_args_is_help=False)(submit)
app.command(
    "render",
    cls=UserArgsCommand,
    help="Print the request a backend would send for a job (vertex, ai-platform, kubeflow), without submitting.",
)(submit)
