"""A test run keeps to itself: kernels compile into a cache of the run's own (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import platformdirs

from gompute.compile.cache import default_root


def test_kernels_do_not_compile_into_the_users_cache():
    assert default_root() != Path(platformdirs.user_cache_dir("gompute", appauthor=False))
