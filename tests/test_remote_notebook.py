"""A function as a distributed job from a Jupyter notebook, run headless by nbclient in a real
kernel. The cell is the README's "From a notebook" example, verbatim: its
``@tfjob.remote(workers=2, ps=1)`` function trains a Keras model with
``ParameterServerStrategy`` on a local 1 + 2 + 1 cluster and the cell gets its evaluation
metrics back; ``.submit()`` returns at once and ``tfjob.get_job(ID).result()`` (here and in
another process) gives the return value; ``ValueError("bad lr")`` comes back as itself; the
tasks' lines stream into the cell with their task prefixes. Interrupting the kernel cancels a
running job. No process outlives its job."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

from helpers import ROOT, requires_tf
from local_helpers import assert_no_survivors, job_processes, no_leftover_jobs  # noqa: F401 - the fixture
from tfjob import JobState
from tfjob.runtime.store import JobStore

pytestmark = [requires_tf, pytest.mark.slow, pytest.mark.tf]


def readme_section(title: str) -> list[str]:
    """The Python blocks of the README's section ``### title``, verbatim."""
    text = (ROOT / "README.md").read_text()
    section = text.split(f"\n### {title}\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def notebook(*cells: str) -> Any:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def stream(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell["outputs"] if o.get("output_type") == "stream")


def client(nb: Any, cwd: Path) -> Any:
    from nbclient import NotebookClient

    return NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})


def test_the_readme_cell_trains_with_parameter_servers_and_gets_its_metrics_back(tmp_path: Path) -> None:
    (cell,) = readme_section("From a notebook")
    nb = notebook(cell, "print('handle', handle.id)")
    client(nb, tmp_path).execute()
    out = stream(nb.cells[0])
    metrics = eval(out.split("metrics ", 1)[1].splitlines()[0])  # the dict as the cell printed it
    assert metrics["loss"][-1] < metrics["loss"][0]  # it trained
    assert 0 <= metrics["mse"] < metrics["loss"][0]
    assert metrics["devices"] and all("/job:ps" in d for d in metrics["devices"])  # the variables live on the ps
    # The tasks' lines came into the cell, named by task; what was pickled, and the requirements, were said.
    assert "[chief-0] training on chief" in out
    shipped = f"with cloudpickle {cloudpickle.__version__}; requirements found from its imports: "
    assert "train pickled by value" in out and shipped in out and "numpy" in out
    assert re.search(r"job train-\S+ SUCCEEDED", out)
    assert "raised: ValueError bad lr" in out
    # The submitted job's result from another process (this one), as from another kernel.
    job_id = stream(nb.cells[1]).split("handle ", 1)[1].split()[0]
    import tfjob

    second = tfjob.get_job(job_id).result()
    assert len(second["loss"]) == 2 and f"mse {second['mse']}" in out
    with JobStore() as store:
        records = store.list()
    assert sorted(r.state for r in records) == sorted([JobState.SUCCEEDED, JobState.SUCCEEDED, JobState.FAILED])
    for record in records:
        assert_no_survivors(job_processes(record.id))


SLOW = """\
import time

import tfjob


@tfjob.remote(workers=1)
def wait_long(seconds):
    print("started", flush=True)
    time.sleep(seconds)
    return seconds


wait_long.run(300)
"""


def test_interrupting_the_kernel_cancels_the_running_job(tmp_path: Path) -> None:
    nb = notebook(SLOW)
    runner = client(nb, tmp_path)
    runner.allow_errors = True
    found: dict[str, Any] = {}

    def interrupt_once_running() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            with JobStore() as store:
                running = [r for r in store.list() if r.state is JobState.RUNNING]
            if running and len(store.tasks(running[0].id)) == 2:
                found["id"] = running[0].id
                time.sleep(1.0)  # the tasks are started: now Ctrl-C
                # What Jupyter's interrupt button does (its SIGINT, as the kernel spec says to send it).
                asyncio.run(runner.km.interrupt_kernel())
                return
            time.sleep(0.2)

    with runner.setup_kernel():
        watcher = threading.Thread(target=interrupt_once_running)
        watcher.start()
        runner.execute_cell(nb.cells[0], 0)
        watcher.join()
    outputs = nb.cells[0]["outputs"]
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert errors and errors[0]["ename"] == "JobCancelledError", outputs
    with JobStore() as store:
        record = store.get(found["id"])
    assert record.state is JobState.CANCELLED
    assert_no_survivors(job_processes(record.id))
