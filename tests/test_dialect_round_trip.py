"""What tfjob renders for a platform, the bootstrap reads back as the same task: every dialect,
every role of a 1+3+2+1 job, one-replica jobs and a chief-less job (a table test)."""

from __future__ import annotations

import pytest

from tfjob.cluster import DIALECTS, render_task_env, task_info_from_env
from tfjob.errors import ClusterConfigError


def _cluster(shape: dict[str, int]) -> dict[str, list[str]]:
    port = iter(range(4000, 5000))
    return {role: [f"127.0.0.1:{next(port)}" for _ in range(n)] for role, n in shape.items() if n}


LAYOUTS = {
    "1+3+2+1": {"chief": 1, "worker": 3, "ps": 2, "evaluator": 1},
    "chief only": {"chief": 1},
    "1+1": {"chief": 1, "worker": 1},
    "chief-less 3+1": {"worker": 3, "ps": 1},
}

ROWS = [
    (layout, dialect, role, index, dynamic)
    for layout, shape in LAYOUTS.items()
    for dialect in DIALECTS
    for role, n in shape.items()
    for index in range(n)
    for dynamic in ((False, True) if dialect == "kubeflow" else (False,))
]


def _expected_cluster(shape: dict[str, int], dialect: str, role: str, cluster: dict[str, list[str]]) -> dict[str, list[str]] | None:
    """The cluster (canonical names) the reader should report; None: a single local process."""
    total = sum(shape.values())
    if dialect == "kubeflow" and total == 1:
        return None  # the operator sets no TF_CONFIG
    if dialect == "vertex" and total == 1:
        return None  # Vertex sets CLUSTER_SPEC only; its cluster is the chief alone
    if dialect == "gcloud-local" and set(shape) == {"chief"}:
        return None  # gcloud writes an empty task and cluster for a non-distributed run
    return {}


@pytest.mark.parametrize(
    "layout, dialect, role, index, dynamic", ROWS, ids=[f"{l}-{d}-{r}{i}{'-dyn' if y else ''}" for l, d, r, i, y in ROWS]
)
def test_render_then_read_is_the_same_task(layout: str, dialect: str, role: str, index: int, dynamic: bool) -> None:
    shape = LAYOUTS[layout]
    cluster = _cluster(shape)
    if "chief" not in shape and dialect != "kubeflow":
        with pytest.raises(ClusterConfigError, match="without a chief|needs a chief"):
            render_task_env(cluster, role, index, dialect)
        return
    env = render_task_env(cluster, role, index, dialect, dynamic_workers=dynamic)
    info = task_info_from_env(env)
    if _expected_cluster(shape, dialect, role, cluster) is None and not env.get("CLUSTER_SPEC"):
        assert not info.is_distributed and info.role == "chief"
        return
    assert (info.role, info.index) == (role, index), env
    if dynamic:
        return  # a sparse cluster lists only what this task needs
    # Every task of the job that the platform lists is read back at its address.
    listed = info.cluster.as_dict()
    for r, addresses in cluster.items():
        if r in listed:
            assert listed[r] == addresses
    if role != "evaluator" and dialect != "gcloud-local":
        assert info.address == cluster[role][index]
    assert info.is_chief == (role == "chief" or ("chief" not in shape and role == "worker" and index == 0))
