"""Every knob declared once: its name, type, help, command-line and config-file spellings.

A *knob* is one setting a user gives (``--kms-key`` on the command line, ``kms_key=`` in
:class:`tfjob.Job`, ``encryptionSpec.kmsKeyName`` in a ``--config`` file). It is declared
where its value is held:

- what every backend takes — the job description (roles, machines, images, entry point,
  args, env, job dir…), the common submission options and the settings — in
  :data:`JOB_KNOBS` below;
- what only a backend takes, in that backend's folder: a field of its options class
  declared with :func:`knob` (``kms_key: str | None = knob("…", config="…")``), or, for
  a part of the job description only it renders, an entry of its options' ``SPEC_KNOBS``.

:func:`tfjob.backends.knobs` gathers them (which backends take each knob follows from
which options classes declare it), the CLI makes its flags from them
(:mod:`tfjob.cli.options`), and :func:`tfjob.backends.find_knob` spells a knob as a flag
or a keyword for a message. Stdlib only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from os import PathLike
from typing import Any, Iterable, Union

from ..errors import NOTHING, flag_words

#: A file or directory: text or a path object.
StrPath = Union[str, "PathLike[str]"]

#: The kinds of value a knob takes, and so the flag the CLI makes for it:
#: ``text``; ``int``; ``float``; ``flag`` (``--spot``, True when given); ``switch``
#: (``--install/--no-install``); ``list`` (repeat the flag); ``duration`` (``2h``, ``90s``).
KINDS = ("text", "int", "float", "flag", "switch", "list", "duration")


@dataclass(frozen=True)
class Knob:
    """One setting, as every front end spells it.

    Attributes:
        name: the keyword (``kms_key``): the :class:`tfjob.Job` / settings-object field, the
            options field, the flat keyword the CLI's ``job_from_keywords`` takes.
        help: one sentence for ``--help`` (without the backends: the CLI adds them).
        kind: one of :data:`KINDS`.
        flags: the click declarations, the first the spelling messages use
            (``("--kms-key",)``; ``("--chief/--no-chief",)``); default ``--NAME-WITH-DASHES``.
        config: the spelling in a config file or the platform's API
            (``encryptionSpec.kmsKeyName``; gcloud's), if it has one.
        backends: the backends that take it (``()``: every backend).
        tune: offered by ``tfjob tune`` too (False: meaningless for a study's trials).
        helps: each taking backend's own help, ``((backends, help), …)``, when they differ.
        cli: has a flag (False: a keyword and config key only, e.g. ``worker_boot_disk_size``).
        lands: where the value goes in the typed job model
            (:data:`tfjob.description.request.PLACES`): ``job.args``, ``worker.machine_type``,
            ``worker.resources.cpu``, ``shape.scale_tier``, ``settings.project``, or
            ``options.<name>`` (the chosen backend's options; the default).
    """

    name: str
    help: str
    kind: str = "text"
    flags: tuple[str, ...] = ()
    config: str | None = None
    backends: tuple[str, ...] = ()
    tune: bool = True
    helps: tuple[tuple[tuple[str, ...], str], ...] = ()
    cli: bool = True
    lands: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"knob {self.name}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if not self.lands:
            object.__setattr__(self, "lands", "options." + self.name)
        if not self.flags:
            object.__setattr__(self, "flags", ("--" + self.name.replace("_", "-"),))

    @property
    def flag(self) -> str:
        """The command-line spelling (``--kms-key``)."""
        return next(d for d in self.flags if d.startswith("--")).split("/")[0]

    @property
    def keyword(self) -> str:
        """The Python spelling (``kms_key``), as in ``Vertex(kms_key=…)`` or the flat keywords the CLI parses."""
        return self.name

    def words(self, value: Any = NOTHING) -> str:
        """This knob given ``value`` as the command line says it, for a message: ``--workers 0``,
        ``--kms-key 'k'``; a flag given True alone (``--spot``), a switch given False by its
        off spelling (``--no-chief``, ``--use-master``); without a value, the flag alone."""
        if value is False and "/" in self.flags[0]:
            return self.flags[0].split("/")[1]
        if value is True and self.kind not in ("flag", "switch"):
            return f"{self.flag} True"
        return flag_words(self.name, value, self.flag)

    def spelling(self, front_end: str) -> str:
        """``--kms-key`` for ``cli``, ``kms_key`` for ``api``, the config key for ``config``."""
        if front_end == "cli":
            return self.flag
        if front_end == "config":
            return self.config or self.name
        return self.keyword

    def described(self) -> str:
        """The help with the backends that take it (``vertex: …``; one line per help when they differ)."""
        if self.helps:
            return "; ".join(f"{', '.join(names)}: {text.rstrip('.')}" for names, text in self.helps) + "."
        return f"{', '.join(self.backends)}: {self.help}" if self.backends else self.help

    def joined(self, other: "Knob") -> "Knob":
        """This knob taken by ``other``'s backends too (one flag, each backend's help)."""
        if other.kind != self.kind or other.flags != self.flags or other.lands != self.lands:
            raise ValueError(
                f"knob {self.name} is declared twice differently ({self.kind} {self.flags} → {self.lands} for {', '.join(self.backends)}, "
                f"{other.kind} {other.flags} → {other.lands} for {', '.join(other.backends)}): declare it alike"
            )
        helps = list(self.helps or ((self.backends, self.help),))
        for i, (names, text) in enumerate(helps):
            if text == other.help:
                helps[i] = ((*names, *other.backends), text)
                break
        else:
            helps.append((other.backends, other.help))
        return dataclasses.replace(
            self,
            backends=(*self.backends, *other.backends),
            config=self.config or other.config,
            tune=self.tune and other.tune,
            cli=self.cli or other.cli,
            helps=tuple(helps) if len(helps) > 1 else (),
        )


_METADATA = "tfjob.knob"


def knob(
    help: str,
    *,
    default: Any = None,
    kind: str | None = None,
    flags: tuple[str, ...] = (),
    config: str | None = None,
    tune: bool = True,
    cli: bool = True,
    lands: str = "",
) -> Any:
    """A field of a backend's options class that is a knob of that backend: its default, and
    what the CLI and messages need (the type is the field's annotation)::

        kms_key: str | None = knob("Encrypt the job with this Cloud KMS key.", config="encryptionSpec.kmsKeyName")
    """
    declared = {"help": help, "kind": kind, "flags": flags, "config": config, "tune": tune, "cli": cli, "lands": lands}
    if isinstance(default, (list, dict, set)):
        raise ValueError("a knob's default must be immutable (a tuple, not a list)")
    return dataclasses.field(default=default, metadata={_METADATA: declared})


def kind_of(annotation: Any) -> str:
    """The kind of a field's annotation (a string under ``from __future__ import annotations``)."""
    text = str(annotation).replace(" ", "").replace("typing.", "")
    if text == "bool":
        return "flag"
    if text in ("int", "int|None"):
        return "int"
    if text in ("float", "float|None"):
        return "float"
    if text.startswith(("tuple[str", "Sequence[str")):
        return "list"
    return "text"


def declared(cls: Any, backend: str) -> list[Knob]:
    """The knobs the options class ``cls`` declares, as taken by ``backend``: its fields made
    with :func:`knob`, then its ``SPEC_KNOBS``."""
    out = []
    for f in dataclasses.fields(cls):
        info = f.metadata.get(_METADATA)
        if info is None:
            continue
        kind = info["kind"] or kind_of(f.type)
        out.append(
            Knob(f.name, info["help"], kind, info["flags"], info["config"], (backend,), info["tune"], cli=info["cli"], lands=info["lands"])
        )
    out += [dataclasses.replace(k, backends=(backend,)) for k in getattr(cls, "SPEC_KNOBS", ())]
    return out


def described_fields(cls: Any) -> str:
    """The knob fields of ``cls`` as the ``Args:`` lines of a docstring (``help(tfjob.Vertex)``
    lists the knobs declared in the backend's folder from their declarations)."""
    lines = []
    for f in dataclasses.fields(cls):
        info = f.metadata.get(_METADATA)
        if info is not None:
            lines.append(f"        {f.name}: {info['help']}")
    return "\n" + "\n".join(lines) + "\n" if lines else ""


def names(knobs: Iterable[Knob]) -> frozenset[str]:
    """The keywords of ``knobs``."""
    return frozenset(k.name for k in knobs)


def _roles(what: str, help: str, kind: str = "text", lands: str = "{role}.{what}", **aliases: tuple[str, ...]) -> list[Knob]:
    """``chief_<what>`` … ``evaluator_<what>``, each with its gcloud aliases, landing in its role's request."""
    nouns = {"chief": "the chief", "worker": "the workers", "ps": "the parameter servers", "evaluator": "the evaluators"}
    return [
        Knob(
            f"{role}_{what}",
            help.format(role=nouns[role]),
            kind,
            (f"--{role}-{what.replace('_', '-')}", *aliases.get(role, ())),
            lands=lands.format(role=role, what=what),
        )
        for role in nouns
    ]


#: The legacy runtime a job names: local runs imitate it, AI Platform runs it, Vertex AI reads it from a migrated job.
RUNTIME_VERSION = Knob(
    "runtime_version", "Legacy AI Platform runtime version.", config="trainingInput.runtimeVersion", lands="job.runtime_version"
)
PYTHON_VERSION = Knob(
    "python_version", "Legacy AI Platform Python version.", config="trainingInput.pythonVersion", lands="job.python_version"
)

#: The knobs every backend takes: the job description, the common submission options and
#: the settings, in the order ``tfjob submit --help`` lists them.
JOB_KNOBS: tuple[Knob, ...] = (
    Knob(
        "module", "The trainer module to run, e.g. trainer.task.", flags=("--module-name", "-m"), config="pythonModule", lands="job.module"
    ),
    Knob(
        "workers",
        "Number of workers (Vertex pool 1).",
        "int",
        ("--workers", "--worker-count"),
        "workerPoolSpecs[1].replicaCount",
        lands="worker.count",
    ),
    Knob(
        "ps",
        "Number of parameter servers (pool 2); needs --workers.",
        "int",
        ("--ps", "--parameter-server-count"),
        "workerPoolSpecs[2].replicaCount",
        lands="ps.count",
    ),
    Knob(
        "evaluators",
        "Number of evaluators (pool 3).",
        "int",
        ("--evaluators", "--evaluator-count"),
        "workerPoolSpecs[3].replicaCount",
        lands="evaluator.count",
    ),
    Knob(
        "scale_tier",
        "BASIC (1 x n1-standard-4), STANDARD_1 (1+4 n1-highcpu-8, 3 ps n1-standard-4), PREMIUM_1 (1+19 n1-highcpu-16, 11 ps "
        "n1-highmem-8), BASIC_GPU (1 x n1-standard-8 with one NVIDIA T4: the tier's K80 is retired), BASIC_TPU (chief + a Cloud "
        "TPU v2-8) or CUSTOM.",
        config="trainingInput.scaleTier",
        lands="shape.scale_tier",
    ),
    Knob(
        "chief",
        "--no-chief: no chief replica, worker 0 is the chief (Kubeflow, JobSet; --dialect kubeflow locally).",
        "switch",
        ("--chief/--no-chief",),
        lands="shape.chief",
    ),
    Knob(
        "tpu_topology",
        "The TPU slice shape of TPU VM pools on Vertex AI (e.g. 2x2 for ct5lp-hightpu-4t; default: one host).",
        config="machineSpec.tpuTopology",
        lands="shape.tpu_topology",
    ),
    *_roles(
        "machine_type",
        "Machine of {role} (Compute Engine type or legacy name).",
        chief=("--master-machine-type",),
        ps=("--parameter-server-machine-type",),
    ),
    Knob("accelerator", "type=NVIDIA_TESLA_T4,count=1 for the chief, workers and evaluators.", lands="shape.accelerator"),
    *_roles("accelerator", "Accelerator of {role} only.", chief=("--master-accelerator",), ps=("--parameter-server-accelerator",)),
    *_roles(
        "cpu",
        "CPUs each of {role} asks for (4, 0.5, 500m): Kubernetes requests them, Vertex AI fits a machine type to them.",
        lands="{role}.resources.{what}",
    ),
    *_roles(
        "memory",
        "Memory each of {role} asks for (16Gi, 512Mi): Kubernetes requests it, Vertex AI fits a machine type to it.",
        lands="{role}.resources.{what}",
    ),
    Knob(
        "image",
        "Container image every task runs (custom container).",
        flags=("--image", "--image-uri"),
        config="containerSpec.imageUri",
        lands="job.image",
    ),
    *_roles(
        "image",
        "Container image of {role} only.",
        chief=("--master-image-uri",),
        worker=("--worker-image-uri",),
        ps=("--parameter-server-image-uri",),
        evaluator=("--evaluator-image-uri",),
    ),  # fmt: skip
    Knob("script", "The trainer's Python file, run as `python PATH` (instead of --module-name), e.g. dist_mnist.py.", lands="job.script"),
    Knob(
        "packages",
        "Extra built tarballs or wheels to install (repeat, or comma-separate).",
        "list",
        config="packageUris",
        lands="job.packages",
    ),
    Knob(
        "job_dir", "Where the trainer writes; passed to it as --job-dir.", config="baseOutputDirectory.outputUriPrefix", lands="job.job_dir"
    ),
    Knob("config", "A gcloud trainingInput or Vertex CustomJobSpec YAML/JSON file; flags override it.", lands="config"),
    Knob(
        "backend",
        "Where the job runs: {backends} (default: local unless a cloud project is configured). kubeflow is a Kubeflow "
        "TFJob, jobset a JobSet, trainjob a Kubeflow Trainer TrainJob; ai-platform renders the legacy AI Platform Training "
        "request (render / --dry-run only).",
        tune=False,
        lands="settings.backend",
    ),
    Knob("name", "The job's name (default: MODULE-DATE-TIME).", flags=("--display-name", "--name"), config="displayName", lands="job.name"),
    Knob("labels", "key=value[,key=value] labels for the job.", "list", config="labels", lands="job.labels"),
    Knob("env", "KEY=VALUE set in every task (repeat).", "list", config="env", lands="job.env"),
    Knob("service_account", "Service account the tasks run as.", config="serviceAccount", lands="job.service_account"),
    Knob("timeout", "Maximum running time: seconds, or 2h, 30m, 1h30m.", "duration", config="scheduling.timeout", lands="job.timeout"),
    Knob(
        "command",
        "Replace an --image's entrypoint (gcloud spelling: comma-separated, or repeat); not with --module-name.",
        "list",
        config="containerSpec.command",
        tune=False,
        lands="job.command",
    ),
    Knob(
        "requirements",
        "A bare trainer's dependencies (default: its requirements.txt): declared in the package, checked locally.",
        lands="job.requirements",
    ),
    Knob(
        "use_chief",
        "Name the primary task chief or master in the legacy TF_CONFIG (AI Platform, --dialect ai-platform).",
        "switch",
        ("--use-chief/--use-master", "--use-chief-in-tf-config/--no-use-chief-in-tf-config"),
        "trainingInput.useChiefInTfConfig",
        lands="job.use_chief",
    ),
    Knob(
        "container_engine",
        "podman or docker (default: whichever is installed, podman first): builds --build images, runs --image tasks locally.",
    ),
    Knob(
        "build",
        "Build PACKAGE_PATH into an image (its sdist and requirements.txt on the base image, or its own Dockerfile), tagged by content, and run that image.",
        "flag",
        tune=False,
    ),
    Knob(
        "image_repo",
        "With --build: REGISTRY/PATH to push the image to; the job runs REPO@sha256:DIGEST (pushed only when the registry lacks it).",
        tune=False,
    ),
    Knob("base_image", "With --build: the image to build on (default tfjob's base image, tfjob:VERSION).", flags=("--base",), tune=False),
    Knob(
        "cloud_build",
        "With --build: build with Cloud Build in --project (the context staged to --staging-bucket), no engine needed here.",
        "flag",
    ),
    Knob("include_secrets", "Package files that look like credentials too (each is still named in a warning).", "flag"),
    Knob(
        "strategy",
        "module (default: every task runs the trainer, as the platforms do), parameter-server (the bootstrap serves ps and "
        "workers for a chief-only trainer), auto or multi-worker.",
    ),
    Knob(
        "tf_config",
        "platform (default: TF_CONFIG/CLUSTER_SPEC as the platform writes them) or tf2 (rewritten for TensorFlow 2 strategies: master -> chief, evaluators out).",
    ),
    Knob("quiet", "Show only the summary, not the task logs or progress lines.", "flag", ("--quiet", "-q")),
    Knob("cancel_on_interrupt", "Cancel a cloud job when waiting is interrupted by Ctrl-C.", "flag"),
)
