"""A toy trainer for tuning tests: pure Python, instant, with a known optimum.

Its "loss" is a closed form of the hyperparameters, lowest at learning_rate 0.01
with the adam optimizer::

    loss = (log10(learning_rate) + 2) ** 2 + (0 if optimizer == "adam" else 1)

Every task writes what it saw (argv, TF_CONFIG, CLUSTER_SPEC, CLOUD_ML_* variables)
to ``$TOY_RECORD_DIR/<trial>-<task>.json``; the chief reports the loss in the
cloudml-hypertune format, through ``tfjob.report_metric`` or (``--reporter raw``)
by writing the file itself, as a trainer that knows nothing of tfjob would.
"""

import argparse
import json
import math
import os
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--learning_rate", type=float, default=0.1)
    parser.add_argument("--optimizer", default="sgd")
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--job-dir", default=None)
    parser.add_argument("--tag", default="loss")
    parser.add_argument("--reporter", choices=["tfjob", "raw", "none"], default="tfjob")
    parser.add_argument("--fail-optimizer", default=None, help="exit 3 when --optimizer is this")
    parser.add_argument("--rendezvous", default=None, help="wait (up to 30 s) until another trial has started here")
    args = parser.parse_args()

    tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    cluster_spec = json.loads(os.environ.get("CLUSTER_SPEC") or "{}")
    task = tf_config.get("task") or cluster_spec.get("task") or {}
    trial = os.environ.get("CLOUD_ML_TRIAL_ID", "0")
    # A single-replica Vertex job has no TF_CONFIG, only CLUSTER_SPEC's worker pools.
    pools = {"workerpool0": "chief", "workerpool1": "worker", "workerpool2": "ps", "workerpool3": "evaluator"}
    name = f"{pools.get(task.get('type'), task.get('type', 'chief'))}-{task.get('index', 0)}"
    is_chief = task.get("type", "chief") in ("chief", "master", "workerpool0")
    started = time.time()
    if args.rendezvous and is_chief:
        os.makedirs(args.rendezvous, exist_ok=True)
        open(os.path.join(args.rendezvous, trial), "w").close()
        deadline = time.time() + 30
        while len(os.listdir(args.rendezvous)) < 2 and time.time() < deadline:
            time.sleep(0.05)

    loss = (math.log10(args.learning_rate) + 2) ** 2 + (0.0 if args.optimizer == "adam" else 1.0)
    record_dir = os.environ.get("TOY_RECORD_DIR")
    if record_dir:
        os.makedirs(record_dir, exist_ok=True)
        seen = {
            "argv": sys.argv[1:],
            "tf_config_task": tf_config.get("task"),
            "cluster_spec_task": cluster_spec.get("task"),
            "trial_env": trial,
            "metric_file": os.environ.get("CLOUD_ML_HP_METRIC_FILE"),
            "aip_model_dir": os.environ.get("AIP_MODEL_DIR"),
            "job_dir": args.job_dir,
            "loss": loss,
            "started": started,
            "ended": time.time(),
        }
        with open(os.path.join(record_dir, f"{trial}-{name}.json"), "w") as f:
            json.dump(seen, f)
        # The job ends when the chief does: let the workers write what they saw first.
        workers = len(tf_config.get("cluster", {}).get("worker", []))
        deadline = time.time() + 30
        while is_chief and time.time() < deadline:
            if sum(n.startswith(f"{trial}-worker-") for n in os.listdir(record_dir)) >= workers:
                break
            time.sleep(0.02)
    if args.fail_optimizer and args.optimizer == args.fail_optimizer:
        print(f"toy: refusing optimizer {args.optimizer}", file=sys.stderr)
        return 3
    if is_chief and args.reporter == "tfjob":
        from tfjob.hypertune import report_metric

        report_metric(args.tag, loss, step=1)
    elif is_chief and args.reporter == "raw":
        path = os.environ.get("CLOUD_ML_HP_METRIC_FILE", "/tmp/hypertune/output.metrics")
        with open(path, "a") as f:
            f.write(json.dumps({"timestamp": time.time(), "trial": trial, args.tag: str(loss), "global_step": "1"}) + "\n")
    print(f"toy: trial {trial} {name} loss {loss:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
