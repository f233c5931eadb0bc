"""What to run (:class:`Job`) and the handle of a submitted job (:class:`JobHandle`).

``Job(...)`` collects the job description and the submission options, resolves the
backend (``local`` unless a cloud project is configured) and offers ``render()``,
``submit()`` (a handle at once) and ``run()`` (blocks until the end, raises
:class:`~tfjob.errors.JobFailedError` on failure).

A handle is only ``(backend, id)``, so ``get_job(ID)`` rebuilds it in any process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterator, Mapping, ParamSpec, Sequence, TypeVar, overload

from .backends import BACKENDS, Backend, backend_class, get_backend, keyword_backends, knobs, option_annotations, options_type
from .model import JobState, JobStatus, SubmitOptions
from .errors import (
    NOTHING,
    JobCancelledError,
    JobFailedError,
    JobNotFoundError,
    JobTimeoutError,
    SpecError,
    UsageError,
    keyword_words,
    shown,
)
from .lifecycle import poll
from .machines import did_you_mean
from .settings import SETTING_NAMES, Settings, load_settings
from .spec import Accelerator, JobSpec, ScaleTier, build_spec

if TYPE_CHECKING:
    from .functions.function import RemoteFunction
    from .platforms import Platform, Replicas, StrPath
    from .results import Diagnosis, JobMetrics, JobOutputs  # (read when a job has ended: not on a submit's path)
    from .store import JobStore


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _replica_fields() -> list[str]:
    """A Replicas value's fields beside its count (tfjob.platforms is imported: one was given)."""
    from .platforms import Replicas

    return [f.name for f in dataclasses.fields(Replicas) if f.name != "count"]


class _Never:
    """A class nothing is an instance of: the settings classes before tfjob.platforms is imported."""


_BUILD_PARAMS = [p for p in inspect.signature(build_spec).parameters if p != "settings"]
_SPEC_FIELDS = [f.name for f in dataclasses.fields(JobSpec) if f.name not in ("pools", "scale_tier")]
_COMMON_OPTIONS = [f.name for f in dataclasses.fields(SubmitOptions)]
_SETTING_FIELDS = list(SETTING_NAMES)


def job_keywords(backend: str | None = None) -> list[str]:
    """Every keyword :class:`Job` accepts; with ``backend``, those that backend takes."""
    only = keyword_backends()
    common = {*_BUILD_PARAMS, *_SPEC_FIELDS, *_COMMON_OPTIONS, *_SETTING_FIELDS, "config"} - set(only)
    mine = set(only) if backend is None else {k for k, names in only.items() if backend in names}
    return sorted(common | mine)


def check_backend_keywords(backend: str, given: Any) -> None:
    """Refuse a keyword (flag, ``--config`` key) the chosen backend does not take."""
    only = keyword_backends()
    for key in sorted(given):
        allowed = only.get(key)
        if allowed is None or backend in allowed:
            continue
        names = " and ".join([", ".join(allowed[:-1]), allowed[-1]] if len(allowed) > 1 else allowed)
        raise SpecError(
            field=key,
            problem=f"is for the {names} backend{'s' if len(allowed) > 1 else ''}, not {backend}",
            fix=f"leave it out, or choose {{backend={allowed[0]}}}",
        )


def _chosen_backend(settings: Settings) -> str:
    """``--backend``, else ``vertex`` once a cloud project is configured, else ``local``."""
    return settings.backend or ("vertex" if settings.project else "local")


def default_job_name(module: str | None, image: str | None, now: float | None = None) -> str:
    """``trainer-20261122-153000``: valid on Vertex AI and as a Kubernetes name."""
    stem = (module or "").split(".")[0] or (image or "job").rsplit("/", 1)[-1].split(":")[0].split("@")[0]
    stem = re.sub(r"[^a-z0-9-]+", "-", stem.lower()).strip("-")
    if not stem or not stem[0].isalpha():
        stem = "job-" + stem if stem else "job"
    return f"{stem[:40]}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(now))}"


#: Keywords that name a file or directory: a path object is as good as its text.
_PATH_KEYWORDS = frozenset({"package", "job_dir", "requirements", "script", "config", "kubeconfig", "pod_template", "python"})


@functools.lru_cache(maxsize=1)
def _kinds() -> tuple[frozenset[str], frozenset[str]]:
    """(keywords whose value is text, keywords whose value is an accelerator), from the
    annotations of build_spec, JobSpec and every backend's options."""
    annotations: dict[str, str] = {n: str(p.annotation) for n, p in inspect.signature(build_spec).parameters.items()}
    for f in dataclasses.fields(JobSpec):
        annotations.setdefault(f.name, str(f.type))
    for name, annotation in option_annotations().items():
        annotations.setdefault(name, annotation)
    text = {k for k, a in annotations.items() if a.replace(" ", "") in ("str", "str|None")} | {"config"}
    accelerators = {k for k, a in annotations.items() if "Accelerator" in a}
    return frozenset(text), frozenset(accelerators)


def _check_kinds(values: dict[str, Any]) -> None:
    """A keyword of the wrong kind (``strategy=-1``, ``module=b"x"``) is one SpecError naming it,
    not a TypeError from deep inside."""
    from .spec import Accelerator

    text, accelerators = _kinds()
    for key, value in values.items():
        if value is None:
            continue
        if key in text and not (isinstance(value, str) or (key in _PATH_KEYWORDS and isinstance(value, Path))):
            raise SpecError(field=key, value=value, problem="must be text")
        if key in accelerators and not isinstance(value, (str, Accelerator)):
            raise SpecError(field=key, value=value, problem="must be an accelerator, such as 'type=NVIDIA_TESLA_T4,count=1'")


def _refuse_nul(values: dict[str, Any]) -> None:
    """A NUL character fits no path, argument, environment value or label: refuse it by keyword
    (the OS would raise ValueError deep inside packaging or a task's start)."""
    for key, value in values.items():
        stack, seen = [value], set()
        while stack:
            item = stack.pop()
            if id(item) in seen:
                continue  # a structure that holds itself (a YAML alias can make one) is walked once
            seen.add(id(item))
            if isinstance(item, str):
                if "\0" in item:
                    raise SpecError(
                        field=key, problem="holds a NUL character (\\x00), which no path, argument, environment value or label can carry"
                    )
            elif isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, (list, tuple, set, frozenset)):
                stack.extend(item)


def _check_build(spec: JobSpec, options: SubmitOptions, backend: str) -> None:
    """``build=True`` needs a trainer directory and no image; a cloud backend needs a registry to pull from."""
    if not options.build:
        given = {"image_repo": options.image_repo, "base_image": options.base_image, "cloud_build": options.cloud_build}
        for name, value in given.items():
            if value not in (None, False):
                raise SpecError(field=name, problem="is for an image tfjob builds", fix="add {build} (or drop it)")
        return
    if spec.image or any(p.image for p in spec.pools):
        raise SpecError(field="build", problem="makes the job's image from the trainer directory", fix="drop {image} (or drop {build})")
    package = spec.package
    if not package or package.startswith("gs://") or not Path(package).expanduser().is_dir():
        raise SpecError(
            field="build", problem=f"needs the trainer directory as the package (got {package!r}); an image is built from a directory"
        )
    if options.image_repo is not None:
        from .images.registry import parse_repository

        parse_repository(options.image_repo)
    if options.base_image is not None:
        from .spec import check_image

        check_image(options.base_image, "base_image")
    if options.cloud_build and not options.image_repo:
        raise SpecError(
            field="cloud_build",
            problem="pushes the image from Cloud Build: give {image_repo=REGISTRY/PATH} (e.g. us-central1-docker.pkg.dev/PROJECT/REPO/trainer)",
        )
    if backend not in ("local",) and not options.image_repo and not options.dry_run:
        raise SpecError(
            field="build",
            problem=f"on the {backend} backend needs {{image_repo=REGISTRY/PATH}} (e.g. us-central1-docker.pkg.dev/PROJECT/REPO/trainer): "
            "the platform pulls the image from a registry",
        )


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
        strategy (str | None): what the bootstrap runs: ``module`` (default),
            ``parameter-server``, ``multi-worker`` or ``auto``.
        tf_config (str | None): ``platform`` (default: TF_CONFIG as the platform writes it) or ``tf2``.
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
        store (JobStore | None): the job store the job is recorded in (:class:`tfjob.JobStore`,
            e.g. ``JobStore(tmp / "jobs.db")``); default the user's, ``$TFJOB_HOME/jobs.db``.
            (A backend object made with ``store=`` brings its own.)

    Raises:
        SpecError: a setting that cannot run (naming the argument, its value and the fix).

    :meth:`from_keywords` builds a job from flat keywords (``worker_machine_type=…``,
    ``project=…``), as the CLI's flags and config files name them.
    """

    #: The backend object given (or built for the settings' clients), else None: the registry's.
    _backend_object: Any

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
        strategy: str | None = None,
        tf_config: str | None = None,
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
        # The settings objects' classes, when they exist: a Replicas, a Vertex(...) can only be
        # given once tfjob.platforms was imported, so a job of plain values (the CLI's) never
        # pays for importing it (its dataclasses are a fifth of a re-submit's start).
        platforms = sys.modules.get("tfjob.platforms")
        Replicas = platforms.Replicas if platforms is not None else _Never  # noqa: N806
        Platform = platforms.Platform if platforms is not None else _Never  # noqa: N806
        for role, replicas in (("worker", workers), ("ps", ps), ("evaluator", evaluators)):
            count_key = {"worker": "workers", "ps": "ps", "evaluator": "evaluators"}[role]
            if isinstance(replicas, Replicas):
                values[count_key] = replicas.count
                values.update(replicas.keywords(role))
            elif replicas is not None:
                values[count_key] = replicas
        if isinstance(chief, Replicas):
            if chief.count != 1:
                raise SpecError(f"chief=Replicas({chief.count!r}, …): the chief runs exactly 1 replica; add the others as workers")
            values.update(chief.keywords("chief"))
        elif chief is not True:
            values["chief"] = chief
        client: dict[str, Any] = {}
        if isinstance(backend, Platform):
            values["backend"] = backend.BACKEND
            values.update(backend.keywords())
            client = {k: getattr(backend, k) for k in ("credentials", "api_client") if getattr(backend, k, None) is not None}
        elif isinstance(backend, type) and issubclass(backend, Platform):
            raise SpecError(f"backend={backend.__name__} is the class; give its settings: backend={backend.__name__}(...)")
        elif backend is not None:
            values["backend"] = backend
        #: A Replicas value's fields, by the flat keyword they become (worker_machine_type → workers, machine_type).
        self._typed = {
            f"{role}_{name}": (param, name)
            for param, role, value in (
                ("chief", "chief", chief),
                ("workers", "worker", workers),
                ("ps", "ps", ps),
                ("evaluators", "evaluator", evaluators),
            )
            if isinstance(value, Replicas)
            for name in _replica_fields()
        }
        with self._in_typed_words():
            self._init_keywords(package, module, values, store)
        if client:
            # The platform's clients (credentials, a Kubernetes ApiClient) go to a backend object of its own.
            self._backend_object = backend_class(self.backend_name)(**client)

    @classmethod
    def from_keywords(
        cls, package: StrPath | None = None, module: str | None = None, *, store: JobStore | None = None, **kwargs: Any
    ) -> "Job":
        """A job from flat keywords, as the CLI's flags and config files name them:
        every :class:`Job` argument, each role's ``<role>_machine_type`` / ``_accelerator`` /
        ``_image`` / ``_args`` / ``_env`` / ``_boot_disk_type`` / ``_boot_disk_size``, and
        every platform setting (``project=``, ``namespace=``, ``spot=``…) with
        ``backend=`` a name. :func:`job_keywords` lists them; a keyword the chosen backend
        does not take is refused in one line. ``store`` is the job store, as for :class:`Job`.
        Prefer the typed form, ``Job(...)``."""
        job = cls.__new__(cls)
        job._init_keywords(package, module, kwargs, store)
        return job

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
        strategy: str | None = None,
        tf_config: str | None = None,
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
        return remote(
            backend=backend, name=name, image=image, requirements=requirements, packages=packages, chief=chief,
            workers=workers, ps=ps, evaluators=evaluators, accelerator=accelerator, env=env, job_dir=job_dir,
            labels=labels, service_account=service_account, timeout=timeout, strategy=strategy, tf_config=tf_config,
            quiet=quiet, poll_interval=poll_interval, cancel_on_interrupt=cancel_on_interrupt,
            include_secrets=include_secrets, container_engine=container_engine, store=store,
        )(fn)  # fmt: skip

    def _init_keywords(self, package: StrPath | None, module: str | None, kwargs: dict[str, Any], store: JobStore | None = None) -> None:
        # A backend object (``VertexBackend(credentials=…)``) is used as given: its clients are injected.
        self._backend_object = None
        self._bound: tuple[Any, Any] | None = None
        given_backend: Any = kwargs.get("backend")
        if store is not None and getattr(given_backend, "has_store", False) and given_backend.store is not store:
            raise SpecError(f"store={store!r} and a backend object with a store of its own ({given_backend.store!r}): give the store once")
        # The user's store is chosen when the job first needs one (a render needs none: no
        # tfjob.store, no sqlite3 on the dry-run path).
        self._store: JobStore | None = (
            store if store is not None else (given_backend.store if getattr(given_backend, "has_store", False) else None)
        )
        if kwargs.get("backend") is not None and not isinstance(kwargs["backend"], str):
            self._backend_object = kwargs["backend"]
            name = getattr(self._backend_object, "name", None)
            if not isinstance(name, str) or name not in BACKENDS:
                raise SpecError(
                    f"backend={self._backend_object!r} is not a backend: give its settings "
                    f"(Local(...), Vertex(...), Kubernetes(...)…), a name ({', '.join(BACKENDS)}) or a backend object"
                )
            kwargs["backend"] = name
        unknown = sorted(set(kwargs) - set(job_keywords()))
        if unknown:
            key = unknown[0]
            backend = _chosen_backend(load_settings(**{k: kwargs[k] for k in _SETTING_FIELDS if kwargs.get(k) is not None}))
            valid = job_keywords(backend) if backend in BACKENDS else job_keywords()
            raise SpecError(
                f"Job() got an unknown argument {key!r}{did_you_mean(key, valid)}; the {backend} backend takes: {', '.join(valid)}"
            )
        _check_kinds({"package": package, "module": module, **kwargs})
        self._build(package, module, kwargs)

    def _build(self, package: StrPath | None, module: str | None, kwargs: dict[str, Any]) -> None:
        config = kwargs.pop("config", None)
        values: dict[str, Any] = {k: v for k, v in kwargs.items() if v is not None}
        # What the caller asked for by flag or keyword. (A --config file describes the cloud
        # job as a whole: its cloud-only keys are left out for another backend, so the same file runs locally.)
        explicit = {k for k, v in values.items() if v is not False}
        if config is not None:
            from .config import load_job_config, merge_config_values

            # The declared knobs' plain CustomJobSpec keys are read from their declarations.
            values = merge_config_values(load_job_config(config, tuple(knobs().values())), values)
        if package is not None:
            values["package"] = str(package)
        if module is not None:
            values["module"] = module
        _refuse_nul(values)

        setting_values = {k: values.pop(k) for k in _SETTING_FIELDS if k in values}
        self.settings = load_settings(**setting_values)
        self.backend_name = _chosen_backend(self.settings)
        if self.backend_name not in BACKENDS:
            raise SpecError(
                **self.settings.subject("backend"),
                value=self.backend_name,
                problem=f"is not a backend{did_you_mean(self.backend_name, BACKENDS)}",
                fix=f"choose one of {', '.join(BACKENDS)}",
            )
        options_cls = options_type(self.backend_name)
        check_backend_keywords(self.backend_name, explicit)
        option_fields = [f.name for f in dataclasses.fields(options_cls)]
        only = keyword_backends()
        option_values = {k: values.pop(k) for k in option_fields if k in values}
        for key in [k for k in values if k in only and k not in _SPEC_FIELDS and k not in _BUILD_PARAMS]:
            del values[key]  # another backend's option, from a --config file
        for name in ("project", "region", "api_endpoint", "namespace"):
            if name in option_fields:
                option_values.setdefault(name, getattr(self.settings, name))
        if "staging_bucket" in option_fields:
            # The bucket order is --staging-bucket, then the --job-dir bucket, then env/config:
            # only an explicit bucket goes in staging_bucket, the configured one is the fallback.
            option_values["staging_bucket"] = setting_values.get("staging_bucket")
            option_values["default_staging_bucket"] = self.settings.staging_bucket
        self.options: SubmitOptions = options_cls(**option_values)
        script_stem = Path(str(values["script"])).stem if values.get("script") else None
        values.setdefault("name", default_job_name(values.get("module") or script_stem, values.get("image")))
        for name in ("args", "packages"):
            if name in values:
                if not isinstance(values[name], (list, tuple)):
                    example = '["--steps", "100"]' if name == "args" else '["dist/extra-1.0.tar.gz"]'
                    raise SpecError(field=name, value=values[name], problem="must be a list of strings", fix=f"e.g. {name}={example}")
                values[name] = tuple(values[name])
        self.spec: JobSpec = build_spec(**values)
        self.built_image: Any = None
        _check_build(self.spec, self.options, self.backend_name)

    @property
    def store(self) -> JobStore:
        """The job store the job is recorded in: the one given (``store=``, or the backend
        object's own), else the user's, ``$TFJOB_HOME/jobs.db`` (chosen once, when first needed)."""
        if self._store is None:
            self._store = _the_store(None)
        return self._store

    def _unbound_backend(self) -> Any:
        """The backend object as given or registered, before it is given the job's store (a render needs none)."""
        return self._backend_object if self._backend_object is not None else get_backend(self.backend_name)

    @property
    def backend(self) -> Any:
        """The backend object: the one given as ``backend=``, else the registry's; recording in
        :attr:`store` unless it was given a store of its own."""
        base = self._backend_object
        if self._bound is None or self._bound[0] is not base:
            self._bound = (base, get_backend(self.backend_name, self.store) if base is None else bind_store(base, self.store))
        return self._bound[1]

    def build_image(self, push: bool = True) -> Any:
        """With ``build=True``: build (or find) the trainer directory's image, push it to
        ``image_repo``, and make the job run it (``REPO@sha256:…``); return the
        :class:`tfjob.images.BuiltImage`. Done once: ``submit``, ``run`` and ``render`` call it."""
        if not getattr(self.options, "build", False):
            return None
        if self.built_image is not None and (self.built_image.digest or not push or not self.options.image_repo):
            return self.built_image
        import sys

        from .images import Progress, build_image

        credentials = getattr(self._backend_object, "credentials", None)
        cloud = None
        if getattr(self.options, "cloud_build", False):
            from .images.cloudbuild import check_target

            bucket = getattr(self.options, "staging_bucket", None) or self.settings.staging_bucket
            cloud = check_target(self.settings.project, bucket, self.settings.api_endpoint, credentials)
        built = build_image(
            str(self.spec.package), module=self.spec.module, base=self.options.base_image, image_repo=self.options.image_repo,
            engine=self.options.container_engine, push=push, include_secrets=self.options.include_secrets,
            requirements=self.spec.requirements, progress=Progress.auto(quiet=bool(self.options.quiet)),
            credentials=credentials, pull=push and self.backend_name == "local" and cloud is None, cloud=cloud,
        )  # fmt: skip
        if self.options.image_repo and not built.digest:
            print(
                f"tfjob: {built.tag} is not on {self.options.image_repo.split('/')[0]} yet; submitting pushes it",
                file=sys.stderr,
                flush=True,
            )
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

    def submit(self) -> "JobHandle":
        """Start the job and return its handle at once."""
        options = dataclasses.replace(self.options, wait=False)
        with self._in_typed_words():
            self.build_image()
            job_id = self.backend.submit(self.spec, options)
        return JobHandle(self.backend, job_id, store=self.store)

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
            from .limits import check_seconds

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
        handle = JobHandle(self.backend, job_id, store=self.store)
        handle.result()
        self._after_success(handle)
        return handle

    def _after_success(self, handle: "JobHandle") -> None:
        """What the options ask of a job that SUCCEEDED: its model registered (``register_model``),
        its final metrics logged to its Experiment run (``experiment``)."""
        name = getattr(self.options, "register_model", None)
        if name:
            from .errors import TfjobError

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


class JobHandle:
    """A submitted job, known by ``(backend, id)`` alone.

    Args:
        backend: the backend's name, or the backend object itself (with its injected clients).
        id: the job's id on that backend.
        store: the job store the job is recorded in (default: the backend object's, else the
            user's, ``$TFJOB_HOME/jobs.db``).
        clock, sleep: injected for tests of :meth:`wait`.
    """

    def __init__(
        self,
        backend: Any,
        id: str,
        *,
        store: JobStore | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._backend_object = None if isinstance(backend, str) else backend
        self.backend_name: str = backend if isinstance(backend, str) else backend.name
        self.id = id
        #: The job store the job is recorded in.
        self.store: JobStore = _the_store(store, backend)
        self._bound: tuple[Any, Any] | None = None
        self._clock = clock
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"JobHandle(backend={self.backend_name!r}, id={self.id!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobHandle) and (self.backend_name, self.id) == (other.backend_name, other.id)

    def __hash__(self) -> int:
        return hash((self.backend_name, self.id))

    @property
    def _backend(self) -> Any:
        base = self._backend_object
        if self._bound is None or self._bound[0] is not base:
            self._bound = (base, get_backend(self.backend_name, self.store) if base is None else bind_store(base, self.store))
        return self._bound[1]

    def status(self) -> JobStatus:
        """The job's status as its backend sees it now."""
        status: JobStatus = self._backend.status(self.id)
        return status

    @property
    def state(self) -> JobState:
        return self.status().state

    def wait(
        self,
        timeout: float | None = None,
        poll_interval: float = 0.2,
        max_interval: float | None = None,
        on_change: Callable[[JobStatus], None] | None = None,
    ) -> JobStatus:
        """Block until the job ends; return its final status.

        Polls with a growing interval (×1.5 up to ``max_interval``; default: the
        backend's ``max_poll_interval``), as :func:`tfjob.lifecycle.poll` does everywhere.

        Raises:
            JobTimeoutError: ``timeout`` seconds passed first (the job keeps running).
        """
        if max_interval is None:
            max_interval = float(self._backend.max_poll_interval)
        if timeout is not None:
            from .limits import check_seconds

            timeout = check_seconds(timeout, "timeout", zero=True)

        def changed(status: JobStatus, state: JobState) -> None:
            if on_change is not None:
                on_change(status)

        return poll(
            self.status,
            on_change=changed,
            poll_interval=poll_interval,
            max_interval=max_interval,
            timeout=timeout,
            timeout_message=lambda status: (
                f"job {self.id} is still {status.state.value} after {timeout:g}s; "
                f"`tfjob wait {self.id}` waits again, `tfjob cancel {self.id}` stops it"
            ),
            clock=self._clock,
            sleep=self._sleep,
        )

    def result(self) -> JobStatus:
        """The final status if the job SUCCEEDED; raise otherwise.

        Raises:
            JobFailedError: the job failed or was lost.
            JobCancelledError: the job was cancelled.
            JobTimeoutError: never; the job is waited for without limit.
        """
        status = self.wait()
        if status.state is JobState.SUCCEEDED:
            return status
        if status.state is JobState.CANCELLED:
            raise JobCancelledError(f"job {self.id} was cancelled{': ' + status.message if status.message else ''}")
        tail = str(status.extra.get("log_tail", ""))
        message = status.message or "no message"
        if status.failed_task and status.failed_task not in message:
            # Which task failed, and how, when the platform's message does not say.
            code = status.extra.get("task_exit_code")
            message += f" (task {status.failed_task}" + (f" exited with code {code})" if code is not None else " failed)")
        from .diagnosis import explain

        diagnoses = self.diagnose(status)
        if diagnoses:
            message += "\n" + explain(diagnoses)
        raise JobFailedError(
            f"job {self.id} {status.state.value}: {message}",
            job_id=self.id,
            task=status.failed_task,
            exit_code_of_task=status.extra.get("task_exit_code"),
            log_tail=tail,
            diagnoses=diagnoses,
        )

    def job_dir(self) -> str | None:
        """Where the job writes its outputs: its ``--job-dir`` (Vertex AI's
        ``baseOutputDirectory``), as recorded when it was submitted; None if it has none."""
        record = _stored(self.store, self.id)
        if record is None:
            return None
        job_dir = record.spec.get("job_dir")
        return str(job_dir) if job_dir else None

    def spec(self) -> dict[str, Any] | None:
        """The job's description as recorded when it was submitted (:meth:`tfjob.JobSpec.to_dict`),
        None when the job store does not have the job."""
        record = _stored(self.store, self.id)
        return dict(record.spec) if record is not None else None

    def events(self) -> list[tuple[float, JobState, str]]:
        """The job's history as its store recorded it, oldest first: (time, state, message)."""
        return self.store.events(self.id)

    def is_study(self) -> bool:
        """Whether the job is a hyperparameter study (its trials are its tasks; see :class:`tfjob.Tuning`)."""
        record = _stored(self.store, self.id)
        return record is not None and record.extra.get("kind") == "study"

    def _storage(self) -> Any:
        """A Cloud Storage client with this backend's credentials (application default without)."""
        from .outputs import storage_client

        record = _stored(self.store, self.id)
        project = record.options.get("project") if record is not None else None
        return storage_client(project, getattr(self._backend_object, "credentials", None))

    def outputs(self) -> JobOutputs:
        """What the job wrote under its job dir: every file with its size and time and kind,
        and where the SavedModel (``model_uri``), the newest checkpoint and the TensorBoard
        logs are — a pipeline needs no knowledge of the layout.

        Local paths are walked; ``gs://`` is listed through google-cloud-storage. A path job
        dir of a Kubernetes job is inside the cluster: ``reachable`` is False and ``note``
        says how to reach it.
        """
        from .outputs import job_outputs

        job_dir = self.job_dir()
        client = self._storage() if job_dir and job_dir.startswith("gs://") else None
        return job_outputs(self.id, self.backend_name, job_dir, client=client)

    def download(self, dest: StrPath, outputs: JobOutputs | None = None) -> list[Path]:
        """Copy the job's outputs (``outputs``, default :meth:`outputs`) into ``dest``, their
        layout kept (``gs://`` with this backend's credentials); return the files written.

        Raises:
            UsageError: the job dir cannot be reached from here (a Kubernetes job's path).
        """
        from .errors import UsageError
        from .outputs import download

        found = outputs if outputs is not None else self.outputs()
        if not found.reachable:
            raise UsageError(found.note or f"job {self.id}'s outputs cannot be reached from here")
        client = self._storage() if (found.root or "").startswith("gs://") else None
        return download(found, Path(dest), client=client)

    def register_model(self, name: str, *, serving_image: str | None = None) -> dict[str, Any]:
        """Upload the job's SavedModel (:meth:`outputs`' ``model_uri``) to the Vertex AI Model
        Registry as a new version of the model ``name`` (a new model when the registry has none
        of that name), labelled with this job's id, served by the prebuilt TensorFlow prediction
        image of the TensorFlow the job trained with (``serving_image`` chooses another).

        Returns:
            ``{"model": resource name, "version_id", "parent_model" (None for a new model),
            "serving_image", "artifact_uri"}``.

        Raises:
            UsageError: the job is not a Vertex AI job, or left no SavedModel under its job dir.
            BackendError, AuthError: the registry refused or failed.
        """
        from .errors import UsageError

        registrar = getattr(self._backend, "register_model", None)
        if registrar is None:
            raise UsageError(
                problem=f"job {self.id} ran on {self.backend_name}: models are registered in the Vertex AI Model Registry",
                fix="register a vertex job's model",
            )
        state = self.status().state
        if state is not JobState.SUCCEEDED:
            raise UsageError(
                problem=f"job {self.id} is {state.value}: only the model of a job that SUCCEEDED is registered",
                fix="register the model of a job that finished training",
            )
        outputs = self.outputs()
        if not outputs.model_uri:
            where = f"under its job dir {outputs.root}" if outputs.root else "(it has no --job-dir)"
            raise UsageError(
                problem=f"job {self.id} left no SavedModel (a directory with saved_model.pb) {where}",
                fix="save the model under $AIP_MODEL_DIR (the job dir's model/) and give the job a gs:// --job-dir",
            )
        result: dict[str, Any] = registrar(self.id, name, outputs.model_uri, serving_image=serving_image)
        return result

    def final_metrics(self) -> dict[str, float]:
        """The numbers of the metrics JSON file the job wrote under its job dir (``eval/metrics.json``
        in the templates, else the shortest ``*metric*.json``); {} when there is none."""
        from .outputs import metrics_of_text, read_small_text

        outputs = self.outputs()
        files = [f.path for f in outputs.files if f.kind == "metrics" and f.path.endswith(".json")]
        if not files or not outputs.root:
            return {}
        chosen = "eval/metrics.json" if "eval/metrics.json" in files else min(files, key=len)
        uri = outputs.root.rstrip("/") + "/" + chosen
        return metrics_of_text(read_small_text(uri, self._storage() if uri.startswith("gs://") else None))

    def mirror_event_files(self, log_dir: str, dest: StrPath, seen: dict[str, int] | None = None) -> dict[str, int]:
        """Copy the TensorBoard event files under the job's ``gs://`` ``log_dir`` into ``dest``
        (those changed since ``seen``), for a TensorBoard without Cloud Storage support; return
        the sizes now seen."""
        from .metrics import mirror_event_files

        return mirror_event_files(log_dir, str(dest), self._storage(), seen)

    def report(self) -> str:
        """One self-contained HTML page about the job (``tfjob report``): its spec, a timeline of
        its tasks, its diagnosis, its metric curves (or its study's plots), its outputs and the
        last lines of a failing task; nothing in it is fetched from the network."""
        from .report import gather, render_report

        return render_report(gather(self))

    def metrics(self) -> JobMetrics:
        """The scalars the job logged for TensorBoard, per run (``train``, ``validation``…),
        read with TensorBoard's own reader (no TensorFlow import); ``.final`` holds the last
        value of each. Needs the ``tensorboard`` package (``pip install 'tfjob[tf]'``).

        For a tuning study: its objective per trial (run ``study``, tag the study's metric,
        step the trial's number), from the trials the study recorded.
        """
        from .metrics import read_metrics, study_metrics
        from .results import JobMetrics

        record = _stored(self.store, self.id)
        if record is not None and record.extra.get("kind") == "study":
            status = self.status()  # the trials as the study's backend has them now
            return study_metrics(status.id, status.extra)
        outputs = self.outputs()
        log_dir = outputs.tensorboard_uri or (outputs.root if outputs.reachable else None)
        if not outputs.reachable:
            result = JobMetrics(self.id, None)
            result.note = outputs.note
            return result
        client = self._storage() if log_dir and log_dir.startswith("gs://") else None
        return read_metrics(self.id, log_dir, client=client)

    def diagnose(self, status: JobStatus | None = None) -> list[Diagnosis]:
        """Why the job failed (or hangs) and the fix, as far as tfjob recognises it in the
        failing task's last lines, the platform's message and the tasks' ends; [] when nothing.

        The same on every backend (:func:`tfjob.diagnosis.diagnose`); where the status carries
        no log tail (Vertex AI), the failing task's last lines are read through :meth:`logs`.
        """
        from .diagnosis import diagnose

        status = status if status is not None else self.status()
        record = _stored(self.store, self.id)
        options = record.options if record is not None else {}

        def log_of(task: str) -> str:
            lines: list[str] = []
            for line in self.logs(task=task, tail=_DIAGNOSIS_LINES):
                lines.append(line)
                if len(lines) >= _DIAGNOSIS_LINES:
                    break
            return "\n".join(lines)

        return diagnose(status, dialect=options.get("dialect"), strategy=options.get("strategy"), log_of=log_of)

    def logs(self, task: str | None = None, follow: bool = False, tail: int | None = None) -> Iterator[str]:
        """The job's log lines (``[worker-1] …``), optionally of one task, following until it ends."""
        lines: Iterator[str] = self._backend.logs(self.id, task=task, follow=follow, tail=tail)
        return lines

    def preempt(self, task: str, grace: float | str | None = None) -> str:
        """Preempt one task of a running local job as a Spot VM is reclaimed: SIGTERM, the
        grace period (``grace`` seconds, else the job's ``preempt_grace``, 30 by default),
        then SIGKILL; its restart policy then acts. Returns the task's name.

        Raises:
            UsageError: the job is not a local one (the platforms preempt by themselves), has
                ended, or has no such task.
        """
        from .errors import UsageError

        preempt = getattr(self._backend, "preempt", None)
        if preempt is None:
            raise UsageError(
                f"tfjob preempt rehearses a preemption on a local job; job {self.id} runs on {self._backend.name}, "
                "whose platform preempts its Spot VMs or pods by itself"
            )
        target: str = preempt(self.id, task, grace)
        return target

    def cancel(self) -> None:
        """Ask the job to stop (returns at once; :meth:`wait` sees CANCELLED).

        The same on every backend (:meth:`tfjob.lifecycle.Lifecycle.cancel`): a job that
        has already ended is left as it ended.
        """
        self._backend.cancel(self.id)


#: Lines of a failing task read for a diagnosis where its status carries none.
_DIAGNOSIS_LINES = 80


def _stored(store: JobStore, job_id: str) -> Any:
    """The job store's record of ``job_id`` (its spec and options), or None."""
    from .errors import StoreError

    try:
        return store.get(job_id)
    except StoreError:
        return None


def _the_store(store: JobStore | None, backend: Any = None) -> JobStore:
    """The store given, else the backend object's own, else the user's (``$TFJOB_HOME/jobs.db``,
    read now, once; opened on first use)."""
    if store is not None:
        return store
    if getattr(backend, "has_store", False):
        return backend.store  # type: ignore[no-any-return]
    from .store import JobStore

    return JobStore()


def bind_store(backend: Any, store: JobStore) -> Any:
    """``backend`` recording in ``store``, unless it was given a store of its own (or takes none)."""
    with_store = getattr(backend, "with_store", None)
    if with_store is None or getattr(backend, "has_store", True):
        return backend
    return with_store(store)


#: The longest job id taken (a Kubernetes ``NAMESPACE/NAME`` is at most 63 + 1 + 253).
MAX_JOB_ID = 512


def list_jobs(
    limit: int | None = 20, backend: str | None = None, *, remote: bool = False, store: JobStore | None = None
) -> list[JobStatus]:
    """Jobs, newest first (``tfjob list``).

    Args:
        limit: at most this many (None: all).
        backend: only this backend's (a name; a misspelt one is a UsageError).
        remote: ask the backend's service instead of the job store (needs ``backend``: Vertex
            AI's configured project and region, the Kubernetes context's namespace).
        store: the job store read (default: the user's, ``$TFJOB_HOME/jobs.db``).

    From the store, each job is shown as its own backend reads its record offline (a local job
    whose launcher died is LOST); last-seen states otherwise.
    """
    from .errors import UsageError

    store = _the_store(store)
    chosen = get_backend(backend, store) if backend is not None else None  # a misspelt name is a usage error
    if remote:
        if chosen is None:
            raise UsageError("list_jobs(remote=True) needs backend= (vertex or kubeflow): which service to ask")
        listed: list[JobStatus] = chosen.list(limit=limit)
        return listed
    owners: dict[str, Any] = {}
    statuses = []
    for record in store.list(limit=limit, backend=backend):
        if record.backend not in owners:
            owners[record.backend] = get_backend(record.backend, store) if record.backend in BACKENDS else None
        owner = owners[record.backend]
        statuses.append(owner.recorded(record) if owner is not None and hasattr(owner, "recorded") else record.to_status())
    return statuses


def get_job(job_id: str, backend: Any = None, *, store: JobStore | None = None) -> JobHandle:
    """The handle of a job submitted earlier, from any process.

    The backend is looked up in the job store unless given — by name, or as a backend
    object with its clients (``get_job(ID, backend=VertexBackend(credentials=creds))``);
    an id may be a unique prefix of a stored id. A function job's handle (``tfjob.remote``)
    is a :class:`tfjob.functions.FunctionHandle`: its ``result()`` is the function's return value. ``store`` is the job store to look in
    (default: the backend object's, else the user's, ``$TFJOB_HOME/jobs.db``).
    """
    if not isinstance(job_id, str):
        raise SpecError(f"get_job: job_id={job_id!r:.60} must be text, a job's id as `tfjob list` shows it, not {type(job_id).__name__}")
    if len(job_id) > MAX_JOB_ID:
        raise SpecError(f"get_job: a job id is at most {MAX_JOB_ID} characters, not {len(job_id)} ({job_id[:40]!r}…)")
    if backend is not None and not isinstance(backend, str) and not isinstance(getattr(backend, "name", None), str):
        raise SpecError(f"get_job: backend={backend!r:.60} must be a backend's name (e.g. 'vertex') or a backend object")
    name = backend if backend is None or isinstance(backend, str) else backend.name
    store = _the_store(store, backend)
    try:
        record = store.resolve(job_id)
    except JobNotFoundError:
        if backend is None:
            raise
        return JobHandle(backend, job_id, store=store)
    if name is not None and name != record.backend:
        raise JobNotFoundError(f"job {record.id} ran on the {record.backend} backend, not {name}")
    if record.spec.get("module") == _FUNCTION_MODULE:
        # A function job: its result() is the function's return value.
        return FunctionHandle(backend if backend is not None else record.backend, record.id, store=store)
    return JobHandle(backend if backend is not None else record.backend, record.id, store=store)


# -- A Python function as a job (tfjob.remote): the API over tfjob.functions ------------------

#: The module a function job runs (tfjob.functions.function.MODULE, the package's runner).
_FUNCTION_MODULE = "tfjob_function.run"


class FunctionHandle(JobHandle, Generic[_R]):
    """The handle of a function job (:func:`remote`): a :class:`JobHandle` whose
    :meth:`result` is the function's return value. ``tfjob.get_job(ID)`` gives one for a
    function job, in any process."""

    def result(self) -> _R:  # type: ignore[override]
        """Wait for the job's end; return the chief's return value.

        Raises:
            the function's own exception (its type, with the remote traceback as its cause and
            a note naming the task), when the chief's call raised one;
            JobFailedError: another task failed, or the job failed before the call ended;
            JobCancelledError: the job was cancelled.
        """
        from .functions.result import load_outcome, raise_outcome, read_result, result_uri

        status = self.wait()
        spec = self.spec() or {}
        uri = result_uri(spec.get("args"))
        if uri is None:
            raise JobFailedError(f"job {self.id} is not a function job (it has no --result argument)", job_id=self.id)
        data = read_result(uri, self._storage)
        outcome = load_outcome(data, uri) if data is not None else None
        if outcome is not None and not outcome["ok"]:
            raise_outcome(outcome, self.id)
        if status.state is JobState.SUCCEEDED:
            if outcome is None:
                raise JobFailedError(f"job {self.id} SUCCEEDED but its chief wrote no result at {uri}", job_id=self.id)
            value: _R = outcome["value"]
            return value
        JobHandle.result(self)  # raises: FAILED, LOST, CANCELLED, with the diagnosis
        raise JobFailedError(f"job {self.id} ended {status.state.value}", job_id=self.id)  # not reached


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


@overload
def remote(fn: Callable[_P, _R], /) -> RemoteFunction[_P, _R]: ...


@overload
def remote(
    fn: None = None,
    /,
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
    strategy: str | None = None,
    tf_config: str | None = None,
    quiet: bool = False,
    poll_interval: float | None = None,
    cancel_on_interrupt: bool = True,
    include_secrets: bool = False,
    container_engine: str | None = None,
    store: JobStore | None = None,
) -> Callable[[Callable[_P, _R]], RemoteFunction[_P, _R]]: ...


def remote(
    fn: Callable[_P, _R] | None = None,
    /,
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
    strategy: str | None = None,
    tf_config: str | None = None,
    quiet: bool = False,
    poll_interval: float | None = None,
    cancel_on_interrupt: bool = True,
    include_secrets: bool = False,
    container_engine: str | None = None,
    store: JobStore | None = None,
) -> RemoteFunction[_P, _R] | Callable[[Callable[_P, _R]], RemoteFunction[_P, _R]]:
    """Make a function a distributed job: ``@tfjob.remote(workers=2, ps=1)``.

    The arguments are :class:`Job`'s (the roles, the backend and its settings, the image…),
    with these differences: ``strategy`` defaults to ``auto`` (parameter servers and workers
    serve TensorFlow when the cluster has parameter servers; otherwise the chief and every
    worker call the function, as ``multi-worker``); ``requirements`` is a requirements file or
    a list of lines (default: the distributions the function's imports come from, printed);
    ``cancel_on_interrupt`` defaults to True (Ctrl-C, a kernel interrupt, cancels the job);
    the function's return value comes back through ``job_dir`` (default: under
    ``$TFJOB_HOME/functions`` locally, the staging bucket on Vertex AI; a ``gs://`` URI on
    Kubernetes).

    The result, a :class:`tfjob.functions.function.RemoteFunction`: calling it runs the
    function here; ``.run(*args, **kwargs)`` runs it as a job and returns the chief's return
    value (or re-raises its exception, with the remote traceback); ``.submit(...)`` returns a
    :class:`FunctionHandle` at once; ``.render(...)`` is the dry run. Inside the function,
    ``tfjob.task()`` is the task (role, index, cluster) and ``tfjob.cluster_resolver()`` the
    resolver a ``tf.distribute`` strategy takes. ``docs/functions.md`` says what is pickled.
    """
    from .functions.function import RemoteFunction

    settings = _function_settings(
        backend=backend, name=name, image=image, packages=packages, chief=chief, workers=workers, ps=ps,
        evaluators=evaluators, accelerator=accelerator, env=env, job_dir=job_dir, labels=labels,
        service_account=service_account, timeout=timeout, strategy=strategy, tf_config=tf_config, quiet=quiet,
        poll_interval=poll_interval, cancel_on_interrupt=cancel_on_interrupt, include_secrets=include_secrets,
        container_engine=container_engine, store=store,
    )  # fmt: skip

    def wrap(function: Callable[_P, _R]) -> RemoteFunction[_P, _R]:
        return RemoteFunction(function, settings, requirements, _FunctionJobs())

    return wrap(fn) if fn is not None else wrap
