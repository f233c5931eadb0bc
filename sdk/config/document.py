"""Typed, key-checked access to a configuration document (YAML/JSON already parsed).

:class:`ConfigDoc` reads values by their dotted path (``trainingInput.workerCount``,
``workerPoolSpecs[1].machineSpec``) and raises :class:`~tfjob.errors.ConfigFileError`
naming the file, the key, the value and the fix. :data:`UNSUPPORTED` lists the
platform fields tfjob cannot honour, so that they are refused with a reason rather
than dropped. Used by :mod:`tfjob.config.legacy` and :mod:`tfjob.config.vertex`.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping

from ..errors import NOTHING, ConfigFileError, SpecError
from ..description.machines import did_you_mean
from ..cluster.dispatch import BOOTSTRAP, BOOTSTRAP_MODULE  # ``[BOOTSTRAP, "--module", M, "--"]`` runs module M
from ..description.spec import Accelerator, Machine, parse_duration

_NO_DISK = "tfjob sets boot disks on Vertex AI only (diskSpec, --boot-disk-size); remove it"
#: Platform fields tfjob cannot honour, with what to do instead. Keyed by the field's
#: name where it appears (the same reason applies at every level it can appear).
UNSUPPORTED: dict[str, str] = {
    "predictionInput": "this is a batch prediction job; tfjob runs training jobs",
    "encryptionConfig": "tfjob submits AI Platform requests without customer-managed keys; use --backend vertex (--kms-key) or remove it",
    "diskConfig": _NO_DISK,
    "containerArgs": "use trainingInput.args: tfjob gives every task the same arguments",
    "tpuTfVersion": "tfjob runs TPU jobs on Vertex AI, which takes the TensorFlow version from the image; remove it",
    "maxWaitTime": "tfjob limits queueing time on Vertex AI only (--flex-start --max-wait); remove it",
    "priority": "tfjob does not set job priorities; remove it",
    "nfsMounts": "tfjob does not mount NFS shares; read the data from Cloud Storage instead",
    "lustreMounts": "tfjob does not mount Lustre file systems; read the data from Cloud Storage instead",
    "gpuPartitionSize": "tfjob does not partition GPUs; remove it",
    # (A Vertex AI CustomJobSpec's protectedArtifactLocationId is a declared Vertex knob, read there; elsewhere:)
    "protectedArtifactLocationId": "a Vertex AI CustomJobSpec key, taken in a Vertex AI config (or --protected-artifact-location-id); remove it here",
    "models": "tfjob does not attach models to a job; remove it",
}


class ConfigDoc:
    """Typed access to a config document; every error names the file and the key."""

    #: Keys the platform has that tfjob refuses, with the reason and the fix.
    unsupported: Mapping[str, str] = UNSUPPORTED

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, path: str, message: str = "", *, value: Any = NOTHING, problem: str = "", fix: str = "") -> ConfigFileError:
        """An error naming the file and the key (``{file}: {path} {message}``), to raise: the
        value given, the problem and the fix, or a message in one piece."""
        return ConfigFileError(file=self.source, key=path, value=value, problem=message or problem, fix=fix)

    @contextmanager
    def at(self, path: str) -> Iterator[None]:
        """Turn a SpecError raised while checking ``path`` into one that names the file and key."""
        try:
            yield
        except ConfigFileError:
            raise
        except SpecError as e:
            raise ConfigFileError.at(self.source, path, e) from None

    def check_keys(
        self,
        data: Mapping[str, Any],
        path: str,
        known: Iterable[str],
        ignored: Iterable[str] = (),
        hint: Mapping[str, str] | None = None,
    ) -> None:
        """Raise for the first key that is neither known nor ignored.

        Args:
            data: the mapping found at ``path``.
            path: its dotted path ("" for the top level).
            known: the keys tfjob reads there, in the order the message lists them.
            ignored: keys accepted and not read (output-only fields).
            hint: extra advice for particular unknown keys (where they belong instead).
        """
        known = list(known)
        ignored = set(ignored)
        for key in data:
            if key in known or key in ignored:
                continue
            where = f"{path}.{key}" if path else str(key)
            if key in self.unsupported:
                raise self.error(where, f"is not supported: {self.unsupported[key]}")
            extra = f" ({hint[key]})" if hint and key in hint else ""
            level = f"under {path}" if path else "at the top level"
            raise ConfigFileError(
                f"{self.source}: unknown key {where!r}{did_you_mean(str(key), known)}{extra}; valid keys {level} are {', '.join(known)}"
            )

    def mapping(self, value: Any, path: str) -> dict[str, Any]:
        """A mapping (``{}`` when absent)."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.error(path, f"must be a mapping of keys to values, not {type(value).__name__} {value!r}")
        return dict(value)

    def text(self, value: Any, path: str) -> str | None:
        """A string, or None when absent; numbers are refused (YAML reads 2.10 as 2.1)."""
        if value is None:
            return None
        if not isinstance(value, str):
            # YAML reads `runtimeVersion: 2.10` as the number 2.1: only quotes keep what was written.
            raise self.error(path, f"{value!r} must be text; put the value in quotes in the file")
        return value

    def count(self, value: Any, path: str) -> int:
        """A whole number ≥ 0, written as a number or as the API's int64 string."""
        # int64 fields are strings in the JSON the API writes ("9"), numbers in hand-written YAML.
        if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(path, f"{value!r} must be a whole number ≥ 0")
        if value < 0:
            raise self.error(path, f"{value} must be a whole number ≥ 0")
        return value

    def flag(self, value: Any, path: str) -> bool | None:
        """true or false, or None when absent."""
        if value is None:
            return None
        if not isinstance(value, bool):
            raise self.error(path, f"{value!r} must be true or false")
        return value

    def strings(self, value: Any, path: str) -> list[str]:
        """A list of strings (numbers become strings); ``[]`` when absent."""
        if value is None:
            return []
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise self.error(path, f"must be a list (one item per line, each starting with '- '), not {value!r}")
        out = []
        for i, item in enumerate(value):
            # YAML turns `- 10` into an int; the API takes strings, so numbers are fine.
            if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                raise self.error(f"{path}[{i}]", f"{item!r} must be text; put it in quotes")
            out.append(str(item))
        return out

    def labels(self, value: Any, path: str) -> dict[str, str]:
        """A mapping of label keys to values (checked later by the spec).

        The labels tfjob itself puts on a job (a request it rendered, read back) are
        dropped: tfjob sets them again, with this submission's values.
        """
        from ..description.spec import RESERVED_LABELS

        out = {}
        for key, item in self.mapping(value, path).items():
            if key in RESERVED_LABELS:
                continue
            if isinstance(item, bool) or not isinstance(item, (str, int)):
                raise self.error(f"{path}.{key}", f"{item!r} must be text")
            out[str(key)] = str(item)
        return out

    def duration(self, value: Any, path: str) -> float:
        """Seconds from a Google Duration (``"7200s"``) or a number."""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.error(path, f"{value!r} must be a duration such as '7200s'")
        with self.at(path):
            return parse_duration(value)
        raise AssertionError("unreachable")  # mypy: the with block returns or raises

    def machine(self, value: Any, path: str, accelerator: Accelerator | None) -> str:
        """A machine type (Compute Engine or legacy name), checked with its accelerator."""
        name = self.text(value, path)
        if not name:
            raise self.error(path, "is empty; name a machine type such as n1-standard-4")
        with self.at(path):
            Machine.resolve(name, accelerator)  # validates the pair; the job's request resolves it again
        return name

    def accelerator(self, type_: Any, count: Any, path: str, count_path: str) -> Accelerator | None:
        """An accelerator from its type and count fields; None when no type is given."""
        name = self.text(type_, path)
        if name is None or name == "ACCELERATOR_TYPE_UNSPECIFIED":
            if count not in (None, 0, "0"):
                raise self.error(count_path, f"{count!r} is set but {path} is not; name the accelerator type")
            return None
        n = 1 if count is None else self.count(count, count_path)
        with self.at(path):
            return Accelerator(name, n)


#: The bootstrap flags tfjob renders into a container command, and the ``Job`` keyword each
#: reads back as (``--package`` repeats: the archives installed first).
_BOOTSTRAP_FLAGS: dict[str, str] = {
    "--package": "packages", "--module": "module", "--script": "script", "--strategy": "strategy", "--tf-config": "tf_config",
}  # fmt: skip


def bootstrap_values(doc: ConfigDoc, value: Any, path: str) -> dict[str, Any]:
    """What a container command ``[tfjob-bootstrap, [--package URI…] --module M [...] --]``
    says, as ``Job`` keywords: the reverse of :func:`tfjob.cluster.dispatch.bootstrap_command`."""
    command = doc.strings(value, path)
    values: dict[str, Any] = {}
    rest = command[1:]
    ok = command[:1] == [BOOTSTRAP]
    while ok and rest and rest[0] != "--":
        flag, *rest = rest
        if flag not in _BOOTSTRAP_FLAGS or not rest or rest[0].startswith("--"):
            ok = False
            break
        key, (arg, *rest) = _BOOTSTRAP_FLAGS[flag], rest
        if key == "packages":
            values.setdefault("packages", []).append(arg)
        elif key in values:
            ok = False
        else:
            values[key] = arg
    if ok and rest in ([], ["--"]) and ("module" in values) != ("script" in values):
        return values
    raise doc.error(
        path,
        f"{command!r} is not supported: a {BOOTSTRAP} command is [{BOOTSTRAP}, --module, MODULE, --] "
        "(with the --package, --strategy and --tf-config tfjob renders); put trainer arguments in args",
    )


def bootstrap_module_values(doc: ConfigDoc, value: Any, path: str) -> tuple[dict[str, Any], list[str]]:
    """A package replica's args when its module is the bootstrap (``--module M [...] -- ARGS``):
    the ``Job`` keywords they say, and the trainer's own arguments after ``--``.
    The reverse of :func:`tfjob.cluster.dispatch.package_args`."""
    args = doc.strings(value, path) if value is not None else []
    if "--" not in args:
        raise doc.error(
            path,
            f"{args!r}: the module is {BOOTSTRAP_MODULE}, whose args are [--module, MODULE, …, --, TRAINER_ARGS…]; "
            f"write them so, or give the trainer's module as the pythonModule",
        )
    end = args.index("--")
    values = bootstrap_values(doc, [BOOTSTRAP, *args[: end + 1]], path)
    if "module" not in values or "packages" in values:
        raise doc.error(path, f"{args[: end + 1]!r}: a package replica's bootstrap takes --module (packages go in packageUris)")
    return values, args[end + 1 :]


def is_bootstrap_wheel(uri: str) -> bool:
    """A staged ``tfjob-bootstrap`` wheel (tfjob adds it to every package pool)."""
    return re.search(r"(^|/)tfjob_bootstrap-[^/]+\.whl$", uri) is not None


def package_values(uris: list[str]) -> dict[str, Any]:
    """``package`` and ``packages`` from a list of package URIs.

    The first URI is the trainer; the rest are its extra dependencies (built tarballs).
    The ``tfjob-bootstrap`` wheel tfjob stages itself is left out.
    """
    uris = [uri for uri in uris if not is_bootstrap_wheel(uri)]
    return {"package": uris[0], "packages": uris[1:]} if uris else {}


def require_same(doc: ConfigDoc, found: dict[str, tuple[str, Any]], what: str, path: str, value: Any) -> None:
    """Record a value every pool must share (tfjob gives all tasks one module, one args list…)."""
    if what not in found:
        found[what] = (path, value)
    elif found[what][1] != value:
        first_path, first = found[what]
        raise doc.error(
            path,
            f"{value!r} differs from {first_path} {first!r}; tfjob runs every task with the same {what}, so make them equal",
        )
