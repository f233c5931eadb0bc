"""What the Vertex AI submit path costs, measured in one run (issue 6).

* ``tfjob submit --backend vertex --dry-run`` of a 1+4+2 job (a real CLI process);
* the import cost of the submit path (tfjob.gcp, ``google.cloud.aiplatform_v1`` and
  ``google.cloud.storage``: what a real submit loads) next to ``python -c "import google.cloud.aiplatform"``, the baseline;
* bytes uploaded by staging on a first and on a second, unchanged submit (target: 0),
  through the real storage client against gcp-storage-emulator.

    .venv/bin/python bench/vertex_submit.py [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


SUBMIT_IMPORTS = "import tfjob.gcp.service, tfjob.gcp.client; from google.cloud import aiplatform_v1, storage"


def timed(argv: list[str], runs: int, env: dict[str, str], cwd: Path | None = None) -> list[float]:
    """Wall times of ``argv``, ``runs`` times after one unmeasured warm-up run."""
    out = []
    for i in range(runs + 1):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr[-500:]}")
        if i:
            out.append(time.perf_counter() - start)
    return out


def staging_bytes(trainer: Path) -> tuple[int, int]:
    """Bytes uploaded by a first and a second staging of the same trainer (emulator)."""
    from gcp_storage_emulator.server import create_server

    from tfjob.backends.base import SubmitOptions
    from tfjob.gcp.staging import stage_packages, storage_client
    from tfjob.gcp.submission import plan_submission
    from tfjob.spec import build_spec

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = create_server("127.0.0.1", port, in_memory=True)
    server.start()
    os.environ["STORAGE_EMULATOR_HOST"] = f"http://127.0.0.1:{port}"
    try:
        client = storage_client("bench", None)
        client.create_bucket("bench-bucket")
        spec = build_spec(name="bench", module="trainer.task", package=str(trainer), workers=4, ps=2)
        options = SubmitOptions(project="bench", region="us-central1", staging_bucket="gs://bench-bucket")
        sent = []
        for _ in range(2):
            plan = plan_submission(spec, options, dry_run=False)
            sent.append(stage_packages(plan.uploads, region=plan.region, client=client).bytes_uploaded)
        return sent[0], sent[1]
    finally:
        server.stop()
        os.environ.pop("STORAGE_EMULATOR_HOST", None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "CLOUDSDK_", "TFJOB_"))}
    with tempfile.TemporaryDirectory() as tmp:
        env["TFJOB_HOME"] = str(Path(tmp) / "home")
        trainer = Path(tmp) / "trainer"
        trainer.mkdir()
        (trainer / "__init__.py").write_text("")
        (trainer / "task.py").write_text("print('train')\n")
        dry = timed([str(BIN / "tfjob"), "submit", str(trainer), "-m", "trainer.task", "--workers", "4", "--ps", "2",
                     "--backend", "vertex", "--dry-run"], args.runs, env)  # fmt: skip
        # What a real submit loads: our modules, the JobServiceClient's package and storage
        # (not the high-level google.cloud.aiplatform SDK, which tfjob never imports).
        ours = timed([sys.executable, "-c", SUBMIT_IMPORTS], args.runs, env)
        base = timed([sys.executable, "-c", "import google.cloud.aiplatform"], args.runs, env)
        first, second = staging_bytes(trainer)

    med = statistics.median
    figures = {
        "dry_run_s": med(dry),
        "submit_path_import_s": med(ours),
        "import_google_cloud_aiplatform_s": med(base),
        "import_ratio": med(ours) / med(base),
        "bytes_uploaded_first_submit": first,
        "bytes_uploaded_second_submit": second,
        "second_submit_uploads_nothing": second == 0,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"tfjob submit --backend vertex --dry-run (1+4+2)   {med(dry) * 1000:8.1f} ms")
    print(f"import of the submit path (tfjob.gcp)            {med(ours) * 1000:8.1f} ms")
    print(f"python -c 'import google.cloud.aiplatform'        {med(base) * 1000:8.1f} ms  (baseline)")
    print(f"  ratio                                          {figures['import_ratio']:8.2f} x")
    print(f"bytes uploaded: first submit {first}, second unchanged submit {second} (target 0)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
