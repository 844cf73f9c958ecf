"""The kernel tests compile into a cache of their own run, unless GOMPUTE_CACHE_DIR names one."""

from __future__ import annotations

import os

import pytest

from gompute.compile.cache import ENV_VAR


@pytest.fixture(scope="session", autouse=True)
def kernel_cache(tmp_path_factory):
    if os.environ.get(ENV_VAR):
        yield os.environ[ENV_VAR]
        return
    os.environ[ENV_VAR] = str(tmp_path_factory.mktemp("kernel-cache"))
    yield os.environ[ENV_VAR]
    del os.environ[ENV_VAR]
