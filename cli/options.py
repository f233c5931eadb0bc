"""The CLI's options, defined once and named after what they set.

Every option of ``submit`` / ``render`` that describes the job is named after the
:class:`tfjob.Job` keyword it sets (``--module-name`` is ``module``, ``--display-name``
``name``, ``--context`` ``context``…), so a command hands them to ``Job`` as they come, and
``tune`` takes the same definitions (less :data:`NOT_FOR_TUNE`) instead of copying them.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import click

#: Options that set a :class:`tfjob.Job` keyword (the parameter's name is the keyword).
JOB_OPTIONS: list[Callable[[Any], Any]] = [
    click.option('--module-name', '-m', 'module', help='The trainer module to run, e.g. trainer.task.'),
    click.option('--workers', '--worker-count', 'workers', type=int, help='Number of workers (Vertex pool 1).'),
    click.option('--ps', '--parameter-server-count', 'ps', type=int, help='Number of parameter servers (pool 2); needs --workers.'),
    click.option('--evaluators', '--evaluator-count', 'evaluators', type=int, help='Number of evaluators (pool 3).'),
    click.option('--scale-tier', 'scale_tier', help="BASIC (1 x n1-standard-4), STANDARD_1 (1+4 n1-highcpu-8, 3 ps n1-standard-4), PREMIUM_1 (1+19 n1-highcpu-16, 11 ps n1-highmem-8), BASIC_GPU (1 x n1-standard-8 with one NVIDIA T4: the tier's K80 is retired), BASIC_TPU (chief + a Cloud TPU v2-8) or CUSTOM."),
    click.option('--chief/--no-chief', 'chief', default=None, help='--no-chief: no chief replica, worker 0 is the chief (Kubeflow, JobSet; --dialect kubeflow locally).'),
    click.option('--tpu-topology', 'tpu_topology', help='vertex: the TPU slice shape of TPU VM pools (e.g. 2x2 for ct5lp-hightpu-4t; default: one host).'),
    click.option('--chief-machine-type', '--master-machine-type', 'chief_machine_type', help='Machine of the chief (Compute Engine type or legacy name).'),
    click.option('--worker-machine-type', 'worker_machine_type', help='Machine of each worker.'),
    click.option('--ps-machine-type', '--parameter-server-machine-type', 'ps_machine_type', help='Machine of each parameter server.'),
    click.option('--evaluator-machine-type', 'evaluator_machine_type', help='Machine of each evaluator.'),
    click.option('--accelerator', 'accelerator', help='type=NVIDIA_TESLA_T4,count=1 for the chief, workers and evaluators.'),
    click.option('--chief-accelerator', '--master-accelerator', 'chief_accelerator', help='Accelerator of the chief only.'),
    click.option('--worker-accelerator', 'worker_accelerator', help='Accelerator of the workers only.'),
    click.option('--ps-accelerator', '--parameter-server-accelerator', 'ps_accelerator', help='Accelerator of the parameter servers.'),
    click.option('--evaluator-accelerator', 'evaluator_accelerator', help='Accelerator of the evaluators only.'),
    click.option('--image', '--image-uri', 'image', help='Container image every task runs (custom container).'),
    click.option('--chief-image', '--master-image-uri', 'chief_image', help='Container image of the chief only.'),
    click.option('--worker-image', '--worker-image-uri', 'worker_image', help='Container image of the workers only.'),
    click.option('--ps-image', '--parameter-server-image-uri', 'ps_image', help='Container image of the parameter servers.'),
    click.option('--evaluator-image', '--evaluator-image-uri', 'evaluator_image', help='Container image of the evaluators.'),
    click.option('--script', 'script', help="The trainer's Python file, run as `python PATH` (instead of --module-name), e.g. dist_mnist.py."),
    click.option('--packages', 'packages', multiple=True, help='Extra built tarballs or wheels to install (repeat, or comma-separate).'),
    click.option('--job-dir', 'job_dir', help='Where the trainer writes; passed to it as --job-dir.'),
    click.option('--config', 'config', help='A gcloud trainingInput or Vertex CustomJobSpec YAML/JSON file; flags override it.'),
    click.option('--backend', 'backend', help='local, vertex, kubeflow (a TFJob), jobset or trainjob (default: local unless a cloud project is configured); ai-platform renders the legacy AI Platform Training request (render / --dry-run only).'),
    click.option('--project', 'project', help='Google Cloud project (else GOOGLE_CLOUD_PROJECT / config).'),
    click.option('--region', 'region', help='Google Cloud region, e.g. us-central1.'),
    click.option('--staging-bucket', 'staging_bucket', help='gs://BUCKET for the trainer package.'),
    click.option('--api-endpoint', 'api_endpoint', help='Vertex AI endpoint (default {region}-aiplatform.googleapis.com).'),
    click.option('--executor-image', 'executor_image', help='Vertex prebuilt training image for a Python package.'),
    click.option('--display-name', '--name', 'name', help="The job's name (default: MODULE-DATE-TIME)."),
    click.option('--labels', 'labels', multiple=True, help='key=value[,key=value] labels for the job.'),
    click.option('--env', 'env', multiple=True, help='KEY=VALUE set in every task (repeat).'),
    click.option('--service-account', 'service_account', help='Service account the tasks run as.'),
    click.option('--network', 'network', help='VPC network to peer with (projects/N/global/networks/NAME).'),
    click.option('--timeout', 'timeout', help='Maximum running time: seconds, or 2h, 30m, 1h30m.'),
    click.option('--restart-job-on-worker-restart/--no-restart-job-on-worker-restart', 'restart_job_on_worker_restart', default=None, help='Restart all tasks when a worker restarts.'),
    click.option('--enable-web-access/--no-enable-web-access', 'enable_web_access', default=None, help='Vertex interactive shell into the tasks.'),
    click.option('--tensorboard', 'tensorboard', help='Vertex TensorBoard resource to stream to.'),
    click.option('--experiment', 'experiment', help='Vertex AI Experiment to log the job to (a name, or its context resource name).'),
    click.option('--experiment-run', 'experiment_run', help='Run of --experiment the job is (a name, or its context resource name).'),
    click.option('--command', 'command', multiple=True, help="Replace an --image's entrypoint (gcloud spelling: comma-separated, or repeat); not with --module-name."),
    click.option('--requirements', 'requirements', help="A bare trainer's dependencies (default: its requirements.txt): declared in the package, checked locally."),
    click.option('--spot', 'spot', is_flag=True, default=None, help='vertex: run on Spot VMs (scheduling strategy SPOT): cheaper, may be preempted.'),
    click.option('--flex-start', 'flex_start', is_flag=True, default=None, help='vertex: Flex-start (Dynamic Workload Scheduler): wait for scarce GPUs/TPUs to be provisioned together.'),
    click.option('--max-wait', 'max_wait', help='vertex: how long a --flex-start job waits for its machines (2h, 30m, seconds).'),
    click.option('--disable-retries', 'disable_retries', is_flag=True, default=None, help='vertex: fail at the first error instead of retrying the job on platform errors.'),
    click.option('--reservation', 'reservation', help='vertex: run on reserved machines: any, none, or projects/P/zones/Z/reservations/NAME.'),
    click.option('--persistent-resource', '--persistent-resource-id', 'persistent_resource_id', help="vertex: run on this persistent resource's machines (its id)."),
    click.option('--boot-disk-type', 'boot_disk_type', help="vertex: every pool's boot disk: pd-ssd, pd-standard or hyperdisk-balanced."),
    click.option('--boot-disk-size', 'boot_disk_size', type=int, help="vertex: every pool's boot disk size in GB (100-64000; default 100)."),
    click.option('--kms-key', 'kms_key', help='vertex: encrypt the job with this Cloud KMS key (projects/P/locations/REGION/keyRings/R/cryptoKeys/K).'),
    click.option('--reserved-ip-range', 'reserved_ip_ranges', multiple=True, help='vertex: a reserved IP range of the --network to place the job in (repeat).'),
    click.option('--network-attachment', 'network_attachment', help='vertex: Private Service Connect interface: projects/P/regions/R/networkAttachments/NAME.'),
    click.option('--enable-dashboard-access', 'enable_dashboard_access', is_flag=True, default=None, help='vertex: let the training dashboard reach the tasks.'),
    click.option('--runtime-version', 'runtime_version', help='Legacy AI Platform runtime version.'),
    click.option('--python-version', 'python_version', help='Legacy AI Platform Python version.'),
    click.option('--use-chief/--use-master', '--use-chief-in-tf-config/--no-use-chief-in-tf-config', 'use_chief', default=None, help='Name the primary task chief or master in the legacy TF_CONFIG.'),
    click.option('--dialect', 'dialect', help='local: TF_CONFIG/CLUSTER_SPEC dialect, vertex (default), ai-platform or kubeflow.'),
    click.option('--container-engine', 'container_engine', help='podman or docker (default: whichever is installed, podman first): builds --build images, runs --image tasks locally.'),
    click.option('--build', 'build', is_flag=True, default=None, help="Build PACKAGE_PATH into an image (its sdist and requirements.txt on the base image, or its own Dockerfile), tagged by content, and run that image."),
    click.option('--image-repo', 'image_repo', help='With --build: REGISTRY/PATH to push the image to; the job runs REPO@sha256:DIGEST (pushed only when the registry lacks it).'),
    click.option('--base', 'base_image', help="With --build: the image to build on (default tfjob's base image, tfjob:VERSION)."),
    click.option('--cloud-build', 'cloud_build', is_flag=True, default=None, help='With --build: build with Cloud Build in --project (the context staged to --staging-bucket), no engine needed here.'),
    click.option('--python', 'python', help='local: the Python interpreter the tasks run (default: this one).'),
    click.option('--include-secrets', 'include_secrets', is_flag=True, default=None, help='Package files that look like credentials too (each is still named in a warning).'),
    click.option('--install/--no-install', 'install', default=None, help='local: pip-install the built sdist in a throw-away venv, as the cloud does.'),
    click.option('--strategy', 'strategy', help='module (default: every task runs the trainer, as the platforms do), parameter-server (the bootstrap serves ps and workers for a chief-only trainer), auto or multi-worker.'),
    click.option('--tf-config', 'tf_config', help='platform (default: TF_CONFIG/CLUSTER_SPEC as the platform writes them) or tf2 (rewritten for TensorFlow 2 strategies: master -> chief, evaluators out).'),
    click.option('--grace', 'grace', type=float, help='local: seconds between SIGTERM and SIGKILL at teardown (default 5).'),
    click.option('--quiet', '-q', 'quiet', is_flag=True, default=None, help='local: show only the summary, not the task logs.'),
    click.option('--detach', '-d', 'detach', is_flag=True, default=None, help='local: run in the background and print the job id at once.'),
    click.option('--namespace', 'namespace', help='kubeflow: the Kubernetes namespace.'),
    click.option('--kubeconfig', 'kubeconfig', help='kubeflow: the kubeconfig file (default: $KUBECONFIG, ~/.kube/config).'),
    click.option('--context', 'context', help='kubeflow: the kubeconfig context.'),
    click.option('--restart-policy', 'restart_policy', multiple=True, help="local, kubeflow, jobset, vertex: Never, OnFailure, ExitCode or Always (default: the platform's, see README Preemption); ROLE=POLICY for one role (repeat)."),
    click.option('--max-restarts', 'max_restarts', type=int, help='local: start the whole job again, up to N times, when it failed from a lost task (a preemption, a signal); vertex: submit it again when it ended preempted or with a retryable platform error.'),
    click.option('--restart-delay', 'restart_delay', help="local: the pause before a task's first restart (1s), doubled for each further one."),
    click.option('--preempt', 'preempt', multiple=True, help='local: rehearse a preemption: TASK@TIME (worker-1@30s) or random@MEAN (random:worker@2m) (repeat).'),
    click.option('--preempt-grace', 'preempt_grace', help="local: seconds between a preemption's SIGTERM and SIGKILL (default 30s, as Spot VMs and Kubernetes)."),
    click.option('--preempt-seed', 'preempt_seed', type=int, help='local: seed of --preempt random@… (the same seed, the same preemptions).'),
    click.option('--cpu', 'cpu', multiple=True, help="kubeflow: CPUs of every pod (2, 500m), or ROLE=CPUS (repeat); replaces the machine type's."),
    click.option('--memory', 'memory', multiple=True, help='kubeflow: memory of every pod (8Gi), or ROLE=MEMORY (repeat).'),
    click.option('--gpu', 'gpu', multiple=True, help='kubeflow: nvidia.com/gpu of every pod, or ROLE=COUNT (repeat).'),
    click.option('--pod-template', 'pod_template', help='kubeflow: YAML pod template (or role: template) merged into every replica: nodeSelector, tolerations, volumes, sidecars, labels…'),
    click.option('--clean-pod-policy', 'clean_pod_policy', help='kubeflow: Running (default), All or None.'),
    click.option('--backoff-limit', 'backoff_limit', type=int, help='local, kubeflow, jobset: task restarts before the job fails (default 3).'),
    click.option('--ttl', 'ttl_seconds_after_finished', type=int, help='kubeflow: seconds a finished TFJob is kept (default a week).'),
    click.option('--suspend', 'suspend', is_flag=True, default=None, help='kubeflow: create the job suspended (a queue admits it later).'),
    click.option('--queue', 'queue', help='kubeflow: Kueue LocalQueue / scheduler queue (label and schedulingPolicy.queue).'),
    click.option('--priority-class', 'priority_class', help="kubeflow: PriorityClass of the job's pods."),
    click.option('--min-available', 'min_available', type=int, help='kubeflow: gang scheduling: tasks that must start together.'),
    click.option('--stream-logs', 'stream_logs', is_flag=True, default=None, help="vertex: print the job's log lines while waiting, as `tfjob logs --follow` does (local tasks always stream)."),
    click.option('--cancel-on-interrupt', 'cancel_on_interrupt', is_flag=True, default=None, help='Cancel a cloud job when waiting is interrupted by Ctrl-C.'),
]

#: ``submit`` / ``render`` options the command reads itself.
SUBMIT_OPTIONS: list[Callable[[Any], Any]] = [
    click.option('--package-path', 'package_path_opt', help='Same as PACKAGE_PATH (gcloud spelling).'),
    click.option('--worker-pool-spec', 'worker_pool_spec', multiple=True, help="gcloud's pool syntax, once per pool in order (chief, workers, ps, evaluators): machine-type=…,replica-count=…,accelerator-type=…,container-image-uri=…,python-module=…,local-package-path=…; '' leaves a pool unused."),
    click.option('--python-package-uris', 'python_package_uris', multiple=True, help='gs:// trainer package then extra packages, already built and staged (gcloud spelling; repeat or comma-separate).'),
    click.option('--async', 'run_async', is_flag=True, default=False, help='Return the job id once submitted; do not wait for the end.'),
    click.option('--dry-run', 'dry_run', is_flag=True, default=False, help='Print the request the backend would send, and exit.'),
    click.option('--output', '-o', 'output', default='json', help='Format of --dry-run: json or yaml.'),
]

#: Job keywords that mean nothing to a study (``tfjob tune``).
NOT_FOR_TUNE = frozenset({
    "detach", "backend", "namespace", "kubeconfig", "context", "restart_policy", "cpu", "memory", "gpu", "pod_template",
    "clean_pod_policy", "backoff_limit", "ttl_seconds_after_finished", "suspend", "queue", "priority_class", "min_available",
    "stream_logs", "command", "build", "image_repo", "base_image", "max_restarts", "restart_delay", "preempt", "preempt_grace",
    "preempt_seed",
})  # fmt: skip


def keyword_of(decorator: Callable[[Any], Any]) -> str:
    """The parameter name (the Job keyword) an option decorator declares."""

    def probe() -> None:
        pass

    decorator(probe)
    return probe.__click_params__.pop().name  # type: ignore[attr-defined]


def apply(options: Iterable[Callable[[Any], Any]], exclude: frozenset[str] = frozenset()) -> Callable[[Any], Any]:
    """A decorator adding ``options`` (less the ``exclude`` keywords) in their order in ``--help``."""
    chosen = [o for o in options if not exclude or keyword_of(o) not in exclude]

    def decorate(f: Any) -> Any:
        for option in reversed(chosen):
            f = option(f)
        return f

    return decorate
