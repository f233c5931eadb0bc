"""Pod templates, labels, queues and trainer arguments on every Kubernetes backend (issue 24).

A pod template is checked against the Kubernetes schema of the installed client once merged
(every wrong type one line naming the field's path, never a traceback or a manifest the API
server refuses); it cannot set tfjob's own variables or volumes; the operators' labels and
a queue that is no queue name are refused on TFJob, JobSet and TrainJob alike; and what the
user typed as trainer arguments reaches the trainer after the kubelet's ``$(VAR)`` expansion.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reliability import Reliability
from tfjob.backends import flag_words
from tfjob.backends.kubeflow.options import KubernetesOptions, TFJobOptions
from tfjob.backends.kubeflow.render import render_tfjob
from tfjob.backends.kubeflow.render_jobset import render_jobset
from tfjob.backends.kubeflow.render_trainjob import render_runtime
from tfjob.errors import TfjobError
from tfjob.description.request import build_spec

IMAGE = "gcr.io/p/t:1"
BACKENDS: dict[str, Callable[..., dict[str, Any]]] = {
    "kubeflow": lambda spec, **o: render_tfjob(spec, TFJobOptions(**o)),
    "jobset": lambda spec, **o: render_jobset(spec, KubernetesOptions(**o)),
    "trainjob": lambda spec, **o: render_runtime(spec, KubernetesOptions(**o)),
}


def pods(manifest: Any) -> Iterator[dict[str, Any]]:
    """Every pod spec in a manifest (a mapping holding ``containers``)."""
    if isinstance(manifest, dict):
        if isinstance(manifest.get("containers"), list):
            yield manifest
            return
        for value in manifest.values():
            yield from pods(value)
    elif isinstance(manifest, list):
        for value in manifest:
            yield from pods(value)


def one_line(render: Callable[[], Any], *needles: str) -> str:
    with pytest.raises(TfjobError, match=r"^[^\n]+$") as info:  # one line, not empty
        render()
    message = info.value.worded("cli", flag_words)  # the needles are the CLI's words
    assert "\n" not in message and message.strip() and "\n" not in str(info.value)
    for needle in needles:
        assert needle in message, message
    return message


# -- wrong types: each names the field's path --------------------------------------------------
BAD_TEMPLATES = [
    # (template, job dir or None, what the line says)
    (
        "spec:\n  containers:\n  - name: tensorflow\n    env: {A: '1'}\n",
        None,
        "spec.containers[tensorflow].env must be a list, not a mapping",
    ),
    (
        "spec:\n  containers:\n  - name: tensorflow\n    volumeMounts: 3\n",
        "/job",
        "spec.containers[tensorflow].volumeMounts must be a list",
    ),
    (
        "spec:\n  securityContext: 3\n  containers:\n  - name: tensorflow\n    volumeMounts: [{name: v, mountPath: /job}]\n  volumes: [{name: v, emptyDir: {}}]\n",
        "/job",
        "spec.securityContext must be a mapping (a PodSecurityContext), not the number 3",
    ),
    ("spec:\n  nodeSelector: [a, b]\n", None, "spec.nodeSelector must be a mapping of text (KEY: VALUE), not a list"),
    ("spec:\n  tolerations: {key: a}\n", None, "spec.tolerations must be a list, not a mapping"),
    ("spec:\n  nodeSelector: !!set {a, b}\n", None, "spec.nodeSelector must be a mapping of text (KEY: VALUE), not a set (!!set)"),
    ("spec:\n  nodeSelector: {pool: 3}\n", None, "spec.nodeSelector.pool must be text, not the number 3 (quote it)"),
    (
        "spec:\n  containers:\n  - name: tensorflow\n    env: [{name: A, value: 1}]\n",
        None,
        "spec.containers[tensorflow].env[A].value must be text",
    ),
    ("spec:\n  nodeselector: {a: b}\n", None, "spec.nodeselector is not a field of a PodSpec in the kubernetes"),
    ("spec:\n  tolerations: [{key: a, tolerationSeconds: soon}]\n", None, "spec.tolerations[0].tolerationSeconds must be a whole number"),
    ("spec:\n  activeDeadlineSeconds: 99999999999999999999\n", None, "beyond what Kubernetes takes (a 64-bit integer"),
    ("spec:\n  volumes: [{hostPath: {path: /x}}]\n", None, "spec.volumes[0].name is required"),
    ("spec:\n  hostNetwork: 'yes'\n", None, "spec.hostNetwork must be true or false"),
    ("spec:\n  priority: !!omap [{a: 1}]\n", None, "spec.priority must be a whole number, not a list"),
    ("spec:\n  tolerations: !!pairs [{key: a}]\n", None, "spec.tolerations[0] must be a mapping (a Toleration), not a list of pairs"),
    (
        "spec:\n  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [x]}}\n",
        None,
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution must be a mapping",
    ),
    (
        "worker:\n  spec:\n    initContainers: [{name: init, image: busybox, args: [1, 2]}]\n",
        None,
        "spec.initContainers[init].args[0] must be text",
    ),
]


@pytest.mark.reliability
@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("template, job_dir, needle", BAD_TEMPLATES)
def test_a_pod_template_of_the_wrong_types_is_one_line_naming_the_field(
    tmp_path: Path, reliability: Reliability, backend: str, template: str, job_dir: str | None, needle: str
) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text(template)
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, workers=2, job_dir=job_dir))
    reliability.tried()
    one_line(lambda: BACKENDS[backend](spec, pod_template=str(path)), f"--pod-template {str(path)!r}", needle)


def test_a_pod_template_kubernetes_takes_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text(
        "metadata:\n  labels: {team: ml}\n"
        "spec:\n  nodeSelector: {pool: gpu}\n  tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]\n"
        "  containers:\n  - name: tensorflow\n    resources: {limits: {cpu: 2, memory: 4Gi}}\n"
        "    livenessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 5}\n"
        "    volumeMounts: [{name: data, mountPath: /job}]\n"
        "  - name: side\n    image: busybox\n    readinessProbe: {tcpSocket: {port: http}}\n"
        "  volumes: [{name: data, persistentVolumeClaim: {claimName: shared}}]\n"
    )
    for backend, render in BACKENDS.items():
        spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, workers=1, job_dir="/job/out"))
        manifest = render(spec, pod_template=str(path))
        for pod in pods(manifest):
            assert pod["nodeSelector"] == {"pool": "gpu"}, backend
            assert pod["securityContext"] == {"fsGroup": 1000}
            assert pod["containers"][0]["resources"]["limits"]["cpu"] == 2


def test_default_beside_spec_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text("default: {}\nspec: {}\n")
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE))
    for render in BACKENDS.values():
        one_line(lambda: render(spec, pod_template=str(path)), "mixes pod template keys (spec) with roles (default)")


# -- tfjob's own variables and volumes ---------------------------------------------------------
OWN = [
    ("spec:\n  containers: [{name: tensorflow, env: [{name: TF_CONFIG, value: '{}'}]}]\n", "env TF_CONFIG is set by tfjob"),
    (
        "spec:\n  containers: [{name: tensorflow, env: [{name: TFJOB_JOBSET_ROLES, value: 'chief:1'}]}]\n",
        "env TFJOB_JOBSET_ROLES is set by tfjob",
    ),
    ("spec:\n  containers: [{name: tensorflow, env: [{name: JOB_INDEX, value: '3'}]}]\n", "env JOB_INDEX is set by tfjob"),
    ("spec:\n  containers: [{name: tensorflow, env: [{name: AIP_MODEL_DIR, value: /x}]}]\n", "env AIP_MODEL_DIR is set by tfjob"),
    ("spec:\n  volumes: [{name: tfjob-packages, hostPath: {path: /}}]\n", "spec.volumes tfjob-packages is tfjob's"),
    (
        "spec:\n  containers: [{name: tensorflow, volumeMounts: [{name: host, mountPath: /tfjob/packages}]}]\n  volumes: [{name: host, hostPath: {path: /}}]\n",
        "at /tfjob/packages is tfjob's",
    ),
    ("metadata:\n  labels: {jobset.sigs.k8s.io/jobset-name: other}\n", "is the operator's"),
    ("metadata:\n  labels: {batch.kubernetes.io/job-name: other}\n", "is the operator's"),
]


@pytest.mark.reliability
@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("template, needle", OWN)
def test_a_pod_template_cannot_take_over_tfjobs_own_variables_and_volumes(
    tmp_path: Path, reliability: Reliability, backend: str, template: str, needle: str
) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text(template)
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, workers=1))
    reliability.tried()
    one_line(lambda: BACKENDS[backend](spec, pod_template=str(path)), needle)


@pytest.mark.reliability
@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize(
    "options, labels, needle",
    [
        ({}, {"jobset.sigs.k8s.io/jobset-name": "other"}, "label 'jobset.sigs.k8s.io/jobset-name' is set by the operator"),
        ({}, {"training.kubeflow.org/job-name": "x"}, "is set by the operator"),
        ({}, {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}, "is set by the operator"),
        ({}, {"job-name": "x"}, "is set by the operator"),
        ({"queue": "a b"}, {}, "--queue 'a b' is not a queue name"),
        ({"queue": "Team"}, {}, "--queue 'Team' is not a queue name"),
        ({"queue": "q" * 64}, {}, "is not a queue name"),
        ({"queue": "a\nb"}, {}, "is not a queue name"),
    ],
)
def test_reserved_labels_and_bad_queues_are_refused_on_every_kubernetes_backend(
    reliability: Reliability, backend: str, options: dict[str, Any], labels: dict[str, str], needle: str
) -> None:
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, workers=1, labels=labels))
    reliability.tried()
    one_line(lambda: BACKENDS[backend](spec, **options), needle)


def test_a_jobset_variable_in_env_is_refused() -> None:
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, workers=1, env={"JOB_INDEX": "3"}))
    for backend in ("jobset", "trainjob"):
        one_line(lambda: BACKENDS[backend](spec), "--env JOB_INDEX is set by tfjob in every JobSet pod")


# -- $(VAR) reaches the trainer as typed -------------------------------------------------------
def kubelet_expand(text: str, variables: dict[str, str]) -> str:
    """The kubelet's expansion of a container's command and args, as Kubernetes implements it
    (third_party/forked/golang/expansion: ``$$`` is ``$``, ``$(NAME)`` a defined variable's
    value or itself, any other ``$`` kept)."""
    out: list[str] = []
    checkpoint = cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            rest = text[cursor + 1 :]
            if rest[0] == "$":
                read, advance = "$", 1
            elif rest[0] == "(":
                close = rest.find(")", 1)
                if close != -1:
                    name = rest[1:close]
                    read, advance = variables.get(name, f"$({name})"), close + 1
                else:
                    read, advance = "$(", 1
            else:
                read, advance = "$" + rest[0], 1
            out.append(read)
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


def test_the_kubelet_expansion_port_expands_as_kubernetes_documents() -> None:
    env = {"LR": "0.1", "HOME": "/root"}
    assert kubelet_expand("--lr=$(LR)", env) == "--lr=0.1"
    assert kubelet_expand("$$(LR)", env) == "$(LR)"
    assert kubelet_expand("$(UNSET)", env) == "$(UNSET)"
    assert kubelet_expand("a$$b$x$", env) == "a$b$x$"
    assert kubelet_expand("$(HOME", env) == "$(HOME"


TYPED = ["--lr=$(LR)", "$(HOME)/out", "cost=$$5", "$", "a$b", "$$(LR)", "$(", "x)$(y", "--flag=$(TF_CONFIG)"]
#: What a pod of each backend has defined when its container starts (the kubelet expands these).
POD_ENV = {"LR": "0.1", "HOME": "/root", "TF_CONFIG": "{}", "y": "Y", "JOB_INDEX": "0"}


@pytest.mark.reliability
@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_trainer_arguments_reach_the_trainer_as_typed(backend: str, reliability: Reliability) -> None:
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, workers=1, args=TYPED))
    manifest = BACKENDS[backend](spec)
    for pod in pods(manifest):
        container = pod["containers"][0]
        seen = [kubelet_expand(arg, POD_ENV) for arg in container["args"]]
        assert seen[-len(TYPED) :] == TYPED, container["args"]
    reliability.tried(len(TYPED))
    # A container's own entrypoint (--command) and its arguments too.
    custom = build_spec(dict(name="j", image=IMAGE, command=["sh", "-c", "echo $(LR) $$"], args=["$(LR)"]))
    container = next(pods(BACKENDS[backend](custom)))["containers"][0]
    assert [kubelet_expand(a, POD_ENV) for a in container["command"]] == ["sh", "-c", "echo $(LR) $$"]
    assert [kubelet_expand(a, POD_ENV) for a in container["args"]] == ["$(LR)"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(arg=st.text(alphabet="$()LRab-=", max_size=12))
def test_any_argument_survives_the_kubelet(arg: str) -> None:
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, args=[arg or "x"]))
    container = next(pods(render_tfjob(spec, TFJobOptions())))["containers"][0]
    assert kubelet_expand(container["args"][-1], POD_ENV) == (arg or "x")


@pytest.mark.reliability
def test_the_cli_says_a_wrong_pod_template_in_one_line(tmp_path: Path, tfjob_exe: str, reliability: Reliability) -> None:
    trainer = tmp_path / "trainer"
    trainer.mkdir()
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text("print('hi')\n")
    path = tmp_path / "pod.yaml"
    path.write_text("spec:\n  containers:\n  - name: tensorflow\n    env: {A: '1'}\n")
    for backend in sorted(BACKENDS):
        out = subprocess.run(
            [tfjob_exe, "submit", str(trainer), "-m", "trainer.task", "--backend", backend, "--image", IMAGE, "--dry-run", "--pod-template", str(path)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        reliability.tried()
        reliability.output(out.stderr)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: --pod-template"), out.stderr[-2000:]
        assert "env must be a list, not a mapping" in lines[0]
    # The expanded manifest of a good one is JSON all through (no set, no date).
    path.write_text("spec:\n  containers:\n  - name: tensorflow\n    env: [{name: A, value: '1'}]\n")
    out = subprocess.run(
        [tfjob_exe, "render", str(trainer), "-m", "trainer.task", "--backend", "jobset", "--image", IMAGE, "--pod-template", str(path), "-o", "json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    rendered = json.loads(out.stdout)
    assert "JobSet" in [item["kind"] for item in rendered.get("items", [rendered])]


def test_without_the_kubernetes_client_a_pod_template_is_one_line(tmp_path: Path) -> None:
    import sys

    path = tmp_path / "pod.yaml"
    path.write_text("spec:\n  nodeSelector: {pool: gpu}\n")
    # The kubernetes extra not installed: its import fails as it would (sys.modules[name] = None).
    code = (
        "import sys; sys.modules['kubernetes'] = None\n"
        "from tfjob.cli.main import main\n"
        f"main(['render', '-m', 'trainer.task', '--image', {IMAGE!r}, '--backend', 'jobset', '--pod-template', {str(path)!r}])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "pip install 'tfjob[kubernetes]'" in out.stderr
