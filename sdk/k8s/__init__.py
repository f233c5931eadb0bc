"""Kubernetes plumbing of the kubeflow backend.

- :mod:`tfjob.k8s.status`: pure parsing of TFJob and pod objects (conditions → job
  state, pods → tasks, task names → label selectors, job ids).
- :mod:`tfjob.k8s.client`: the official ``kubernetes`` client behind a few calls, with
  its exceptions translated into tfjob's (the only module importing ``kubernetes``).
- :mod:`tfjob.k8s.logs`: pod logs with ``[worker-1]`` prefixes, read once or followed.
"""
