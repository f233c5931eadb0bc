"""``--backend kubeflow`` (a Kubeflow ``TFJob``), ``jobset`` (a JobSet, the engine under
Kubeflow Trainer v2) and ``trainjob`` (a Trainer v2 ``TrainJob``, render only).

- :mod:`.backend` — the Kubernetes lifecycle (:class:`~.backend.KubeflowBackend`, a TFJob by
  default); :mod:`.kinds` — TFJob, JobSet and TrainJob described as data (resource, render,
  state, pods, companions); :mod:`.jobset`, :mod:`.trainjob` — the backends naming the others;
- :mod:`.render`, :mod:`.render_jobset`, :mod:`.render_trainjob` — JobSpec → manifests (pure);
- :mod:`.pod` — what every pod gets (resources, `--pod-spec` overlays);
- :mod:`.shipment` — a trainer's packages in a ConfigMap of the job, mounted in every pod;
- :mod:`.status` — pure parsing of job and pod objects (conditions → state, pods → tasks);
- :mod:`.client` — the official ``kubernetes`` client behind a few calls, with its
  exceptions translated into tfjob's (the only module importing ``kubernetes``);
- :mod:`.logs` — pod logs with ``[worker-1]`` prefixes, read once or followed.
"""

from ...lazy import lazy_names

#: What ``from tfjob.backends.kubeflow import …`` gives, imported on first use (the modules
#: behind them import their client libraries only when a call needs them).
_EXPORTS = {
    "KubeflowBackend": ".backend",
    "JobSetBackend": ".jobset",
    "TrainJobBackend": ".trainjob",
    "KubernetesOptions": ".options",
    "TFJobOptions": ".options",
}
__getattr__, __all__ = lazy_names(__name__, _EXPORTS)
