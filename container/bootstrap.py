"""``tfjob-bootstrap``: the first thing every task of a tfjob job runs.

::

    tfjob-bootstrap --module trainer.task [--package PATH_OR_GS_URI ...]
                    [--strategy parameter-server|multi-worker|auto] [--job-dir DIR]
                    [--check-port] -- TRAINER_ARGS...

It reads the task's ``TF_CONFIG`` / ``CLUSTER_SPEC`` in whatever dialect the platform
wrote (:mod:`tfjob.cluster`), leaves those variables exactly as the platform wrote
them (``--tf-config tf2`` rewrites ``TF_CONFIG`` for TensorFlow 2 strategies instead:
``master`` → ``chief``, evaluators out of the cluster, every other key kept), exports
``TFJOB_TASK_TYPE``, ``TFJOB_TASK_INDEX``, ``TFJOB_IS_CHIEF``, ``TFJOB_TRIAL``, installs
``--package`` archives with pip, then dispatches:

* with the parameter-server strategy, ``ps`` and ``worker`` tasks run a
  ``tf.distribute.Server`` for their task in this process and join it (the job ends
  when the chief ends; the launcher stops them);
* every other task runs the trainer module *in this process*, exactly as
  ``python -m MODULE ARGS`` would (``runpy``, ``__main__``, ``sys.argv``, the working
  directory first on ``sys.path``): signals reach the trainer's own handlers, its
  exit status is the task's, and no extra process stands between the launcher and
  the trainer.

The trainer's process is left as a plain interpreter's: the collector on, nothing frozen.

Why not ``exec`` a fresh ``python -m``? It gives the same guarantees but pays a
second interpreter start (30-50 ms on a busy 2-core machine) for every task; running
in-process costs only the bootstrap's own imports, which are the standard library
alone until dispatch (a test checks), a few milliseconds. A bad configuration prints one ``error:`` line and exits
2; ``--check-port`` exits 75 (``EX_TEMPFAIL``) when this task's 127.0.0.1 port is
already taken, which the local launcher answers by restarting on fresh ports (a local
container task's check; a process task's port the launcher checks itself as it starts it).
"""

from __future__ import annotations

import os
import sys

from tfjob.cluster.task import TF_CONFIG_MODES, TaskInfo, render_bootstrap_env, task_info_from_env
from tfjob.cluster.dispatch import DEFAULT_STRATEGY, STRATEGIES
from tfjob.cluster.dispatch import resolve_strategy as resolve

# tfjob.errors is imported where an error is raised (or caught, see main): a task started
# the usual way never needs it, and importing it is ~0.6 ms of every task's start.

# Not `from typing import TYPE_CHECKING`: importing typing costs the bootstrap ~3 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from types import TracebackType  # noqa: F401
    from typing import Mapping, NoReturn, Sequence  # noqa: F401

#: Exit status for "port taken between pick and bind": try again on fresh ports.
EX_PORT_IN_USE = 75
_LOCAL_HOSTS = ("127.0.0.1", "localhost")


def _columns() -> int:
    text = os.environ.get("COLUMNS", "")
    return max(40, min(int(text), 200)) - 2 if text.isascii() and text.isdigit() else 78


def _build_parser() -> argparse.ArgumentParser:
    import argparse  # here: a task started the usual way never needs it (see _parse_fast)

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            # One line, like every other tfjob error; argparse's usage block is noise here.
            self.exit(2, f"error: {message} (see tfjob-bootstrap --help)\n")

    parser = _Parser(
        prog="tfjob-bootstrap",
        description=(
            "Start one task of a distributed TensorFlow job: read TF_CONFIG / CLUSTER_SPEC "
            "(Vertex AI, AI Platform, Kubeflow, SageMaker, gcloud local, TonY), export a "
            "TensorFlow 2 TF_CONFIG and TFJOB_* variables, then run the trainer module "
            "(or, under the parameter-server strategy, a tf.distribute.Server for ps and worker tasks)."
        ),
        epilog="Arguments after -- are passed to the trainer unchanged.",
        # A width of our own: argparse would import shutil (and bz2, lzma…) to ask the terminal, ~3 ms a task.
        formatter_class=lambda prog: argparse.HelpFormatter(prog, width=_columns()),
    )
    entry = parser.add_mutually_exclusive_group(required=True)
    entry.add_argument("--module", "-m", help="the trainer's Python module, run as `python -m MODULE` would, e.g. trainer.task")
    entry.add_argument("--script", help="or the trainer's Python file, run as `python PATH` would, e.g. dist_mnist.py")
    parser.add_argument(
        "--package",
        action="append",
        default=[],
        metavar="PATH_OR_GS_URI",
        help="a trainer archive (sdist or wheel) to pip-install first; local path or gs:// URI; repeatable",
    )
    parser.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default=DEFAULT_STRATEGY,
        help="module (default): every task runs the trainer module, as the platforms do; "
        "parameter-server: ps and worker tasks serve, the chief and evaluators run the module; "
        "auto: parameter-server when the cluster has ps tasks; multi-worker: the same as module",
    )
    parser.add_argument(
        "--job-dir",
        help="passed on to the trainer as --job-dir (tfjob gives it only where the platform passes one: AI Platform)",
    )
    parser.add_argument(
        "--tf-config",
        choices=TF_CONFIG_MODES,
        default=os.environ.get("TFJOB_TF_CONFIG_MODE") or "platform",
        help="platform (default): leave TF_CONFIG and CLUSTER_SPEC as the platform wrote them; "
        "tf2: rewrite them for TensorFlow 2 strategies (master -> chief, evaluators out of the cluster). "
        "Default from $TFJOB_TF_CONFIG_MODE",
    )
    parser.add_argument(
        "--check-port",
        action="store_true",
        help=f"exit {EX_PORT_IN_USE} if this task's own 127.0.0.1 port is already in use",
    )
    return parser


class _Options:
    """The parsed options, as :func:`_build_parser` names them."""

    def __init__(self) -> None:
        self.module: str | None = None
        self.script: str | None = None
        self.package: list[str] = []
        self.strategy = DEFAULT_STRATEGY
        self.job_dir: str | None = None
        self.tf_config = os.environ.get("TFJOB_TF_CONFIG_MODE") or "platform"
        self.check_port = False


#: Option → (attribute, the values it takes, or None for any); ``--check-port`` takes none.
_VALUED = {
    "--module": ("module", None),
    "-m": ("module", None),
    "--script": ("script", None),
    "--package": ("package", None),
    "--strategy": ("strategy", STRATEGIES),
    "--job-dir": ("job_dir", None),
    "--tf-config": ("tf_config", TF_CONFIG_MODES),
}


def _parse_fast(options: Sequence[str]) -> _Options | None:
    """The options as argparse would read them, for the plain spellings every launcher and
    platform request uses (``--flag VALUE``, ``--flag=VALUE``, each flag once but
    ``--package``); None for anything else — help, a mistake, an abbreviation, a value that
    starts with ``-`` — which :func:`_build_parser` then reads, and words its errors.

    argparse itself (and the gettext and locale modules it loads) is ~5 ms of every task's
    start, paid once per task: on a 161-task local cluster, most of tfjob's cost per task.
    """
    out = _Options()
    seen = set()
    i, n = 0, len(options)
    while i < n:
        flag, value = options[i], None
        if flag.startswith("--") and "=" in flag:
            flag, _, value = flag.partition("=")
        if flag == "--check-port" and value is None:
            if flag in seen:
                return None
            seen.add(flag)
            out.check_port = True
            i += 1
            continue
        entry = _VALUED.get(flag)
        if entry is None:
            return None
        name, choices = entry
        if value is None:
            if i + 1 >= n:
                return None
            value = options[i + 1]
            i += 2
        else:
            i += 1
        if value.startswith("-") or (choices is not None and value not in choices):
            return None
        if name == "package":
            out.package.append(value)
            continue
        if name in seen:
            return None
        seen.add(name)
        setattr(out, name, value)
    if (out.module is None) == (out.script is None):
        return None  # neither or both: argparse says which
    return out


def _split_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    argv = list(argv)
    if "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1 :]
    return argv, []


def resolve_strategy(strategy: str, info: TaskInfo) -> str:
    """``module`` or ``parameter-server`` for this task's cluster (:mod:`tfjob.cluster.dispatch`).

    Raises:
        UsageError: an unknown strategy, or ``parameter-server`` for a cluster without
            a worker or a ps.
    """
    if not info.is_distributed:
        resolve(strategy, ps=1, workers=1)  # still refuse an unknown name
        return "module"
    jobs = info.cluster.jobs
    count = {job: len(info.cluster.task_indices(job)) for job in jobs}
    return resolve(strategy, ps=count.get("ps", 0), workers=count.get("worker", 0))


def _has_job_dir(args: Sequence[str]) -> bool:
    # The trainer's own --job-dir wins; argparse users spell it either way.
    return any(a.split("=", 1)[0] in ("--job-dir", "--job_dir") for a in args)


def port_in_use(address: str) -> bool:
    """True when ``address`` is on this machine's loopback and its port cannot be bound.

    Addresses on other hosts are not this machine's to check and count as free.
    """
    host, _, port = address.rpartition(":")
    if host.strip("[]") not in _LOCAL_HOSTS or not (port.isascii() and port.isdigit()):
        return False
    # The C module: socket.py imports selectors, array and more — ~3 ms of every local
    # task's start, paid once per task (only with --check-port).
    import _socket

    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    # SO_REUSEADDR so a port in TIME_WAIT (a previous run's) is not mistaken for taken;
    # a listening socket still makes bind fail.
    sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", int(port)))
    except OSError:
        return True
    finally:
        sock.close()
    return False


def _check_module(module: str) -> None:
    """Fail early, in one line, when ``module`` cannot be found.

    Importing the module's parent packages here is what running it would do next
    anyway (same process). An ImportError raised *inside* the trainer's packages is
    the trainer's failure and propagates with its traceback, as under ``python -m``.
    """
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError as e:
        if e.name is None or not (module == e.name or module.startswith(e.name + ".")):
            raise
        spec = None
    if spec is not None and spec.submodule_search_locations is not None:
        # A package runs as its __main__ submodule, as with `python -m package`.
        spec = importlib.util.find_spec(module + ".__main__")
    if spec is None:
        from tfjob.errors import UsageError

        raise UsageError(
            f"--module {module}: no such module in {os.getcwd()} or on PYTHONPATH; "
            "run from the trainer's source directory, add it to PYTHONPATH, or install it with --package"
        )


#: Exit status of a task ended by SIGTERM (128 + 15), as a shell reports it.
EX_TERMINATED = 143


def _die_of(signum: int) -> None:
    # Flush what the task printed, then die of the signal as a plain process would (the
    # launcher and the platforms report "ended by SIGTERM"); 128 + N if it cannot be raised.
    import signal

    try:
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
    finally:
        os._exit(128 + signum)


_FORWARDED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def become_init_if_pid1() -> None:
    """As PID 1 of a container, stay a tiny init and run the task as PID 2.

    The kernel delivers no signal to PID 1 that it has not installed a handler for, and a
    Python handler never runs while the main thread blocks in C++ (``Server.join()``, a
    long TensorFlow op): ``podman stop`` and Kubernetes would wait out their grace period
    and SIGKILL. So PID 1 forks: the child carries on with the task and gets every signal
    as any ``python -m`` process would (its own handlers, or the default: it dies); PID 1
    forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1/2, reaps every orphan re-parented to
    it, and exits with the task's status (128 + N when a signal N ended it).
    """
    if os.getpid() != 1:
        return
    import signal

    child = os.fork()
    if child == 0:
        return  # the task: PID 2, ordinary signal semantics
    for name in _FORWARDED:
        signum = getattr(signal, name)
        signal.signal(signum, lambda sig, frame: os.kill(child, sig))
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
        if pid == child:
            os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def run_server(info: TaskInfo) -> int:
    """Serve this ps/worker task with ``tf.distribute.Server`` until the job stops it.

    SIGTERM and SIGINT are blocked before TensorFlow starts a thread, so every thread it
    starts has them blocked too, and this thread takes them in ``sigwait``: a signal sent to
    the process can then not land on a gRPC thread while this one sleeps (a ``pause()``
    here would never wake), nor wait on ``Server.join()``, which blocks in C++. The task
    then ends by that signal, as any process.
    """
    import signal

    stop = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)
    import tensorflow as tf

    cluster = {job: tasks for job, tasks in info.cluster.as_dict().items() if job != "evaluator"}
    tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name=info.role, task_index=info.index, protocol="grpc", start=True)
    _die_of(signal.sigwait(stop))
    return 0  # not reached: _die_of ends the process


def _put_cwd_first() -> None:
    # `python -m` puts the working directory first on sys.path. Started as the
    # tfjob-bootstrap console script, sys.path[0] is the script's bin/ directory instead.
    cwd = os.getcwd()
    script_dir = os.path.dirname(os.path.abspath(sys.argv[0])) if sys.argv and sys.argv[0] else None
    if sys.path and sys.path[0] == script_dir:
        sys.path[0] = cwd
    elif not sys.path or sys.path[0] != cwd:
        sys.path.insert(0, cwd)


def run_module(module: str, args: Sequence[str]) -> int:
    """Run ``module`` as ``__main__`` with ``args``, as ``python -m module args`` would.

    Returns 0 when the module finishes; its ``sys.exit()`` and uncaught exceptions
    propagate, so the process ends with the trainer's own status.
    """
    import runpy

    # runpy sets argv[0] to the module's file, as `python -m` does.
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    return 0


def run_script(path: str, args: Sequence[str]) -> int:
    """Run the file ``path`` as ``__main__`` with ``args``, as ``python path args`` would
    (its directory first on ``sys.path``, ``sys.argv[0]`` the path)."""
    import runpy

    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    runpy.run_path(path, run_name="__main__")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bootstrap and then the task; returns the exit status.

    The trainer's own ``sys.exit(code)`` and uncaught exceptions propagate out of
    this function unchanged, so the process exits exactly as the trainer would.
    """
    options, trainer_args = _split_argv(sys.argv[1:] if argv is None else argv)
    args = _parse_fast(options) or _build_parser().parse_args(options)
    become_init_if_pid1()
    try:
        if not os.environ.get("TF_CONFIG"):
            # Imported here: a task given a TF_CONFIG (every local one) is no JobSet pod.
            from tfjob.cluster.jobset import is_jobset_pod, jobset_task_env

            if is_jobset_pod(os.environ):
                # A JobSet writes no TF_CONFIG: the one the TFJob operator would write, from its variables.
                os.environ.update(jobset_task_env(os.environ))
        info = task_info_from_env()
        strategy = resolve_strategy(args.strategy, info)
        if args.check_port and info.address is not None and port_in_use(info.address):
            print(
                f"error: port of task {info.role}-{info.index} ({info.address}) is already in use",
                file=sys.stderr,
            )
            return EX_PORT_IN_USE
        if args.package:
            from tfjob.container.packages import install_packages  # here: most tasks install nothing

            install_packages(args.package)
        # Exported before the module is looked up: that imports the trainer's
        # package, whose own code may read TF_CONFIG.
        for name, value in render_bootstrap_env(info, os.environ, mode=args.tf_config).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if os.environ.get("TFJOB_ECHO_METRICS") == "1":
            # A Kubernetes trial: its study reads the trainer's metric reports from the task's log.
            import atexit

            from tfjob.hypertune import echo_metric_file

            atexit.register(echo_metric_file)
        if args.job_dir and not _has_job_dir(trainer_args):
            trainer_args = [*trainer_args, "--job-dir", args.job_dir]
        serve = strategy == "parameter-server" and info.is_distributed and info.role in ("ps", "worker")
        if not serve and args.script is not None:
            if not os.path.isfile(args.script):
                from tfjob.errors import UsageError

                raise UsageError(f"--script {args.script}: no such file in {os.getcwd()}")
        elif not serve:
            _put_cwd_first()
            assert args.module is not None  # (parsed: a module or a script)
            _check_module(args.module)
    except Exception as e:
        if "tfjob.errors" not in sys.modules:
            raise  # no TfjobError: a module imports tfjob.errors only to raise one
        from tfjob.errors import TfjobError

        if not isinstance(e, TfjobError):
            raise
        print(f"error: {e.worded('cli')}", file=sys.stderr)  # a command line's words (flags)
        return e.exit_code
    if serve:
        return run_server(info)
    run, target = (run_script, args.script) if args.script is not None else (run_module, args.module)
    assert isinstance(target, str)  # the parser requires --module or --script
    if argv is not None:
        return run(target, trainer_args)  # from Python: the trainer's exceptions propagate as they are
    try:
        return run(target, trainer_args)
    except Exception:
        # Uncaught in the trainer: reported as Python would (through sys.excepthook, the
        # trainer's own if it set one; exit 1), its traceback the trainer's frames alone.
        kind, error, tb = sys.exc_info()
        assert kind is not None and error is not None
        tb = trainer_frames(tb)
        sys.excepthook(kind, error.with_traceback(tb), tb)  # Python 3.11's prints the error's own
        return 1


#: Where the frames above the trainer's come from: this file and runpy (``python -m``).
_OWN_FILES = (os.path.abspath(__file__).removesuffix("c"), "<frozen runpy>")


def trainer_frames(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` from the trainer's first frame: the bootstrap's and runpy's before it left out
    (all of ``tb`` if none of it is the trainer's, e.g. it failed to import)."""
    first = tb
    while first is not None and (
        first.tb_frame.f_code.co_filename in _OWN_FILES or first.tb_frame.f_code.co_filename.endswith("/runpy.py")
    ):
        first = first.tb_next
    return first if first is not None else tb


if __name__ == "__main__":
    sys.exit(main())
