"""One local job from its record to its end: checks, records, launcher, summary.

Shared by the foreground run (``tfjob submit``, ``Job.run()``: the calling process
supervises the job) and the detached supervisor (``tfjob submit --detach``,
``Job.submit()``: :mod:`tfjob.backends.local.supervisor` does).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TextIO

from ...model import JobState, Strategy, SubmitOptions, render_summary
from .options import LocalOptions
from ...errors import SpecError, TfjobError, UsageError, Word
from ...description.limits import check_local_tasks
from ...description.spec import BUILT_PACKAGE_SUFFIXES, JobSpec, check_trainer
from ...runtime.store import JobRecord, JobStore, process_start_time
from .launcher import Launcher, Outcome
from .logs import LogRouter, use_colour
from ...cluster.dispatch import job_strategy
from ...description.restarts import build_rules
from .plan import WORK_DIR, check_chief, check_dialect, say_ignored_resources, find_source_root
from .ports import PortPicker, pick_ports


@dataclass(frozen=True)
class Prepared:
    """What a local job runs with, checked before anything starts."""

    spec: JobSpec
    python: str
    strategy: Strategy  # resolved: module or parameter-server
    source_root: str | None
    #: The container engine when the tasks run as containers (``--image``).
    engine: Any = None
    #: Host paths of the packages mounted into those containers and installed by the
    #: bootstrap first (PACKAGE_PATH's sdist, ``--packages``), as Kubernetes ships them.
    shipped: tuple[str, ...] = ()


#: The longest ``--grace`` between SIGTERM and SIGKILL at teardown (an hour).
MAX_GRACE = 3600.0


def _check_container_job(spec: JobSpec, options: LocalOptions, images: list[str]) -> Prepared:
    """A job whose tasks run as containers of their images (``--image``)."""
    from ...runtime.engine import find_engine

    check_local_tasks(spec.task_count)  # counted before any task is listed
    if spec.image_for("chief" if spec.has_chief else "worker") is None or any(
        p.replicas and not spec.image_for(p.role) for p in spec.pools
    ):
        raise SpecError(problem="locally, a job runs either every task as a container ({image} for every pool) or none")
    if options.install or options.python:
        raise SpecError(field="image", problem="runs the trainer inside the image", fix="leave out {install} and {python}")
    shipped: tuple[str, ...] = ()
    if spec.package or spec.packages:
        # The package runs on the image, as on Kubernetes and Vertex AI: its sdist is
        # mounted into every container and the bootstrap installs it before the trainer.
        from ...packaging import gather_packages

        paths, uris = gather_packages(
            spec.package, spec.packages, module=spec.module, requirements=spec.requirements,
            include_secrets=options.include_secrets, quiet=options.quiet,
        )  # fmt: skip
        if uris:
            raise UsageError(f"{uris[0]}: the local backend installs local files only; download it first")
        shipped = tuple(str(p) for p in paths)
    check_local_tasks(spec.task_count)
    check_dialect(options.dialect)
    check_chief(spec, options.dialect)
    say_ignored_resources(spec)
    build_rules(options, [f"{role}-{index}" for role, index in spec.tasks()])
    strategy = job_strategy(spec, options.strategy)
    if options.grace is None or not 0 <= options.grace <= MAX_GRACE:
        raise SpecError(field="grace", value=options.grace, problem=f"must be a number of seconds from 0 to {MAX_GRACE:g}")
    engine = find_engine(options.container_engine)
    missing = [image for image in images if not engine.has_image(image)]
    if missing:
        raise UsageError(f"image {missing[0]} is not in {engine.name}'s store; build or pull it first ({engine.name} images lists them)")
    changes: dict[str, Any] = {}
    if spec.job_dir and "://" not in spec.job_dir:
        changes["job_dir"] = os.path.abspath(os.path.expanduser(spec.job_dir))
        # Mounted at the same path in every task's container, writable by the image's user.
        os.makedirs(changes["job_dir"], exist_ok=True)
        if engine.name != "podman":
            os.chmod(changes["job_dir"], 0o777)  # docker has no :U to give it to that user
    if changes:
        spec = spec.replace(**changes)
    return Prepared(spec, sys.executable, strategy, None, engine, shipped)


def check_job(spec: JobSpec, options: LocalOptions) -> Prepared:
    """Check that the local backend can run ``spec``; raise a UsageError naming the fix if not.

    Relative paths (trainer directory, ``--job-dir``) are made absolute here, from
    the caller's working directory, because the tasks run elsewhere.
    """
    images = sorted({image for p in spec.pools if p.replicas and (image := spec.image_for(p.role))})
    if images:
        return _check_container_job(spec, options, images)
    if spec.module is None and spec.script is None:
        raise SpecError(field="module", problem="is required: the trainer module every task runs, e.g. trainer.task (or {script})")
    if spec.script is not None and options.install:
        raise SpecError(
            field="script", problem="runs a file of the trainer directory, which {install} does not keep", fix="use {module} with {install}"
        )
    check_local_tasks(spec.task_count)
    check_dialect(options.dialect)
    check_chief(spec, options.dialect)
    say_ignored_resources(spec)
    build_rules(options, [f"{role}-{index}" for role, index in spec.tasks()])
    strategy = job_strategy(spec, options.strategy)
    if options.grace is None or not 0 <= options.grace <= MAX_GRACE:  # NaN fails both comparisons
        raise SpecError(field="grace", value=options.grace, problem=f"must be a number of seconds from 0 to {MAX_GRACE:g}")
    python = _check_python(options)
    _check_packages(spec, options)
    package = spec.package
    changes: dict[str, Any] = {}
    if spec.job_dir and "://" not in spec.job_dir:
        changes["job_dir"] = os.path.abspath(os.path.expanduser(spec.job_dir))
    source_root = None
    if spec.script is not None:
        source_root = str(Path(package or ".").expanduser().resolve())
        script = Path(source_root, spec.script)
        if not script.is_file():
            raise SpecError(field="script", value=spec.script, problem=f"is not a file in the trainer directory {package or '.'!r}")
    elif not options.install:
        assert spec.module is not None  # (checked above: a module or a script)
        source_root = find_source_root(package, spec.module)
        from ...description.spec import module_exists

        if not module_exists(Path(source_root), spec.module):
            # The same check, and the same exit code (2), as packaging for the cloud.
            raise SpecError(
                field="module",
                value=Word(spec.module),
                problem=f": no {spec.module.replace('.', '/')}.py in {source_root}",
                fix="check the module name or add the file",
            )
        # Run in place, the trainer directory must still be what the cloud's install of its
        # sdist makes importable: the rule, and the refusal, of the Vertex and JobSet renders.
        check_trainer(Path(package or ".").expanduser().resolve(), spec.module)
    elif package and not package.endswith(BUILT_PACKAGE_SUFFIXES):
        changes["package"] = str(Path(package).expanduser().resolve())
        if not Path(changes["package"]).is_dir():
            problem = "is not a directory" if Path(changes["package"]).exists() else "does not exist"
            raise UsageError(f"trainer directory {package!r} {problem}")
    _check_requirements(spec, package, python)
    if spec.requirements is not None:
        changes["requirements"] = os.path.abspath(os.path.expanduser(spec.requirements))
    if changes:
        spec = spec.replace(**changes)
    return Prepared(spec, python, strategy, source_root)


def _check_python(options: LocalOptions) -> str:
    """The interpreter the tasks run (``--python``, else this one's), checked: executable, and
    able to import tfjob's bootstrap."""
    python = os.fspath(options.python or sys.executable)
    if os.sep not in python:
        import shutil

        python = shutil.which(python) or python
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise SpecError(
            field="python", value=options.python, problem="is not an executable interpreter", fix="give a path like /usr/bin/python3"
        )
    if options.python:
        probe = subprocess.run([python, "-c", "import tfjob.container.bootstrap"], capture_output=True)
        if probe.returncode != 0:
            raise SpecError(
                field="python",
                value=options.python,
                problem="cannot import tfjob (needed for the bootstrap in every task)",
                fix=f"install it there: {python} -m pip install --no-deps tfjob",
            )
    return python


def _check_packages(spec: JobSpec, options: LocalOptions) -> None:
    """``--packages``, and a built trainer package: local archives, run only with ``--install``."""
    for extra in spec.packages:
        if "://" in extra:
            raise SpecError(field="packages", value=extra, problem=": the local backend installs local files only", fix="download it first")
        from ...packaging import check_built_package  # here: a job without --packages never imports packaging

        check_built_package(extra)
    if spec.packages and not options.install:
        raise SpecError(
            field="packages",
            problem="are installed next to the trainer, as the cloud does",
            fix="add {install} to run the job from a throw-away venv that has them",
        )
    package = spec.package
    if package and package.endswith(BUILT_PACKAGE_SUFFIXES) and not options.install:
        raise SpecError(what="package", value=package, problem="is a built archive", fix="add {install} to run it from a throw-away venv")


def _check_requirements(spec: JobSpec, package: str | None, python: str) -> None:
    """The trainer's requirements (``--requirements``, else its requirements.txt) must be
    met by the interpreter the tasks run: locally nothing installs them (``--install``
    installs the trainer alone, offline, next to that interpreter's packages)."""
    from ...description.requirements import REQUIREMENTS_FILE, check_requirements_met, trainer_requirements

    directory = package or "."
    if directory.endswith(BUILT_PACKAGE_SUFFIXES) or not Path(directory).expanduser().is_dir():
        if spec.requirements is not None:
            raise SpecError(field="requirements", problem="needs a trainer directory to package (PACKAGE_PATH)")
        return
    root = Path(directory).expanduser()
    project = (root / "pyproject.toml").is_file() or (root / "setup.py").is_file()
    requirements = trainer_requirements(str(root), spec.requirements, project)
    source = spec.requirements or str(Path(directory) / REQUIREMENTS_FILE)
    check_requirements_met(requirements, python, source)


def create_record(spec: JobSpec, options: SubmitOptions, store: JobStore, *, supervisor_pid: int, detached: bool) -> JobRecord:
    """Add the job to the store (PENDING) with a fresh id and its log directory."""
    record = store.add_new(new_record(spec, options, supervisor_pid=supervisor_pid, detached=detached))
    open_log_dir(store, record)
    return record


def new_record(spec: JobSpec, options: SubmitOptions, *, supervisor_pid: int, detached: bool) -> JobRecord:
    """The job's first record (PENDING, no id yet: :meth:`JobStore.add_new` draws one)."""
    return JobRecord(
        id="",
        backend="local",
        name=spec.name,
        state=JobState.PENDING,
        spec=spec.to_dict(),
        options=dataclasses.asdict(options),
        supervisor_pid=supervisor_pid,
        supervisor_start=process_start_time(supervisor_pid),
        extra={"detached": detached},
    )


def open_log_dir(store: JobStore, record: JobRecord) -> None:
    """Make the recorded job's log directory and record it, with where its tasks run
    (``work_dir``: each task in its own ``work_dir/<task>``, made as it starts)."""
    log_dir = store.jobs_dir / record.id
    log_dir.mkdir(parents=True, exist_ok=True)
    extra = {**record.extra, "work_dir": str(log_dir / WORK_DIR)}
    store.update(record.id, log_dir=str(log_dir), extra=extra)
    record.log_dir = str(log_dir)
    record.extra = extra


@contextmanager
def on_stop_signals(callback: Callable[[str], None]) -> Iterator[None]:
    """Call ``callback(signal name)`` on SIGINT, SIGTERM and SIGHUP while the block runs.

    Only the main thread can set signal handlers; elsewhere (``Job.run()`` in a
    thread) a cancel comes through the store, ``tfjob cancel`` / ``handle.cancel()``.
    The previous handlers are back afterwards.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[signal.Signals, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        callback(signal.Signals(signum).name)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            previous[sig] = signal.signal(sig, handler)
        except (OSError, ValueError):
            pass
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def cancel_on_signals(launcher: Launcher) -> Any:
    """Turn SIGINT, SIGTERM and SIGHUP into a cancel of the launcher's job while it runs."""
    return on_stop_signals(launcher.request_cancel)


def run_job(
    record: JobRecord,
    store: JobStore,
    prepared: Prepared,
    *,
    console: TextIO | None,
    summary: TextIO | None,
    port_picker: PortPicker = pick_ports,
) -> Outcome:
    """Run a recorded local job to its end in this process; print the summary.

    Args:
        record: the job (PENDING, or CANCELLING if it was cancelled before it started).
        store: the job store.
        prepared: from :func:`check_job`.
        console: where live task lines go (None: ``--quiet`` or detached).
        summary: where the summary table and a failed task's last lines go.
        port_picker: picks free ports (injectable to test a stolen port).
    """
    options = LocalOptions(**record.options)
    log_dir = Path(record.log_dir or store.jobs_dir / record.id)
    router = LogRouter(log_dir, console, use_colour(console))
    if options.install:
        from .install import install_trainer

        router.note("--install: building the trainer's sdist and installing it in a throw-away venv")
        try:
            python = install_trainer(
                prepared.spec, prepared.python, log_dir / "install", include_secrets=options.include_secrets, note=router.note
            )
        except TfjobError as e:
            router.close()
            outcome = Outcome(JobState.FAILED, f"could not install the trainer: {e}")
            store.set_state(record.id, JobState.FAILED, outcome.message)
            _print_summary(summary, record.id, outcome, live=console is not None)
            return outcome
        prepared = dataclasses.replace(prepared, python=python, source_root=None)  # the installed copy is the one imported
    try:
        launcher = Launcher(
            prepared.spec,
            options,
            record.id,
            store,
            router,
            python=prepared.python,
            strategy=prepared.strategy,
            source_root=prepared.source_root,
            port_picker=port_picker,
            engine=prepared.engine,
            shipped=prepared.shipped,
        )
        with cancel_on_signals(launcher):
            outcome = launcher.run()
    finally:
        router.close()
        if options.install:
            from .install import remove_venv

            remove_venv(log_dir / "install")
    _print_summary(summary, record.id, outcome, live=console is not None)
    return outcome


def traceback_end(tail: str) -> str | None:
    """The exception line that ends the last Python traceback in ``tail`` (None: no traceback)."""
    lines = tail.splitlines()
    starts = [n for n, line in enumerate(lines) if line.startswith("Traceback (most recent call last):")]
    if not starts:
        return None
    after = [line for line in lines[starts[-1] + 1 :] if line.strip() and not line.startswith((" ", "\t"))]
    return after[0] if after else None


def _print_summary(summary: TextIO | None, job_id: str, outcome: Outcome, *, live: bool = False) -> None:
    if summary is not None:
        text = f"job {job_id} {outcome.state.value}: {outcome.message}\n"
        if outcome.rows:
            text += render_summary(outcome.rows) + "\n"
        if outcome.failed_task and outcome.log_tail:
            ended = traceback_end(outcome.log_tail) if live else None
            if ended:
                # Its traceback is on the console already, among the live lines: said once.
                text += f"{outcome.failed_task} ended with (its traceback is above): {ended}\n"
            else:
                tail = "\n".join("  " + line for line in outcome.log_tail.splitlines())
                text += f"last lines of {outcome.failed_task}:\n{tail}\n"
        try:
            summary.write(text)
            summary.flush()
        except (BrokenPipeError, ValueError):
            pass
