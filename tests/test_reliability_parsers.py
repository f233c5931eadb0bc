"""Every parser of outside input, fed 10,000 arbitrary inputs each: a result or one of our errors.

Outside input is what users and platforms hand tfjob: ``--config`` files, ``--hparams``
study files, and the ``--accelerator``, ``--labels``, ``--env`` and ``--timeout``
strings (TF_CONFIG / CLUSTER_SPEC: ``test_task_info.py``, in this suite too). Whatever
comes in, a parser either returns something well-formed or raises a
:class:`~tfjob.errors.TfjobError` whose message is one non-empty line (the CLI prints
it as ``error: …`` and exits 2); any other exception escaping is a bug.

Inputs are cheap to draw — joined tokens that sit near the valid forms, next to any
text at all — so that 10,000 of them fit in seconds.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability import Reliability

from tfjob import Job
from tfjob.config.legacy import ACCELERATOR_CONFIG_KEYS, LEGACY_JOB_KEYS, REPLICA_CONFIG_KEYS, TRAINING_INPUT_KEYS
from tfjob.config.vertex import (
    CONTAINER_SPEC_KEYS,
    CUSTOM_JOB_KEYS,
    CUSTOM_JOB_SPEC_KEYS,
    MACHINE_SPEC_KEYS,
    PYTHON_PACKAGE_KEYS,
    TUNING_JOB_KEYS,
    VERTEX_SCHEDULING_KEYS,
    WORKER_POOL_KEYS,
)
from tfjob.errors import TfjobError
from tfjob.tuning.hparams import COUNT_KEYS, LEGACY_KEYS, LEGACY_PARAM_KEYS, METRIC_KEYS, PARAMETER_KEYS, STUDY_SPEC_KEYS
from tfjob.description.machines import ACCELERATORS, RETIRED_ACCELERATORS
from tfjob.description.limits import MAX_TIMEOUT_SECONDS
from tfjob.description.spec import Accelerator, parse_duration, parse_key_values
from tfjob.description.request import build_spec

#: The properties' examples: the Hypothesis profile's (300 in CI, 10,000 with --hypothesis-profile deep; tests/conftest.py).
many = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)

#: What the platforms accept as a label key and value (Vertex AI and Kubernetes alike).
LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")
#: An environment variable name a container and a shell take.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def one_line_error(fn: Callable[[], Any]) -> Any:
    """``fn()``, or None when it raised one of our errors with a one-line message."""
    try:
        return fn()
    except TfjobError as e:
        message = str(e)
        assert message.strip() and "\n" not in message, f"{type(e).__name__} message is not one line: {message!r}"
        return None


def joined(tokens: list[str], max_size: int = 8) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(tokens), max_size=max_size).map("".join)


# -- CLI strings -----------------------------------------------------------------------------
_NUMBERS = ["0", "1", "2", "8", "-1", "1.5", "01", "٣", "²", "1e3", "99999999999999999999", "9" * 400, " ", ""]
_ACCELERATOR_NAMES = [*ACCELERATORS[:6], *RETIRED_ACCELERATORS, "nvidia-tesla-t4", "tpu_v3", "NVIDIA_TESLA_T4 ", "é", "", "TYPE"]
# Near the form type=NAME,count=N, each part sometimes wrong.
_accelerator_near = st.tuples(
    st.sampled_from(["type", "TYPE", " type", "tipe", "count", ""]),
    st.sampled_from(["=", "= ", ":", ""]),
    st.sampled_from(_ACCELERATOR_NAMES),
    st.sampled_from([",", ", ", ";", ",,", ""]),
    st.sampled_from(["count", "Count", "type", "", "size"]),
    st.sampled_from(["=", "==", ""]),
    st.sampled_from(_NUMBERS),
).map("".join)
_ACCELERATOR_TOKENS = ["type", "count", "=", ",", " ", "\t", "\n", *_ACCELERATOR_NAMES, *_NUMBERS]


@pytest.mark.reliability
@many
@given(text=_accelerator_near | joined(_ACCELERATOR_TOKENS) | st.text(max_size=16))
def test_accelerator_strings(text: str, reliability: Reliability) -> None:
    reliability.tried()
    accelerator = one_line_error(lambda: Accelerator.parse(text))
    if accelerator is not None:
        assert accelerator.type in ACCELERATORS
        assert isinstance(accelerator.count, int) and accelerator.count >= 1


_KEYS = ["team", "a", "Key", "1a", "a-b_c", "A_B", " ", "", "é", "x" * 63, "x" * 64, "a\n", "a b"]
_VALUES = ["ml", "", "A", "a-1_b", "\n", "ml\n", "x" * 63, "x" * 64, "é", "a b", "=", "1"]
# Near KEY=VALUE[,KEY=VALUE…], each part sometimes wrong.
_pair = st.tuples(st.sampled_from(_KEYS), st.sampled_from(["=", "==", "", " = "]), st.sampled_from(_VALUES)).map("".join)
_key_values = st.lists(_pair, max_size=3).map(",".join) | st.text(max_size=10)


@pytest.mark.reliability
@many
@given(items=st.lists(_key_values, max_size=2), flag=st.sampled_from(["--labels", "--env"]))
def test_label_and_env_strings(items: list[str], flag: str, reliability: Reliability) -> None:
    reliability.tried()
    parsed = one_line_error(lambda: parse_key_values(items, flag))
    if parsed is None:
        return
    assert all(isinstance(k, str) and k.strip() and isinstance(v, str) for k, v in parsed.items())
    # Then through the spec, which must refuse what Vertex AI, Kubernetes or a shell would.
    if flag == "--env":
        spec = one_line_error(lambda: build_spec(dict(name="job", module="trainer.task", env=parsed)))
        assert spec is None or all(ENV_NAME.fullmatch(key) for key in spec.env), spec.env
        return
    spec = one_line_error(lambda: build_spec(dict(name="job", module="trainer.task", labels=parsed)))
    if spec is not None:
        for key, value in spec.labels.items():
            assert LABEL_KEY.fullmatch(key) and LABEL_VALUE.fullmatch(value), (key, value)


# Near 1h30m, 7200s, 7200: (number, unit) parts, each sometimes wrong.
_duration_near = st.lists(
    st.tuples(
        st.sampled_from([*_NUMBERS, "30", "7200", ".5", "5.", "٥", "400", "31536000", "31536001"]),
        st.sampled_from(["h", "m", "s", "d", "H", "ms", "w", "", " "]),
    ).map("".join),
    max_size=3,
).map("".join)


@pytest.mark.reliability
@many
@given(text=_duration_near | st.text(max_size=12))
def test_duration_strings(text: str, reliability: Reliability) -> None:
    reliability.tried()
    seconds = one_line_error(lambda: parse_duration(text))
    if seconds is not None:
        assert isinstance(seconds, float) and math.isfinite(seconds) and 0 < seconds <= MAX_TIMEOUT_SECONDS, seconds
        assert all(c in "0123456789" for c in text if c.isdigit()), text  # '٥' is no 5


# -- documents: --config and --hparams files ------------------------------------------------------
_DOC_VALUES = [
    "CUSTOM", "BASIC", "STANDARD_1", "BASIC_TPU", "n1-standard-4", "complex_model_m", "NVIDIA_TESLA_T4", "trainer.task",
    "gs://b/t-0.0.0.tar.gz", "gcr.io/p/t:1", "7200s", "2h", "-5s", "us-central1", "2.11", "3.7", "MAXIMIZE", "DOUBLE",
    "INTEGER", "CATEGORICAL", "DISCRETE", "UNIT_LOG_SCALE", "accuracy", "lr", "1", "-1", "0", 0, 1, 3, -2, 0.5, 1e300,
    10**30, True, None, "", float("nan"), float("inf"), "é", "a\nb",
    "²", "٣", "--5", "-²", " 7 ",  # digits str.isdigit() takes and int() does not, or not as written
]  # fmt: skip
_leaf = st.sampled_from(_DOC_VALUES) | st.integers(-3, 2**70) | st.text(max_size=4)
_any = st.recursive(
    _leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "type", "name", "0"]) | st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=5,
)


def obj(
    keys: tuple[str, ...] | list[str], value: st.SearchStrategy[Any] = _leaf, **special: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """A mapping with any of ``keys`` (and sometimes a misspelt one), or now and then not a mapping at all."""
    fields = {k: special.get(k, value) for k in keys}
    return st.fixed_dictionaries({}, optional={**fields, "unknownKey": _leaf}) | _leaf


_values = st.lists(_leaf, max_size=3) | _leaf
_env = st.lists(obj(("name", "value")), max_size=2) | _any
_machine = obj(MACHINE_SPEC_KEYS)
_pool = obj(
    WORKER_POOL_KEYS,
    machineSpec=_machine,
    containerSpec=obj(CONTAINER_SPEC_KEYS, _values, env=_env),
    pythonPackageSpec=obj(PYTHON_PACKAGE_KEYS, _values, env=_env),
)
_job_spec = obj(
    CUSTOM_JOB_SPEC_KEYS,
    workerPoolSpecs=st.lists(_pool | st.just({}), max_size=4) | _leaf,
    scheduling=obj(VERTEX_SCHEDULING_KEYS),
    baseOutputDirectory=obj(("outputUriPrefix",)),
)
_replica = obj(REPLICA_CONFIG_KEYS, acceleratorConfig=obj(ACCELERATOR_CONFIG_KEYS))
_legacy_params = st.lists(obj(LEGACY_PARAM_KEYS, _leaf, categoricalValues=_values, discreteValues=_values), max_size=2)
_hyperparameters = obj(LEGACY_KEYS, params=_legacy_params)
_training_input = obj(
    TRAINING_INPUT_KEYS,
    _values,
    **{k: _replica for k in TRAINING_INPUT_KEYS if k.endswith("Config")},
    hyperparameters=_hyperparameters,
    scheduling=obj(("maxRunningTime",)),
)
_value_spec = obj(("minValue", "maxValue", "values"), values=_values)
_study_spec = obj(
    STUDY_SPEC_KEYS,
    metrics=st.lists(obj(METRIC_KEYS), max_size=2),
    parameters=st.lists(obj(PARAMETER_KEYS, _value_spec), max_size=2),
)
_documents = st.one_of(
    obj(LEGACY_JOB_KEYS, trainingInput=_training_input, labels=obj(("team", "Bad Key"))),
    _job_spec,
    obj(CUSTOM_JOB_KEYS, jobSpec=_job_spec),
    obj(TUNING_JOB_KEYS, studySpec=_study_spec, trialJobSpec=_job_spec),
    obj(("studySpec", *COUNT_KEYS), studySpec=_study_spec),
    _any,
)
_YAML_TOKENS = [
    "trainingInput:", "workerPoolSpecs:", "jobSpec:", "studySpec:", "scaleTier: CUSTOM", "masterType: n1-standard-4",
    "workerCount: 2", "- machineSpec: {machineType: n1-standard-4}", "  replicaCount: '3'", "\n", "  ", "- ", ": ",
    "[", "]", "{", "}", ",", "&a ", "*a", "<<: *a", "!!python/object/apply:os.system ['true']", "!!binary aGk=",
    "!!set {a, b}", "2001-12-14", "~", "0x1F", "1e3", ".inf", "'", '"', "\t", "? [a, b]\n: 1", "---\n", "...\n", "%YAML 1.1\n",
]  # fmt: skip
_contents = st.one_of(
    _documents.map(lambda d: (".json", json.dumps(d).encode())),
    _documents.map(lambda d: (".yaml", json.dumps(d).encode())),  # JSON is YAML: structures through the YAML reader
    joined(_YAML_TOKENS, max_size=10).map(lambda t: (".yaml", t.encode())),
    st.text(max_size=20).map(lambda t: (".yml", t.encode())),
    st.binary(max_size=12).map(lambda b: (".json", b)),
)


@pytest.fixture(scope="module")
def doc_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Module-scoped: one directory for all 10,000 files (function scope does not mix with @given).
    return tmp_path_factory.mktemp("docs")


def write(doc_dir: Path, content: tuple[str, bytes]) -> Path:
    suffix, data = content
    path = doc_dir / f"doc{suffix}"
    path.write_bytes(data)
    return path


@pytest.mark.reliability
@many
@given(content=_contents)
def test_config_and_study_files(content: tuple[str, bytes], doc_dir: Path, reliability: Reliability) -> None:
    """Each document goes to both readers of files: ``--config`` and ``--hparams``."""
    from tfjob.tuning.hparams import load_hparams

    reliability.tried(2)
    path = write(doc_dir, content)
    # Job(config=…) is the whole path a file takes: read, parse, merge, build the spec.
    job = one_line_error(lambda: Job(config=str(path), module="trainer.task"))
    if job is not None:
        assert job.spec.pools and all(p.replicas >= 0 for p in job.spec.pools)
    study = one_line_error(lambda: load_hparams(path))
    if study is not None:
        assert study.study.parameters


# -- digits that are not ASCII --------------------------------------------------------------------
@pytest.mark.parametrize("number", ["²", "٣", "--5", "-²", "１"])
def test_numbers_in_other_scripts_are_refused_in_one_line(number: str, tmp_path: Path) -> None:
    """str.isdigit() takes '²' (and int() then raises ValueError); every count parser refuses it in one line."""
    from tfjob.backends.kubeflow.pod import role_resources
    from tfjob.description.machines import tpu_chips
    from tfjob.config.pool_flags import pool_spec_keywords
    from tfjob.tuning.hparams import load_hparams

    one_line_error(
        lambda: pool_spec_keywords(
            [f"machine-type=n1-standard-4,replica-count=1,accelerator-type=NVIDIA_TESLA_T4,accelerator-count={number}"], {}
        )
    )
    one_line_error(lambda: pool_spec_keywords(["machine-type=n1-standard-4", f"machine-type=n1-standard-4,replica-count={number}"], {}))
    one_line_error(lambda: role_resources("worker", {}, {}, {"default": number}))
    assert tpu_chips(f"ct5lp-hightpu-{number}t") in (None, 5)  # "--5" ends in "-5t"
    config = tmp_path / "job.yaml"
    config.write_text(
        f"trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-standard-4\n  workerType: n1-standard-4\n  workerCount: '{number}'\n"
    )
    one_line_error(lambda: Job(config=str(config), module="trainer.task"))
    study = tmp_path / "study.yaml"
    study.write_text(
        "studySpec:\n  metrics: [{metricId: a, goal: MAXIMIZE}]\n"
        f"  parameters: [{{parameterId: x, integerValueSpec: {{minValue: '{number}', maxValue: 3}}}}]\nmaxTrialCount: '{number}'\n"
    )
    one_line_error(lambda: load_hparams(study))


# -- objects from a Kubernetes API server ---------------------------------------------------------
_K8S_KEYS = [
    "status", "conditions", "type", "reason", "message", "metadata", "labels", "name", "phase", "containerStatuses",
    "state", "terminated", "waiting", "exitCode", "restartCount", "replicaStatuses", "lastTransitionTime", "startTime",
    "completionTime", "training.kubeflow.org/replica-type", "training.kubeflow.org/replica-index",
    "jobset.sigs.k8s.io/replicatedjob-name", "batch.kubernetes.io/job-completion-index", "containers", "spec",
    "terminalState", "jobsStatus", "active", "succeeded", "failed", "ready",
]  # fmt: skip
_K8S_VALUES = ["Succeeded", "Failed", "Running", "True", "False", "Created", "Restarting", "Completed", "Error", "chief",
               "worker", "0", "1", "2026-11-22T16:48:41Z", "2026-13-99", "²"]  # fmt: skip
_k8s_leaf = st.none() | st.booleans() | st.integers(-3, 10**12) | st.text(max_size=4) | st.sampled_from(_K8S_VALUES)
_k8s_any = st.recursive(
    _k8s_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_K8S_KEYS), inner, max_size=4), max_leaves=12
)
_k8s_object = st.dictionaries(st.sampled_from(_K8S_KEYS), _k8s_any, max_size=4)


@pytest.mark.reliability
@many
@given(job=_k8s_object, pods=st.lists(_k8s_object, max_size=3))
def test_job_and_pod_objects_of_any_shape(job: dict[str, Any], pods: list[dict[str, Any]], reliability: Reliability) -> None:
    """A TFJob, JobSet, TrainJob or pod whose fields have the wrong shape (a proxy's answer, another
    controller's version) is read, or is a one-line BackendError: never a TypeError from inside."""
    from tfjob.backends.kubeflow import status

    reliability.tried()
    for read in (
        lambda: status.parse_tfjob_state(job),
        lambda: status.parse_jobset_state(job, pods),
        lambda: status.parse_trainjob_state(job, pods),
        lambda: status.build_job_status("default/job", job, pods),
        lambda: status.build_job_status("default/job", job, pods, backend="jobset"),
        lambda: [
            (status.pod_reason(p), status.pod_restarts(p), status.pod_has_logs(p), status.pod_task_name(p)) for p in status.sort_pods(pods)
        ],
        lambda: [status.object_name(p) for p in [job, *pods]],
    ):
        one_line_error(read)


def test_a_trailing_newline_does_not_pass_for_a_name() -> None:
    """``$`` in a Python pattern also matches before a final newline: every name check ends at ``\\Z``."""
    from tfjob.backends.kubeflow.render import check_k8s_name
    from tfjob.backends.vertex.submission import check_region
    from tfjob.scaffold import init_template
    from tfjob.tuning.study import ParameterSpec

    for check in (
        lambda: check_region("us-central1\n"),
        lambda: check_k8s_name("census\n", "--name"),
        lambda: ParameterSpec("lr\n", "DOUBLE", 0.1, 1.0),
        lambda: init_template("/nonexistent-dir", "census-ps", package_name="census\n"),
        lambda: build_spec(dict(name="j", image="python:3\n")),
    ):
        with pytest.raises(TfjobError, match=r"\\n"):  # the newline is shown escaped, on the one line
            check()
