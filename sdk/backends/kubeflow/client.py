"""The official ``kubernetes`` client behind the few calls the kubeflow backend makes.

This is the only module that imports ``kubernetes``, and only when a
:class:`KubeClient` is made, so ``tfjob --help`` and ``tfjob render`` never load it.
Objects come back as plain dicts (the JSON the API server sent), which the pure
functions of :mod:`tfjob.backends.kubeflow.status` read.

Errors are translated here, one clear line each:

- no kubeconfig, an unknown context, a missing namespace, a name already taken
  (409) → :class:`~tfjob.errors.UsageError`;
- 401 / 403 → :class:`~tfjob.errors.AuthError`;
- the TFJob resource missing (404 on ``tfjobs`` and on the ``kubeflow.org/v1``
  discovery document: the training operator is not installed), an unreachable or
  failing API server → :class:`~tfjob.errors.BackendError`;
- a TFJob that is not there → :class:`~tfjob.errors.JobNotFoundError`.
"""

from __future__ import annotations

import builtins
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ...config.files import read_config_file
from ...errors import AuthError, BackendError, JobNotFoundError, SpecError, UsageError
from .kinds import CONFIGMAP, JOBSET, RUNTIME, TFJOB, TRAINJOB, Resource

if TYPE_CHECKING:
    from ...description.knobs import StrPath

__all__ = ["CONFIGMAP", "JOBSET", "RUNTIME", "TFJOB", "TRAINJOB", "KubeClient", "Resource", "find_kubeconfig", "iter_stream_lines"]

#: Seconds to wait for an answer to an ordinary request.
REQUEST_TIMEOUT = 30.0
#: The largest kubeconfig read (one with many clusters is a few hundred KiB).
MAX_KUBECONFIG_BYTES = 16 * 1024 * 1024
#: Seconds a followed log may stay silent (the client takes no "forever").
FOLLOW_READ_TIMEOUT = 7 * 24 * 3600.0
_SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def find_kubeconfig(kubeconfig: StrPath | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The kubeconfig to use: ``--kubeconfig``, else ``$KUBECONFIG``, else ``~/.kube/config``.

    Returns None when there is none (``$KUBECONFIG`` may list several files, joined
    by ``os.pathsep``; the client merges the ones that exist).

    Raises:
        UsageError: ``--kubeconfig`` names a file that does not exist.
    """
    env = os.environ if env is None else env
    if kubeconfig:
        path = Path(kubeconfig).expanduser()
        if not path.is_file():
            missing = "is not a regular file" if path.exists() else "does not exist"
            raise SpecError(field="kubeconfig", value=kubeconfig, problem=missing, fix="give the path of a kubeconfig file")
        return str(path.resolve())
    listed = env.get("KUBECONFIG")
    if listed:
        paths = [str(Path(p).expanduser().resolve()) for p in listed.split(os.pathsep) if p]
        existing = [p for p in paths if Path(p).is_file()]
        return os.pathsep.join(existing) if existing else None
    default = Path(env.get("HOME") or Path.home()) / ".kube" / "config"
    return str(default) if default.is_file() else None


class KubeClient:
    """A connection to one cluster, from a kubeconfig (and context) or from inside a pod.

    Args:
        kubeconfig: the kubeconfig file (default ``$KUBECONFIG``, ``~/.kube/config``).
        context: the kubeconfig context (default: its current context).
        request_timeout: seconds to wait for each answer.

    Raises:
        UsageError: no kubeconfig can be found (and we are not in a pod), or the
            context is not in it.
        BackendUnavailableError: the ``kubernetes`` package is missing.
    """

    def __init__(
        self,
        kubeconfig: StrPath | None = None,
        context: str | None = None,
        request_timeout: float = REQUEST_TIMEOUT,
        *,
        api_client: Any = None,
        namespace: str | None = None,
        backend: str = "kubeflow",
    ) -> None:
        try:
            from kubernetes import client, config
        except ImportError as e:
            from ...errors import missing_extra

            raise missing_extra("kubernetes", "Kubernetes", e) from e
        self.timeout = request_timeout
        self.context = context
        if api_client is not None:
            # A client the caller configured (``KubeflowBackend(api_client=…)``): no kubeconfig is read.
            self.kubeconfig = None
            self.namespace = namespace or "default"
            self._use(client, api_client)
            return
        self.kubeconfig = find_kubeconfig(kubeconfig)
        configuration = client.Configuration()
        if self.kubeconfig is None and not context and os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=configuration)
            self.namespace = _read_text(_SERVICE_ACCOUNT_NAMESPACE) or "default"
        elif self.kubeconfig is None:
            raise UsageError(
                problem=f"no kubeconfig for {{backend={backend}}}: pass {{kubeconfig=FILE}}, set KUBECONFIG, or create "
                "~/.kube/config (e.g. gcloud container clusters get-credentials CLUSTER)"
            )
        else:
            self.namespace = self._load(config, configuration)
        # One quick retry, not urllib3's default three with back-off, for an API server that is down.
        configuration.retries = 1
        self._use(client, client.ApiClient(configuration))

    def _use(self, client: Any, api_client: Any) -> None:
        self.server = api_client.configuration.host
        self._api = api_client
        self._custom = client.CustomObjectsApi(self._api)
        self._core = client.CoreV1Api(self._api)
        import urllib3

        # What a call can raise that is the server's or the network's doing, not ours.
        self._errors: tuple[type[BaseException], ...] = (
            client.exceptions.ApiException,
            urllib3.exceptions.HTTPError,
            OSError,
        )

    def _load(self, config: Any, configuration: Any) -> str:
        import yaml
        from kubernetes.config.config_exception import ConfigException

        assert self.kubeconfig is not None
        # The client's own answer to a kubeconfig of the wrong shape is a TypeError or an
        # AttributeError from inside it; the shape is checked first, these are the fallback.
        unreadable = (ConfigException, OSError, ValueError, yaml.YAMLError, TypeError, AttributeError, KeyError)
        for path in self.kubeconfig.split(os.pathsep):
            # Read within bounds before the client reads it, as every document is: a regular
            # UTF-8 file of at most 16 MiB holding a YAML mapping, shallow, its aliases not
            # expanding it beyond bounds and never containing itself (the client's own errors
            # on anything else are tracebacks, and it would walk an alias bomb).
            document = read_config_file(
                path,
                "kubeconfig",
                max_bytes=MAX_KUBECONFIG_BYTES,
                what="a kubeconfig (a few KiB)",
                where=f"kubeconfig {path} cannot be read",
                as_json=False,
            )
            _check_kubeconfig_shape(path, document)
        try:
            contexts, current = config.list_kube_config_contexts(config_file=self.kubeconfig)
        except unreadable as e:
            raise UsageError(f"kubeconfig {self.kubeconfig} cannot be read: {_one_line(e)}") from None
        names = [c.get("name") for c in contexts or []]
        chosen = current
        if self.context:
            chosen = next((c for c in contexts or [] if c.get("name") == self.context), None)
            if chosen is None:
                raise UsageError(
                    field="context",
                    value=self.context,
                    problem=f"is not in {self.kubeconfig}; its contexts are {', '.join(map(str, names)) or 'none'}",
                )
        try:
            config.load_kube_config(
                config_file=self.kubeconfig, context=self.context, client_configuration=configuration, persist_config=False
            )
        except unreadable as e:
            raise UsageError(f"kubeconfig {self.kubeconfig} cannot be used: {_one_line(e)}") from None
        namespace = ((chosen or {}).get("context") or {}).get("namespace") or "default"
        if not isinstance(namespace, str):
            raise UsageError(f"kubeconfig {self.kubeconfig}: the context's namespace must be a name, not {namespace!r:.60}")
        return namespace

    def close(self) -> None:
        self._api.close()

    # -- errors --------------------------------------------------------------------------
    def _translate(
        self, error: BaseException, action: str, namespace: str, name: str | None = None, resource: "Resource | None" = None
    ) -> Exception:
        """A tfjob error for a failed call (the caller raises it ``from`` the original)."""
        resource = resource or TFJOB
        from kubernetes.client.exceptions import ApiException

        if not isinstance(error, ApiException) or not error.status:
            reason = getattr(error, "reason", None) or error
            return BackendError(f"cannot reach the Kubernetes API at {self.server} to {action}: {reason}")
        message = _status_message(error)
        code = error.status
        if code == 401:
            return AuthError(
                f"the Kubernetes API at {self.server} rejected the kubeconfig's credentials ({message}); "
                "refresh them (e.g. gcloud container clusters get-credentials CLUSTER) and retry"
            )
        if code == 403:
            return AuthError(
                f"forbidden to {action} in namespace {namespace!r}: {message}; ask a cluster admin for a Role that "
                f"allows it (check with `kubectl auth can-i create {resource.plural}.{resource.group} -n {namespace}`)"
            )
        if code == 404:
            if resource.group and not self.crd_installed(resource):
                return BackendError(
                    f"the {resource.kind} resource ({resource.plural}.{resource.group}/{resource.version}) is not installed "
                    f"on the cluster at {self.server}: " + resource.install_hint
                )
            if "namespaces" in message and "not found" in message:
                return UsageError(
                    field="namespace",
                    value=namespace,
                    problem=f"does not exist on the cluster at {self.server}",
                    fix="pass {namespace} of an existing one (kubectl get namespaces)",
                )
            if name is not None:
                return JobNotFoundError(
                    f"{resource.kind} {namespace}/{name} is not on the cluster at {self.server} (deleted, or removed "
                    "after its ttlSecondsAfterFinished)"
                )
        if code == 409:
            return UsageError(
                problem=f"a {resource.kind} named {name!r} already exists in namespace {namespace!r}",
                fix=f"pick another {{name}}, or delete it first with `tfjob cancel {namespace}/{name}`",
            )
        if code in (400, 422):
            return SpecError(f"the Kubernetes API refused to {action}: {message}")
        return BackendError(f"the Kubernetes API at {self.server} answered {code} {error.reason} to {action}: {message}")

    def crd_installed(self, resource: "Resource | None" = None) -> bool:
        """True when the cluster serves the resource (default ``tfjobs`` in ``kubeflow.org/v1``)."""
        from kubernetes.client.exceptions import ApiException

        resource = resource or TFJOB
        where = f"{resource.group}/{resource.version}"
        try:
            resources = self._custom.get_api_resources(resource.group, resource.version, _request_timeout=self.timeout)
        except ApiException as e:
            if e.status == 404:
                return False
            raise self._translate(e, f"discover {where}", "-") from e
        except self._errors as e:
            raise self._translate(e, f"discover {where}", "-") from e
        return any(r.name == resource.plural for r in resources.resources or [])

    # -- any custom resource: create, get, list, delete -----------------------------------------
    def create(self, resource: Resource, namespace: str | None, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Create a custom resource (in ``namespace``, or cluster-wide for a cluster-scoped one);
        return it as the API server stored it.

        Raises:
            SpecError: the manifest breaks the resource's admission rules (``Resource.check``);
                nothing is sent.
        """
        if resource.check is not None:
            resource.check(manifest)
        r, name = resource, manifest["metadata"]["name"]
        try:
            created: dict[str, Any]
            if r.cluster_scoped:
                created = self._custom.create_cluster_custom_object(
                    r.group, r.version, r.plural, dict(manifest), _request_timeout=self.timeout
                )
                return created
            assert namespace is not None
            created = self._custom.create_namespaced_custom_object(
                r.group, r.version, namespace, r.plural, dict(manifest), _request_timeout=self.timeout
            )
            return created
        except self._errors as e:
            raise self._translate(e, f"create {r.kind} {name}", namespace or "-", name, r) from e

    def get(self, resource: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        """The custom resource ``namespace/name`` (``name``, cluster-scoped)."""
        r = resource
        try:
            found: dict[str, Any]
            if r.cluster_scoped:
                found = self._custom.get_cluster_custom_object(r.group, r.version, r.plural, name, _request_timeout=self.timeout)
                return found
            assert namespace is not None
            found = self._custom.get_namespaced_custom_object(r.group, r.version, namespace, r.plural, name, _request_timeout=self.timeout)
            return found
        except self._errors as e:
            raise self._translate(e, f"get {r.kind} {name}", namespace or "-", name, r) from e

    def list(self, resource: Resource, namespace: str, label_selector: str | None = None) -> builtins.list[dict[str, Any]]:
        """The custom resources of a namespace (matching ``label_selector``)."""
        r = resource
        try:
            answer = self._custom.list_namespaced_custom_object(
                r.group, r.version, namespace, r.plural, label_selector=label_selector, _request_timeout=self.timeout
            )
        except self._errors as e:
            raise self._translate(e, f"list {r.kind}s", namespace, None, r) from e
        return list(answer.get("items") or [])

    def delete(self, resource: Resource, namespace: str | None, name: str) -> None:
        """Delete the custom resource; the garbage collector deletes what it owns (a job's pods)."""
        r = resource
        try:
            if r.cluster_scoped:
                self._custom.delete_cluster_custom_object(r.group, r.version, r.plural, name, _request_timeout=self.timeout)
                return
            assert namespace is not None
            self._custom.delete_namespaced_custom_object(
                r.group, r.version, namespace, r.plural, name, propagation_policy="Background", _request_timeout=self.timeout
            )
        except self._errors as e:
            raise self._translate(e, f"delete {r.kind} {name}", namespace or "-", name, r) from e

    # -- ConfigMaps (a job's shipped packages) ----------------------------------------------
    def create_configmap(self, namespace: str, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Create the ConfigMap; return it as stored (its ``binaryData`` left out)."""
        name = manifest["metadata"]["name"]
        try:
            response = self._core.create_namespaced_config_map(
                namespace, dict(manifest), _preload_content=False, _request_timeout=self.timeout
            )
        except self._errors as e:
            raise self._translate(e, f"create ConfigMap {name}", namespace, name, CONFIGMAP) from e
        stored: dict[str, Any] = json.loads(response.data)
        stored.pop("binaryData", None)
        return stored

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any]:
        """The ConfigMap ``namespace/name`` (its metadata: the data is not read)."""
        try:
            response = self._core.read_namespaced_config_map(name, namespace, _preload_content=False, _request_timeout=self.timeout)
        except self._errors as e:
            raise self._translate(e, f"get ConfigMap {name}", namespace, name, CONFIGMAP) from e
        return {k: v for k, v in json.loads(response.data).items() if k not in ("data", "binaryData")}

    def delete_configmap(self, namespace: str, name: str) -> None:
        """Delete the ConfigMap ``namespace/name``."""
        try:
            self._core.delete_namespaced_config_map(name, namespace, _request_timeout=self.timeout)
        except self._errors as e:
            raise self._translate(e, f"delete ConfigMap {name}", namespace, name, CONFIGMAP) from e

    # -- pods ------------------------------------------------------------------------------
    def list_pods(self, namespace: str, label_selector: str) -> builtins.list[dict[str, Any]]:
        """Pods matching ``label_selector``, as dicts."""
        try:
            response = self._core.list_namespaced_pod(
                namespace, label_selector=label_selector, _preload_content=False, _request_timeout=self.timeout
            )
            return list(json.loads(response.data).get("items") or [])
        except self._errors as e:
            raise self._translate(e, "list pods", namespace) from e

    def read_log(self, namespace: str, pod: str, container: str, tail: int | None = None) -> str:
        """A container's log so far (its last ``tail`` lines)."""
        try:
            # Raw bytes: the client would otherwise parse a log that looks like JSON.
            response = self._core.read_namespaced_pod_log(
                pod, namespace, container=container, tail_lines=tail, _preload_content=False, _request_timeout=self.timeout
            )
            text: str = response.data.decode("utf-8", errors="replace")
            return text
        except self._errors as e:
            raise self._translate(e, f"read the log of pod {pod}", namespace) from e

    def open_log_stream(self, namespace: str, pod: str, container: str, tail: int | None = None) -> Any:
        """A followed log: an open HTTP response whose lines arrive until the container ends.

        Returns None when the log cannot be read yet or any more (the container is
        still waiting to start: 400; the pod is gone: 404). Close the response to stop early.
        """
        from kubernetes.client.exceptions import ApiException

        try:
            return self._core.read_namespaced_pod_log(
                pod,
                namespace,
                container=container,
                follow=True,
                tail_lines=tail,
                _preload_content=False,
                # Connect within the usual timeout; then wait as long as a training task may run.
                _request_timeout=(self.timeout, FOLLOW_READ_TIMEOUT),
            )
        except ApiException as e:
            if e.status in (400, 404):
                return None
            raise self._translate(e, f"follow the log of pod {pod}", namespace) from e
        except self._errors as e:
            raise self._translate(e, f"follow the log of pod {pod}", namespace) from e


#: A streamed log line longer than this is handed over in pieces (as local logs cut theirs).
MAX_LOG_LINE = 64 * 1024


def iter_stream_lines(response: Any) -> Iterator[str]:
    """The lines of a streamed HTTP response, decoded, without their line ends."""
    pending = b""
    for chunk in response.stream(4096, decode_content=True):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        if len(pending) > MAX_LOG_LINE:
            # A line without an end (a progress bar) is shown in pieces, never held whole.
            lines.append(pending)
            pending = b""
        for line in lines:
            yield line.decode("utf-8", errors="replace").rstrip("\r")
    if pending:
        yield pending.decode("utf-8", errors="replace").rstrip("\r")


#: A kubeconfig's lists and the key of the mapping each entry carries beside its name.
_KUBECONFIG_LISTS = {"clusters": "cluster", "contexts": "context", "users": "user"}


def _check_kubeconfig_shape(path: str, document: Any) -> None:
    """Refuse, in one line, a kubeconfig whose lists or entries are not what kubectl writes."""
    where = f"kubeconfig {path} is not a kubeconfig"
    if document is None:
        return  # empty: the client says so
    if not isinstance(document, dict):
        raise UsageError(f"{where}: a YAML mapping of clusters, contexts and users, not a {type(document).__name__}")
    current = document.get("current-context")
    if current is not None and not isinstance(current, str):
        raise UsageError(f"{where}: current-context must be a name, not {current!r:.60}")
    for key, payload in _KUBECONFIG_LISTS.items():
        entries = document.get(key)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise UsageError(f"{where}: {key} must be a list, not {entries!r:.60}")
        for entry in entries:
            if not (isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get(payload) or {}, dict)):
                raise UsageError(f"{where}: each of its {key} is a mapping with a name and a {payload} mapping, not {entry!r:.60}")


def _one_line(error: BaseException) -> str:
    """A kubeconfig error in one line: a YAML mistake as its line and problem."""
    mark, problem = getattr(error, "problem_mark", None), getattr(error, "problem", None)
    if mark is not None and problem:
        return f"not valid YAML (line {mark.line + 1}): {problem}"
    return " ".join(str(error).split())


def _status_message(error: Any) -> str:
    try:
        body = json.loads(error.body or "")
    except (TypeError, ValueError):
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return str(error.reason or error.body or f"HTTP {error.status}")


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None
