"""What ``tfjob submit`` / ``tfjob render`` do with their line once click has read it
(:mod:`tfjob.cli.submit` calls :func:`submit_job`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfjob import UsageError

from .flags import knobs

if TYPE_CHECKING:
    from tfjob import Job


def dump(data: Any, output: str) -> str:
    """``data`` as ``json`` (indented) or ``yaml`` text."""
    if output == "yaml":
        import yaml

        text: str = yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
        return text
    return json.dumps(data, indent=2)


def job_keywords(values: dict[str, Any]) -> dict[str, Any]:
    """The job options' values (named after :class:`tfjob.Job` keywords) as ``Job`` takes
    them, unset ones left out. Pure; shared by ``submit``, ``render`` and ``tune``."""
    from tfjob._internal import parse_duration, parse_key_values

    # A knob declared a duration (--timeout, --max-wait) takes 2h, 30m or seconds.
    durations = {k.name for k in knobs().values() if k.kind == "duration"}
    out: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, tuple):  # a repeatable option: () when not given
            value = list(value) or None
        if value is None:
            continue
        if name in ("packages", "command"):
            value = [p for item in value for p in item.split(",") if p] or None
        elif name in ("labels", "env"):
            value = parse_key_values(value, name) or None
        elif name in durations:
            value = parse_duration(value, name)
        if value is not None:
            out[name] = value
    return out


def _echo(text: str) -> None:
    sys.stdout.write(f"{text}\n")
    sys.stdout.flush()


def submit_job(
    package_path: str | None,
    package_path_opt: str | None,
    python_package_uris: tuple[str, ...],
    worker_pool_spec: tuple[str, ...],
    run_async: bool,
    dry_run: bool,
    output: str,
    *,
    rendering: bool,
    user_args: list[str],
    costing: str | None = None,
    **job_options: Any,
) -> None:
    """Submit (or, ``rendering`` or ``dry_run``, print the request of) the job a ``submit`` /
    ``render`` line describes: its parameters as the command declares them, ``user_args`` what
    followed ``--``; ``costing`` (``text``, or ``json``/``yaml`` as ``--output`` says), its price
    per hour (``tfjob cost``)."""
    from tfjob._internal import job_from_keywords

    detach = job_options.get("detach")
    if output not in ("json", "yaml"):
        raise UsageError(f"--output {output!r} must be json or yaml")
    package_path = _trainer_source(package_path, package_path_opt, python_package_uris, job_options)
    _check_waiting(job_options, run_async or bool(detach), dry_run or rendering)
    values = job_keywords(job_options)
    if worker_pool_spec:
        from tfjob._internal import pool_spec_keywords

        values.update(pool_spec_keywords(worker_pool_spec, values))
        if "package" in values:
            if package_path or package_path_opt:
                raise UsageError("--worker-pool-spec local-package-path names the trainer directory; leave out PACKAGE_PATH")
            package_path = values.pop("package")
    if dry_run or rendering:
        values["dry_run"] = True
    if user_args:
        values["args"] = user_args
    job = job_from_keywords(package_path or package_path_opt, None, values)
    if costing:
        price = job.estimate()
        _echo(dump(price.to_dict(), output) if costing != "text" else "\n".join(price.lines(timeout=job.spec.timeout)))
        return
    if dry_run or rendering:
        _print_request(job, output)
        return
    if job.backend_name == "local" and job_options.get("backend") is None and job.settings.backend is None:
        job.options.notice = (
            "tfjob: no cloud project configured, so the cluster runs on this machine "
            "(--backend vertex --project P --region R runs it on Vertex AI)"
        )
    if detach or run_async:
        handle = job.submit()
    else:
        handle = job.run()
    _echo(handle.id)


def _trainer_source(
    package_path: str | None, package_path_opt: str | None, python_package_uris: tuple[str, ...], job_options: dict[str, Any]
) -> str | None:
    """The trainer's PACKAGE_PATH, from the positional, ``--package-path`` and
    ``--python-package-uris`` (gcloud's ``submit JOB --package-path DIR`` form: the positional is
    the job's name); sets ``job_options``' ``name`` and, from the URIs, ``packages``."""
    display_name, packages = job_options.get("name"), job_options.get("packages")
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
            raise UsageError(
                "--python-package-uris names the trainer package and its extras; leave out PACKAGE_PATH, --package-path and --packages"
            )
        bad = [u for u in uris if not u.startswith("gs://")]
        if bad:
            raise UsageError(f"--python-package-uris {bad[0]!r} is not a gs:// URI; a local trainer directory is PACKAGE_PATH")
        package_path, packages = uris[0], uris[1:] or None
        job_options["packages"] = tuple(packages or ())
    job_options["name"] = display_name
    return package_path


def _check_waiting(job_options: dict[str, Any], not_waiting: bool, printing: bool) -> None:
    """Refuse what needs the job waited for (``--stream-logs``, ``--register-model``) with
    ``--async``/``--detach`` (``not_waiting``); a request only printed (``printing``) registers nothing."""
    if job_options.get("stream_logs") and not_waiting:
        raise UsageError(
            "--stream-logs prints the job's logs while waiting for it; drop --async/--detach (or use `tfjob logs ID --follow`)"
        )
    if job_options.get("register_model") and not_waiting and not printing:
        raise UsageError(
            "--register-model registers the job's SavedModel once the job SUCCEEDED, which --async/--detach does not wait for; "
            "drop one (or later: tfjob.get_job(ID).register_model(NAME))"
        )


def _print_request(job: "Job", output: str) -> None:
    """Print the request ``job`` would send (``--dry-run``, ``tfjob render``)."""
    if job.backend_name == "local":
        # The local plan is pure, but not of a trainer that is not there: refused as a run
        # refuses it (and as every other backend's render, which builds the package, does).
        for given in (job.spec.package, *job.spec.packages):
            if given and "://" not in given and not Path(given).expanduser().exists():
                what = "trainer directory" if given == job.spec.package else "package"
                raise UsageError(f"{what} {given!r} does not exist; give the directory that holds your trainer package")
    _echo(dump(job.render(), output))
