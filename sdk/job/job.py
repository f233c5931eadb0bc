"""What to run: :class:`Job` (the description, the backend it goes to) with ``render()``,
``submit()`` (a :class:`~tfjob.job.handle.JobHandle` at once) and ``run()`` (blocks until the end,
raises :class:`~tfjob.errors.JobFailedError` on failure). ``Job(...)`` resolves the backend
(``local`` unless a cloud project is configured).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, ParamSpec, Sequence, TypeVar

from ..backends import BACKENDS, Backend, backend_class
from ..model import Strategy, SubmitOptions, TFConfigMode
from ..errors import (
    NOTHING,
    JobTimeoutError,
    SpecError,
    UsageError,
    keyword_words,
    shown,
)
from ..description.machines import did_you_mean
from ..runtime.settings import load_settings
from ..description.request import Given
from ..description.shape import accelerators_as_resources
from ..description.spec import Accelerator, JobSpec, ScaleTier

from .keywords import (
    _SETTING_FIELDS, _check_build, _check_kinds, _chosen_backend, _refuse_nul, _typed_names, backend_options,
    check_backend_keywords, default_job_name, job_keywords, platform_values, sort_given, typed_given,
)  # fmt: skip
from .binding import _the_store, bound_backend
from .handle import FunctionHandle, JobHandle

if TYPE_CHECKING:
    from ..functions.function import RemoteFunction
    from ..images.build import BuiltImage
    from ..platforms import Platform, Replicas, StrPath
    from ..runtime.store import JobStore

_P = ParamSpec("_P")
_R = TypeVar("_R")


class Job:
    """A training job to render, submit or run.

    ``Job(package, module, *, ...)``: the trainer, then keyword-only settings. Roles are
    counts or :class:`~tfjob.platforms.Replicas`; the platform is a settings object
    (:class:`~tfjob.platforms.Local`, :class:`~tfjob.platforms.Vertex`,
    :class:`~tfjob.platforms.Kubernetes`, :class:`~tfjob.platforms.TFJob`,
    :class:`~tfjob.platforms.JobSet`, :class:`~tfjob.platforms.TrainJob`,
    :class:`~tfjob.platforms.AIPlatform`), so a misspelt or misplaced setting is an error
    a type checker sees::

        from tfjob import Job, Replicas, Vertex

        Job("trainer/", "trainer.task",
            workers=Replicas(4, machine_type="n2-standard-8", accelerator="NVIDIA_L4:1"),
            ps=2, evaluators=Replicas(1, args=["--eval-only"]),
            backend=Vertex(project="my-project", region="us-central1", spot=True)).run()

    Args:
        package (str | PathLike | None): the trainer source directory, an sdist, or a
            ``gs://`` URI of a built one.
        module (str | None): the trainer module run as ``python -m``, e.g. ``trainer.task``.
        backend (str | Platform | Backend | None): where the job runs: a settings object
            (above), a backend's name (``local``, ``vertex``, ``kubeflow``, ``jobset``,
            ``trainjob``, ``ai-platform``; its settings then come from the environment and
            ``$TFJOB_HOME/config.yaml``), or a backend object with its clients injected.
            Default: ``local``, or ``vertex`` once a cloud project is configured.
        name (str | None): the job's name (default: the module's stem and the time).
        script (str | PathLike | None): or a Python file run as ``python PATH``.
        image (str | None): the container image every role runs.
        command (Sequence[str] | None): the image's entrypoint, replaced (image jobs without a module).
        packages (Sequence[str] | None): extra built tarballs or wheels installed beside the trainer.
        requirements (str | PathLike | None): a requirements file installed with the trainer.
        chief (Replicas | bool): the chief's machine, accelerator, image, args and env;
            ``False`` leaves the chief out (worker 0 leads; Kubernetes backends only).
        workers (int | Replicas | None): the workers.
        ps (int | Replicas | None): the parameter servers.
        evaluators (int | Replicas | None): the evaluators.
        scale_tier (str | ScaleTier | None): a legacy tier (``BASIC`` … ``PREMIUM_1``,
            ``CUSTOM``) that fixes the roles.
        accelerator (str | Accelerator | None): every chief, worker and evaluator's accelerator.
        tpu_topology (str | None): a TPU VM slice's shape, e.g. ``2x2``.
        args (Sequence[str] | None): arguments every task's trainer gets.
        env (Mapping[str, str] | None): environment variables of every task.
        job_dir (str | PathLike | None): where the trainer writes (``--job-dir``).
        labels (Mapping[str, str] | None): labels of the cloud resource.
        service_account (str | None): the service account the tasks run as.
        timeout (float | None): the job's maximum running time in seconds.
        strategy (Strategy | None): what the bootstrap runs: ``module`` (default),
            ``parameter-server``, ``multi-worker`` or ``auto``; checked as the job is made.
        tf_config (TFConfigMode | None): ``platform`` (default: TF_CONFIG as the platform
            writes it) or ``tf2``; checked as the job is made.
        quiet (bool): no progress lines.
        poll_interval (float | None): first pause in seconds between status reads of a cloud job.
        cancel_on_interrupt (bool): Ctrl-C during ``run()`` cancels the job (else it keeps running).
        include_secrets (bool): package files that look like credentials too (each still warned about).
        build (bool): build the trainer directory into an image first and run that image on any backend.
        image_repo (str | None): ``REGISTRY/PATH`` a built image is pushed to (the job runs ``REPO@sha256:…``).
        base_image (str | None): the image a built image starts from (default tfjob's base image).
        container_engine (str | None): ``podman`` or ``docker`` (or a path): what builds images
            and runs image tasks locally.
        cloud_build (bool): build with Cloud Build (in the Vertex project, staged in its bucket)
            instead of an engine here.
        config (str | PathLike | None): a legacy ``trainingInput`` or Vertex ``CustomJobSpec``
            YAML/JSON file; the arguments given here override what it says.
        store (JobStore | None): the job store the job is recorded in (:class:`tfjob.runtime.store.JobStore`,
            e.g. ``JobStore(tmp / "jobs.db")``); default the user's, ``$TFJOB_HOME/jobs.db``.
            (A backend object made with ``store=`` brings its own.)

    Raises:
        SpecError: a setting that cannot run (naming the argument, its value and the fix).

    The CLI's flags and config files name a job by flat keywords (``worker_machine_type=…``,
    ``project=…``): :func:`job_from_keywords` (internal, ``tfjob._internal``) parses them.
    """

    #: The backend object given (or built for the settings' clients), else None: the registry's.
    _backend_object: Backend | None

    def __init__(
        self,
        package: StrPath | None = None,
        module: str | None = None,
        *,
        backend: str | Platform | Backend | None = None,
        name: str | None = None,
        script: StrPath | None = None,
        image: str | None = None,
        command: Sequence[str] | None = None,
        packages: Sequence[str] | None = None,
        requirements: StrPath | None = None,
        chief: Replicas | bool = True,
        workers: int | Replicas | None = None,
        ps: int | Replicas | None = None,
        evaluators: int | Replicas | None = None,
        scale_tier: str | ScaleTier | None = None,
        accelerator: str | Accelerator | None = None,
        tpu_topology: str | None = None,
        args: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        job_dir: StrPath | None = None,
        labels: Mapping[str, str] | None = None,
        service_account: str | None = None,
        timeout: float | None = None,
        strategy: Strategy | None = None,
        tf_config: TFConfigMode | None = None,
        quiet: bool = False,
        poll_interval: float | None = None,
        cancel_on_interrupt: bool = False,
        include_secrets: bool = False,
        build: bool = False,
        image_repo: str | None = None,
        base_image: str | None = None,
        container_engine: str | None = None,
        cloud_build: bool = False,
        config: StrPath | None = None,
        store: JobStore | None = None,
    ) -> None:
        given = {
            "name": name, "script": script, "image": image, "command": command, "packages": packages,
            "requirements": requirements, "scale_tier": scale_tier, "accelerator": accelerator,
            "tpu_topology": tpu_topology, "args": args, "env": env, "job_dir": job_dir, "labels": labels,
            "service_account": service_account, "timeout": timeout, "strategy": strategy, "tf_config": tf_config,
            "poll_interval": poll_interval, "image_repo": image_repo, "base_image": base_image,
            "container_engine": container_engine, "config": config,
        }  # fmt: skip
        values: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        flags = {
            "quiet": quiet,
            "cancel_on_interrupt": cancel_on_interrupt,
            "include_secrets": include_secrets,
            "build": build,
            "cloud_build": cloud_build,
        }
        for key, flag in flags.items():
            if flag is not False:
                values[key] = flag
        self._typed = _typed_names(chief, workers, ps, evaluators)
        with self._in_typed_words():
            platform, client = platform_values(backend)
            values.update(platform)
            backend_object = self._take_backend(values, store)
            _check_kinds({"package": package, "module": module, **values})
            values.update(package=package, module=module)
            self._start(typed_given(values, chief, workers, ps, evaluators), store, backend_object)
        if client:
            # The platform's clients (credentials, a Kubernetes ApiClient) go to a backend object of its own.
            self._backend_object = backend_class(self.backend_name)(**client)

    @staticmethod
    def from_function(
        fn: Callable[_P, _R],
        *,
        backend: str | Platform | Backend | None = None,
        name: str | None = None,
        image: str | None = None,
        requirements: StrPath | Sequence[str] | None = None,
        packages: Sequence[str] | None = None,
        chief: Replicas | bool = True,
        workers: int | Replicas | None = None,
        ps: int | Replicas | None = None,
        evaluators: int | Replicas | None = None,
        accelerator: str | Accelerator | None = None,
        env: Mapping[str, str] | None = None,
        job_dir: StrPath | None = None,
        labels: Mapping[str, str] | None = None,
        service_account: str | None = None,
        timeout: float | None = None,
        strategy: Strategy | None = None,
        tf_config: TFConfigMode | None = None,
        quiet: bool = False,
        poll_interval: float | None = None,
        cancel_on_interrupt: bool = True,
        include_secrets: bool = False,
        container_engine: str | None = None,
        store: JobStore | None = None,
    ) -> RemoteFunction[_P, _R]:
        """``fn`` as a distributed job: the same as ``tfjob.remote(...)(fn)`` (see
        :func:`tfjob.remote`): ``.run(*args, **kwargs)`` returns the chief's return value,
        ``.submit(...)`` a handle whose ``result()`` waits for it."""
        from ..functions.function import RemoteFunction

        settings = _function_settings(
            backend=backend, name=name, image=image, packages=packages, chief=chief, workers=workers, ps=ps,
            evaluators=evaluators, accelerator=accelerator, env=env, job_dir=job_dir, labels=labels,
            service_account=service_account, timeout=timeout, strategy=strategy, tf_config=tf_config, quiet=quiet,
            poll_interval=poll_interval, cancel_on_interrupt=cancel_on_interrupt, include_secrets=include_secrets,
            container_engine=container_engine, store=store,
        )  # fmt: skip
        return RemoteFunction(fn, settings, requirements, _FunctionJobs())

    def _take_backend(self, values: dict[str, Any], store: JobStore | None) -> Backend | None:
        """A backend object given as ``backend=`` (its clients injected): returned, with its name
        in ``values`` in its place (a store given beside one with a store of its own is refused)."""
        given_backend: Any = values.get("backend")
        if store is not None and getattr(given_backend, "has_store", False) and given_backend.store is not store:
            raise SpecError(f"store={store!r} and a backend object with a store of its own ({given_backend.store!r}): give the store once")
        if given_backend is None or isinstance(given_backend, str):
            return None
        name = getattr(given_backend, "name", None)
        if not isinstance(name, str) or name not in BACKENDS:
            raise SpecError(
                f"backend={given_backend!r} is not a backend: give its settings "
                f"(Local(...), Vertex(...), Kubernetes(...)…), a name ({', '.join(BACKENDS)}) or a backend object"
            )
        values["backend"] = name
        backend: Backend = given_backend
        return backend

    def _init_keywords(
        self, package: StrPath | None, module: str | None, kwargs: dict[str, Any], store: JobStore | None, under: Mapping[str, Any]
    ) -> None:
        """The job the flat keywords ``kwargs`` describe, over those of ``under`` (:func:`job_from_keywords`)."""
        backend_object = self._take_backend(kwargs, store)
        unknown = sorted(set(kwargs) - set(job_keywords()))
        if unknown:
            key = unknown[0]
            backend = _chosen_backend(load_settings(**{k: kwargs[k] for k in _SETTING_FIELDS if kwargs.get(k) is not None}))
            valid = job_keywords(backend) if backend in BACKENDS else job_keywords()
            raise SpecError(
                f"Job() got an unknown argument {key!r}{did_you_mean(key, valid)}; the {backend} backend takes: {', '.join(valid)}"
            )
        _check_kinds({"package": package, "module": module, **kwargs})
        given = sort_given({"package": package, "module": module, **kwargs})
        self._start(given.over(sort_given(under)) if under else given, store, backend_object)

    def _start(self, given: Given, store: JobStore | None, backend_object: Backend | None) -> None:
        #: What the job was made from, as given (before its --config file): a study whose hparams
        #: file also describes the trials' job makes it again with this over the file's.
        self._given = given
        self._given_store = store
        # The store: the one given, else the backend object's own, else the user's when first
        # needed (a render needs none: no sqlite3 on the dry-run path).
        own = backend_object.store if backend_object is not None and getattr(backend_object, "has_store", False) else None
        self._store: JobStore | None = store if store is not None else own
        self._backend_object = backend_object
        self._bound: tuple[Backend | None, Backend] | None = None
        self._build(given)

    def _build(self, given: Given) -> None:
        explicit = given.named
        if given.config is not None:
            from ..backends import knobs
            from ..config.job import load_job_config

            # The file's keys go where the flags would: its cloud-only keys are left out for
            # another backend, so the same file runs locally.
            given = given.over(sort_given(load_job_config(given.config, tuple(knobs().values()))))
        _refuse_nul(given.values())
        self.settings = load_settings(**given.settings)
        self.backend_name = _chosen_backend(self.settings)
        if self.backend_name not in BACKENDS:
            raise SpecError(
                **self.settings.subject("backend"),
                value=self.backend_name,
                problem=f"is not a backend{did_you_mean(self.backend_name, BACKENDS)}",
                fix=f"choose one of {', '.join(BACKENDS)}",
            )
        check_backend_keywords(self.backend_name, explicit)
        self.options: SubmitOptions = backend_options(self.backend_name, given, self.settings)
        request = given.request
        if request.name is None:
            script_stem = Path(str(request.script)).stem if request.script else None
            request = dataclasses.replace(request, name=default_job_name(request.module or script_stem, request.image))
        if self.backend_name == "local":
            request = dataclasses.replace(request, shape=accelerators_as_resources(request.shape))
        self.spec: JobSpec = request.spec()
        self.built_image: BuiltImage | None = None
        _check_build(self.spec, self.options, self.backend_name)

    def _over(self, file_values: Mapping[str, Any]) -> Job:
        """This job made again over ``file_values`` (the flat keywords of a file describing it,
        e.g. an hparams file's trial job): what this job was given wins; its store and backend
        object (with their clients) are kept."""
        return job_from_given(self._given.over(sort_given(file_values)), self._given_store, self._backend_object, self._typed)

    @property
    def store(self) -> JobStore:
        """The job store the job is recorded in: the one given (``store=``, or the backend
        object's own), else the user's, ``$TFJOB_HOME/jobs.db`` (chosen once, when first needed)."""
        if self._store is None:
            self._store = _the_store(None)
        return self._store

    def _unbound_backend(self) -> Backend:
        """The backend object as given or registered, with the job's settings, before it is given
        the job's store (a render needs none)."""
        base = self._backend_object
        return bound_backend(base, self.backend_name, None, self.settings)

    @property
    def backend(self) -> Backend:
        """The backend object: the one given as ``backend=``, else the registry's; recording in
        :attr:`store` unless it was given a store of its own, and filling options from the job's
        :attr:`settings` (resolved once, when the job was made) unless it was made with its own."""
        base = self._backend_object
        if self._bound is None or self._bound[0] is not base:
            self._bound = (base, bound_backend(base, self.backend_name, self.store, self.settings))
        return self._bound[1]

    def build_image(self, push: bool = True) -> BuiltImage | None:
        """With ``build=True``: build (or find) the trainer directory's image, push it to
        ``image_repo``, and make the job run it (``REPO@sha256:…``); return the
        :class:`tfjob.images.BuiltImage`. Done once: ``submit``, ``run`` and ``render`` call it."""
        if not getattr(self.options, "build", False):
            return None
        if self.built_image is not None and (self.built_image.digest or not push or not self.options.image_repo):
            return self.built_image
        import sys

        from ..images import Progress, build_image

        credentials = getattr(self._backend_object, "credentials", None)
        cloud = None
        if getattr(self.options, "cloud_build", False):
            from ..images.cloudbuild import check_target

            bucket = getattr(self.options, "staging_bucket", None) or self.settings.staging_bucket
            cloud = check_target(self.settings.project, bucket, self.settings.api_endpoint, credentials, dry_run=not push,
                                 note=lambda line: print(f"tfjob: {line}", file=sys.stderr, flush=True))  # fmt: skip
        built = build_image(
            str(self.spec.package), module=self.spec.module, base=self.options.base_image, image_repo=self.options.image_repo,
            engine=self.options.container_engine, push=push, include_secrets=self.options.include_secrets,
            requirements=self.spec.requirements, progress=Progress.auto(quiet=bool(self.options.quiet)),
            credentials=credentials, pull=push and self.backend_name == "local" and cloud is None, cloud=cloud,
        )  # fmt: skip
        if self.options.image_repo and not built.digest:
            host = self.options.image_repo.split("/")[0]
            said = (
                f"tfjob: {built.tag} is not on {host} yet; submitting pushes it"
                if push
                else f"tfjob: dry run: the request names {built.tag}, built here; {host} was not asked: a real submit "
                f"pushes it there (unless it is there already) and the job runs {self.options.image_repo}@sha256:…"
            )
            print(said, file=sys.stderr, flush=True)
        if built.build_request is not None and not push:
            import json

            print("tfjob: dry run: the Cloud Build request:\n" + json.dumps(built.build_request, indent=2), file=sys.stderr, flush=True)
        self.built_image = built
        self.spec = dataclasses.replace(self.spec, image=built.reference, package=None, requirements=None)
        return built

    @contextlib.contextmanager
    def _in_typed_words(self) -> Iterator[None]:
        """A mistake in a ``Replicas`` value named as it was given (``workers=Replicas(…,
        machine_type='x')``), not by the flat keyword it became (``worker_machine_type``)."""
        typed: dict[str, tuple[str, str]] = getattr(self, "_typed", {})
        try:
            yield
        except UsageError as e:
            if not typed:
                raise

            def spell(name: str, value: Any = NOTHING) -> str:
                if name not in typed:
                    return keyword_words(name, value)
                param, field = typed[name]
                return f"{param}=Replicas(…, {field}={'…' if value is NOTHING else shown(value)})"

            raise e.spelt(spell)

    def render(self) -> dict[str, Any]:
        """The request the backend would send (no credentials; with ``build=True`` the image
        is built, or found, first, and nothing is pushed)."""
        with self._in_typed_words():
            self.build_image(push=False)
            body: dict[str, Any] = self._unbound_backend().render(self.spec, self.options)
        return body

    def estimate(self) -> Any:
        """The job's price per hour, pool by pool, on-demand and Spot, from the price table
        (:class:`tfjob.pricing.Estimate`; an estimate: no credentials, no network). A local job
        is priced 0, and said so; a Kubernetes cluster's machines are its owner's, unpriced."""
        from ..pricing import local_estimate, unpriced

        if self.backend_name == "local":
            return local_estimate()
        backend = self._unbound_backend()
        if not hasattr(backend, "price"):
            why = (
                "the cluster's machines are priced by its owner (tfjob has no prices for them)"
                if self.backend_name in ("kubeflow", "jobset", "trainjob")
                else f"tfjob has no price table for {self.backend_name}"
            )
            return unpriced(self.backend_name, why)
        with self._in_typed_words():
            self.build_image(push=False)
            return backend.price(self.spec, self.options)

    def submit(self) -> "JobHandle":
        """Start the job and return its handle at once."""
        options = dataclasses.replace(self.options, wait=False)
        with self._in_typed_words():
            self.build_image()
            job_id = self.backend.submit(self.spec, options)
        return JobHandle(self.backend, job_id, store=self.store, settings=self.settings)

    def run(self, timeout: float | None = None) -> "JobHandle":
        """Run the job to its end, streaming progress; return the finished handle.

        With ``timeout``, on every backend: submit, wait at most ``timeout`` seconds,
        and if the job has not ended by then cancel it (nothing is left running) and
        raise :class:`JobTimeoutError`.

        Raises:
            JobFailedError: the job failed (names the failing task and its log tail).
            JobCancelledError: the job was cancelled.
            JobTimeoutError: ``timeout`` passed first; the job was cancelled.
        """
        if timeout is not None:
            from ..description.limits import check_seconds

            timeout = check_seconds(timeout, "timeout", zero=True)
            handle = self.submit()
            try:
                handle.wait(timeout)
            except JobTimeoutError:
                handle.cancel()
                try:
                    final = handle.wait(max(30.0, float(getattr(self.options, "grace", 5.0)) * 2)).state.value
                except JobTimeoutError:
                    final = "still stopping"
                raise JobTimeoutError(f"job {handle.id} did not end within {timeout:g}s, so it was cancelled ({final})") from None
            handle.result()
            self._after_success(handle)
            return handle
        with self._in_typed_words():
            self.build_image()
            job_id = self.backend.run(self.spec, self.options)
        handle = JobHandle(self.backend, job_id, store=self.store, settings=self.settings)
        handle.result()
        self._after_success(handle)
        return handle

    def _after_success(self, handle: "JobHandle") -> None:
        """What the options ask of a job that SUCCEEDED: its model registered (``register_model``),
        its final metrics logged to its Experiment run (``experiment``)."""
        name = getattr(self.options, "register_model", None)
        if name:
            from ..errors import TfjobError

            try:
                handle.register_model(name)
            except TfjobError:
                # The error says why; this says the training is not lost, and how to try again.
                print(
                    f"tfjob: job {handle.id} SUCCEEDED but its model was not registered as {name}; "
                    f"once fixed, register it from Python: tfjob.get_job({handle.id!r}).register_model({name!r})",
                    file=sys.stderr,
                )
                raise
        if getattr(self.options, "experiment", None) and hasattr(handle._backend, "log_run_metrics"):
            metrics = handle.final_metrics()
            if metrics:
                handle._backend.log_run_metrics(handle.id, metrics, self.options)
            else:
                print(
                    f"tfjob: job {handle.id} wrote no metrics JSON under its job dir: nothing logged to its experiment run", file=sys.stderr
                )


def job_from_keywords(
    package: StrPath | None = None,
    module: str | None = None,
    keywords: Mapping[str, Any] | None = None,
    *,
    store: JobStore | None = None,
    under: Mapping[str, Any] | None = None,
) -> Job:
    """A job from flat keywords, as the CLI's flags and config files name them (internal: a
    program uses the typed form, ``Job(...)``): every :class:`Job` argument, each role's
    ``<role>_machine_type`` / ``_accelerator`` / ``_image`` / ``_args`` / ``_env`` /
    ``_boot_disk_type`` / ``_boot_disk_size``, and every platform setting (``project``,
    ``namespace``, ``spot``…) with ``backend`` a name. :func:`tfjob.job.keywords.job_keywords`
    lists them; a keyword the chosen backend does not take is refused in one line. ``store``
    is the job store, as for :class:`Job`; ``under``, the keywords of a file that describes the
    job too (an hparams file's trial job), which ``keywords`` override."""
    values = dict(keywords or {})
    if package is None:
        package = values.pop("package", None)
    if module is None:
        module = values.pop("module", None)
    job = Job.__new__(Job)
    job._typed = {}
    job._init_keywords(package, module, values, store, under or {})
    return job


def job_from_given(
    given: Given, store: JobStore | None = None, backend_object: Backend | None = None, typed: Mapping[str, tuple[str, str]] | None = None
) -> Job:
    """The job ``given`` describes (sorted already: :func:`tfjob.job.keywords.sort_given`),
    recorded in ``store``, on ``backend_object`` when one is given; ``typed`` names the values
    that came as ``Replicas`` fields, for messages."""
    job = Job.__new__(Job)
    job._typed = dict(typed or {})
    with job._in_typed_words():
        job._start(given, store, backend_object)
    return job


class _FunctionJobs:
    """What :class:`tfjob.functions.function.RemoteFunction` is given to make its jobs and handles."""

    def job(self, package: str, module: str, name: str, settings: Mapping[str, Any]) -> Job:
        return Job(package, module, name=name, **settings)

    def handle(self, backend: Any, job_id: str, store: Any) -> FunctionHandle[Any]:
        return FunctionHandle(backend, job_id, store=store)

    def default_name(self, stem: str) -> str:
        return default_job_name(stem, None)


def _function_settings(**values: Any) -> dict[str, Any]:
    flags = ("quiet", "include_secrets")
    out = {k: v for k, v in values.items() if v is not None and not (k in flags and v is False)}
    if out.get("chief") is True:
        del out["chief"]
    out.setdefault("strategy", "auto")
    return out
