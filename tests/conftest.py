"""Shared test fixtures: every test runs with its own TFJOB_HOME and no cloud settings."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterator

import pytest

# ParameterServerStrategy with Keras fit needs Keras 2 (tf-keras); set before anything imports TF.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# The reliability suite's recorder (`reliability` fixture) and its one-line summary.
pytest_plugins = ["reliability"]

from helpers import BIN, REAL_HOME, ROOT, UPDATE_GOLDEN, in_ci, need_in_ci  # noqa: E402 - after the environment above is set

# A machine may run with PYTHONDONTWRITEBYTECODE=1 (this project's CI machine does): then every
# tfjob process the suite starts — CLI calls, launchers, each task's bootstrap — compiles the
# modules it imports from source again (a `tfjob render` 56 ms of CPU more, a bootstrap 17 ms).
# The package is compiled once instead, by the controller before its workers start.
if "PYTEST_XDIST_WORKER" not in os.environ:
    import compileall

    for _tree in ("sdk", "cli", "container"):
        compileall.compile_dir(str(ROOT / _tree), quiet=1)

# Hypothesis: a few hundred examples per property in CI (the default profile); the deep
# run, 10,000 each, is `pytest -m reliability --hypothesis-profile deep` (README, Tests).
# The properties' own @settings leave max_examples to the profile.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
settings.register_profile("deep", max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
settings.load_profile("ci")  # --hypothesis-profile deep (the hypothesis pytest plugin) loads the other after this


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", default=False,
        help="rewrite the golden files (tests/golden) with what the code renders now; review the diff after",
    )  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    """Golden files are rewritten only when this run asks (``--update-golden``): a variable
    exported in the shell (this one, or the old TFJOB_REGEN_GOLDEN) is cleared."""
    for var in (UPDATE_GOLDEN, "TFJOB_REGEN_GOLDEN"):
        os.environ.pop(var, None)
    if config.getoption("--update-golden"):
        os.environ[UPDATE_GOLDEN] = "1"


_CLOUD_VARS = (
    "TFJOB_PROJECT",
    "GOOGLE_CLOUD_PROJECT",
    "CLOUDSDK_CORE_PROJECT",
    "TFJOB_REGION",
    "CLOUDSDK_AI_REGION",
    "GOOGLE_CLOUD_REGION",
    "TFJOB_STAGING_BUCKET",
    "TFJOB_API_ENDPOINT",
    "TFJOB_BACKEND",
    "TFJOB_NAMESPACE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "TF_CONFIG",
    "CLUSTER_SPEC",
    "KUBECONFIG",
    # Where credentials are found (each test's HOME is its own, below): gcloud's, docker's,
    # podman's, AWS's, a pod's service account.
    "CLOUDSDK_CONFIG",
    "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
    "GOOGLE_OAUTH_ACCESS_TOKEN",
    "DOCKER_CONFIG",
    "REGISTRY_AUTH_FILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
    "TFJOB_CONTAINER_ENGINE",
    "STORAGE_EMULATOR_HOST",
)

# The container tests' store and stand-ins stay in the machine's cache between runs, whatever HOME a test has.
os.environ.setdefault("TFJOB_CI_CACHE", str(REAL_HOME / ".cache" / "tfjob-ci"))
#: What a test's own HOME keeps of the machine's (links): pip's configuration and cache (its
#: package index, offline wheels), matplotlib's font cache, git's identity. No credentials.
_HOME_KEPT = (".config/pip", ".pip", ".cache/pip", ".cache/matplotlib", ".config/matplotlib", ".gitconfig")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private TFJOB_HOME, a HOME of its own (no gcloud, docker, kube or AWS credentials of
    the machine's are found: ``google.auth.default`` reads none) outside ``tmp_path``, and an
    environment without cloud settings or TF_CONFIG."""
    home = tmp_path / "tfjob-home"
    monkeypatch.setenv("TFJOB_HOME", str(home))
    user_home = tmp_path_factory.mktemp("home")
    for kept in _HOME_KEPT:
        if (REAL_HOME / kept).exists():
            (user_home / kept).parent.mkdir(parents=True, exist_ok=True)
            (user_home / kept).symlink_to(REAL_HOME / kept)
    monkeypatch.setenv("HOME", str(user_home))
    for var in _CLOUD_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")
    return home


@pytest.fixture
def tfjob_exe() -> str:
    """Path of the installed ``tfjob`` console script."""
    exe = BIN / "tfjob"
    return str(exe) if exe.exists() else shutil.which("tfjob") or "tfjob"


#: pytest-timeout's bound for a test that uses the container images (setup included), in seconds:
#: the first may wait for another run's container tests to end (the store's lock, podman_ci.store_lock)
#: and then build the TensorFlow stand-in and tfjob's base image on a loaded machine.
IMAGE_TEST_TIMEOUT = 2700

#: The modules whose tests run real TensorFlow clusters, containers or whole README
#: sections (a minute or more each): side by side they start first, so the run does not
#: end waiting on one of them. The order within a module is kept.
_HEAVY_FIRST = (
    "test_image_build.py", "test_images.py", "test_readme.py", "test_templates_census.py", "test_preemption_tf.py",
    "test_bench.py", "test_fidelity_trainers.py", "test_k8s_shipping.py",
    "test_migration_guides.py", "test_ps_training.py", "test_bootstrap_signals.py",
)  # fmt: skip


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the group markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Side by side (``pytest -n N --dist loadgroup``, as CI runs): every test that uses the
    podman store runs in one worker, since the store's images are built once per session
    and removed at its end (and its tests count the containers left on the machine); the
    heavy modules go first. A test that uses the podman store gets 45 minutes (pytest-timeout's
    bound covers fixture setup too: whichever test comes first may wait for another run's
    container tests, then builds the TensorFlow stand-in and tfjob's base image, ~5 minutes on
    a loaded machine) unless it says its own."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "podman_env" in fixtures:
            item.add_marker(pytest.mark.xdist_group("podman"))
        if "podman_env" in fixtures and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(IMAGE_TEST_TIMEOUT))
    if getattr(config.option, "numprocesses", None):
        rank = {name: n for n, name in enumerate(_HEAVY_FIRST)}
        items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


# -- containers (podman) -----------------------------------------------------------------
# Session-wide, for every container test module (test_images, test_image_build): the engine
# configured once, the TensorFlow stand-in and tfjob's base image built once per run.


@pytest.fixture(scope="session")
def podman_env() -> Iterator[dict[str, str]]:
    """podman configured for this machine (runc, cgroupfs, 1024 ulimits), storage in the cache."""
    import podman_ci

    missing = podman_ci.missing_tools()
    said = ""
    if missing and in_ci() and os.geteuid() == 0:
        said = podman_ci.install_tools()
        missing = podman_ci.missing_tools()
    need_in_ci(not missing, f"needs {', '.join(missing)} (apt-get install {' '.join(podman_ci.PACKAGES)}) {said}".strip())
    need_in_ci(os.geteuid() == 0, "the container tests run rootful podman (as CI does)")
    env = podman_ci.configure()
    # The store is shared by every run on this machine (a cache): a second test run at the
    # same time (two checkouts, a loaded CI machine) waits here for the first's container
    # tests to end, since each session builds tfjob's base image and removes it at its end.
    with podman_ci.store_lock():
        yield env
        podman_ci.remove_images(env, podman_ci.BASE, "localhost/census:ci", "localhost/peers:ci")


@pytest.fixture(scope="session")
def standin(podman_env: dict[str, str]) -> str:
    """The TensorFlow base stand-in, built once per cache (about 3 minutes the first time)."""
    import podman_ci

    return podman_ci.ensure_standin(podman_env)


@pytest.fixture(scope="session")
def base_image(standin: str, podman_env: dict[str, str]) -> str:
    """tfjob's base image, built from the repository root as container/README.md says."""
    import podman_ci

    return podman_ci.build_base(podman_env)
