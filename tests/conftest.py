"""Shared pytest configuration: the ``--runslow`` option, Hypothesis profiles, fixtures."""

from __future__ import annotations

import os

import pytest

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # hypothesis is a dev extra; plain pytest still works without it
    settings = None

if settings is not None:
    # No per-example deadline: numpy warm-up and shared CI machines make timings noisy.
    settings.register_profile("dev", deadline=None)
    settings.register_profile(
        "ci",
        deadline=None,
        derandomize=True,  # reproducible CI runs
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.load_profile(
        os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--runslow",
        action="store_true",
        default=False,
        help="also run tests marked slow (long randomised runs)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(autouse=True, scope="session")
def sb3_logs_in_pytest_tmp(tmp_path_factory):
    """Stable-Baselines3's ``learn`` makes a ``/tmp/SB3-<time>`` folder a call unless
    ``SB3_LOGDIR`` names one: point it into pytest's temporary folders (which pytest prunes),
    for this process and the subprocesses the tests start."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3_logs")))
        yield


@pytest.fixture
def one_torch_thread():
    """PyTorch on one thread for the test (the other core runs the rest of the suite)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


#: Debian's chromium, which the browser tests drive with Playwright (`make test` installs it).
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser():
    """A headless chromium (Playwright), for the module's page tests."""
    from pathlib import Path

    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "the browser tests need Debian's chromium (make test " \
                                    "installs it)"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def server():
    """``smoor-serve`` in a thread for the module: ``(server, base url)``."""
    from experiments.serve import running_server

    with running_server(max_games=8) as served:
        yield served
