"""``ClusterSpec``: a stdlib-only twin of ``tf.train.ClusterSpec``.

The in-container bootstrap must work out a task's cluster before TensorFlow is
imported (and on machines where it is not installed at all), so this class
reproduces TensorFlow's behaviour without TensorFlow: the same accessors, the same
dense/sparse rules, and the same exception types and messages for a bad cluster.
Parity tests run every case against TensorFlow's own class.

Where TensorFlow keeps a ``ClusterDef`` protocol buffer, this class keeps a plain
sorted list of ``(job name, {task index: address})`` built by the same checks, so
copying a spec (which TensorFlow does through the protobuf) also behaves the same:
job names come back sorted and as ``str``.
"""

from __future__ import annotations

# Not `from typing import TYPE_CHECKING`: importing typing costs the bootstrap ~3 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..errors import ClusterConfigError

#: The canonical roles, in the order of Vertex worker pools 0..3.
ROLES: tuple[str, ...] = ("chief", "worker", "ps", "evaluator")


def config_error(message: str) -> ClusterConfigError:
    """A :class:`~tfjob.errors.ClusterConfigError` saying ``message``; :mod:`tfjob.errors` is
    imported only here, when one is raised: a task whose variables are well formed never
    imports it (about 0.6 ms of every task's start, 2.6 M instructions)."""
    from ..errors import ClusterConfigError

    return ClusterConfigError(message)


# The range of a protobuf int32 map key (ClusterDef's task index).
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _as_bytes(value: Any) -> bytes:
    """What ``tensorflow.python.util.compat.as_bytes`` accepts, else TypeError."""
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError(f"Expected binary or unicode string, got {value!r}")


def _is_cluster_def(value: Any) -> bool:
    # A tf.train.ClusterDef, recognised without importing TensorFlow's protobufs.
    return type(value).__name__ == "ClusterDef" and hasattr(value, "job")


class ClusterSpec:
    """A cluster as a set of tasks organised into jobs, like ``tf.train.ClusterSpec``.

    Args:
        cluster: a dict mapping job names to a list of addresses or to a dict of
            task index → address (sparse); another :class:`ClusterSpec`; or a
            ``tf.train.ClusterDef``.

    Raises:
        TypeError: ``cluster`` is none of those, a job's tasks are neither a list
            nor a dict, or a job name or address is not a string.
        ValueError: a sparse task index is not an integer.
    """

    #: (job name, task index → address) for each job, by name: what ``tf.train.ClusterDef`` holds.
    _cluster_def: list[tuple[str, dict[int, str]]]

    def __init__(self, cluster: Any) -> None:
        if isinstance(cluster, dict):
            self._cluster_spec: dict[Any, dict[int, Any]] = {}
            for job_name, tasks in cluster.items():
                if isinstance(tasks, (list, tuple)):
                    job_tasks = dict(enumerate(tasks))
                elif isinstance(tasks, dict):
                    job_tasks = {int(i): task for i, task in tasks.items()}
                else:
                    raise TypeError("The tasks for job %r must be a list or a dictionary from integers to strings." % job_name)
                self._cluster_spec[job_name] = job_tasks
            self._make_cluster_def()
        elif isinstance(cluster, ClusterSpec):
            self._cluster_def = [(name, dict(tasks)) for name, tasks in cluster._cluster_def]
            self._cluster_spec = {name: dict(tasks) for name, tasks in self._cluster_def}
        elif _is_cluster_def(cluster):
            self._cluster_def = [(job.name, dict(sorted(job.tasks.items()))) for job in cluster.job]
            self._cluster_spec = {name: dict(tasks) for name, tasks in self._cluster_def}
        else:
            raise TypeError(
                "`cluster` must be a dictionary mapping one or more job names to lists of network addresses, "
                "or a `ClusterDef` protocol buffer"
            )

    def __bool__(self) -> bool:
        return bool(self._cluster_spec)

    # TensorFlow compares its internal dict with whatever it is given; keep that,
    # so a spec equals another spec (either class) with the same tasks.
    def __eq__(self, other: object) -> bool:
        return self._cluster_spec == other

    def __ne__(self, other: object) -> bool:
        return self._cluster_spec != other

    __hash__ = None  # type: ignore[assignment]  # mutable-by-contract, like TensorFlow's

    def __repr__(self) -> str:
        key_values = self.as_dict()
        items = [repr(k) + ": " + repr(key_values[k]) for k in sorted(key_values)]
        return "ClusterSpec({" + ", ".join(items) + "})"

    def as_dict(self) -> dict[Any, Any]:
        """Job name → list of addresses (dense jobs) or dict index → address (sparse)."""
        ret: dict[Any, Any] = {}
        for job in self.jobs:
            task_indices = self.task_indices(job)
            if len(task_indices) == 0:
                ret[job] = {}
                continue
            if max(task_indices) + 1 == len(task_indices):
                ret[job] = self.job_tasks(job)
            else:
                ret[job] = {i: self.task_address(job, i) for i in task_indices}
        return ret

    @property
    def jobs(self) -> list[Any]:
        """The job names, in the order the cluster gave them."""
        return list(self._cluster_spec.keys())

    def _job(self, job_name: Any) -> dict[int, Any]:
        try:
            return self._cluster_spec[job_name]
        except KeyError:
            raise ValueError("No such job in cluster: %r" % (job_name,)) from None

    def num_tasks(self, job_name: Any) -> int:
        """How many tasks ``job_name`` defines.

        Raises:
            ValueError: no job of that name.
        """
        return len(self._job(job_name))

    def task_indices(self, job_name: Any) -> list[int]:
        """The valid task indices of ``job_name``, ascending.

        Raises:
            ValueError: no job of that name.
        """
        return sorted(self._job(job_name).keys())

    def task_address(self, job_name: Any, task_index: int) -> Any:
        """The address of task ``task_index`` of ``job_name``.

        Raises:
            ValueError: no job of that name, or no task with that index in it.
        """
        job = self._job(job_name)
        try:
            return job[task_index]
        except KeyError:
            raise ValueError("No task with index %r in job %r" % (task_index, job_name)) from None

    def job_tasks(self, job_name: Any) -> list[Any]:
        """The addresses of ``job_name`` by index; ``None`` fills the gaps of a sparse job.

        Raises:
            ValueError: no job of that name.
        """
        job = self._job(job_name)
        ret: list[Any] = [None for _ in range(max(job.keys()) + 1)]
        for i, task in job.items():
            ret[i] = task
        return ret

    def as_cluster_def(self) -> Any:
        """The ``tf.train.ClusterDef`` of this cluster (imports TensorFlow)."""
        return self.to_tf().as_cluster_def()

    def to_tf(self) -> Any:
        """The same cluster as a real ``tf.train.ClusterSpec`` (imports TensorFlow)."""
        import tensorflow as tf  # only here: the class itself must not need TensorFlow

        return tf.train.ClusterSpec({job: dict(tasks) for job, tasks in self._cluster_spec.items()})

    def _make_cluster_def(self) -> None:
        # The checks TensorFlow makes while filling its ClusterDef, in the same order,
        # so the first problem found raises the same error.
        cluster_def: list[tuple[str, dict[int, str]]] = []
        for job_name, tasks in sorted(self._cluster_spec.items()):
            try:
                name = _as_bytes(job_name)
            except TypeError:
                raise TypeError("Job name %r must be bytes or unicode" % (job_name,)) from None
            job_def: dict[int, str] = {}
            for i, task_address in sorted(tasks.items()):
                try:
                    address = _as_bytes(task_address)
                except TypeError:
                    raise TypeError("Task address %r must be bytes or unicode" % (task_address,)) from None
                if not _INT32_MIN <= i <= _INT32_MAX:
                    raise ValueError("Value out of range: %d" % i)
                job_def[i] = address.decode("utf-8")
            cluster_def.append((name.decode("utf-8"), job_def))
        self._cluster_def = cluster_def
