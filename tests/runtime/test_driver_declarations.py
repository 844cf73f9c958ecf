"""gompute's own declarations of the CUDA driver (csrc/cuda_api.h), checked against the toolkit's cuda.h.

gompute opens libcuda with dlopen and declares each entry point itself, so nothing at build
time ties a slot's signature to the symbol it is resolved from: a slot filled from the legacy
`cuMemAlloc` (32-bit sizes) instead of `cuMemAlloc_v2` would pass every test against the fake
driver and corrupt memory on a GPU. Where a cuda.h is installed, this compiles every
(slot, symbol) pair driver_cuda.cpp resolves, and every constant cuda_api.h spells, against it.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

CSRC = REPO / "csrc"
DECLARATIONS = CSRC / "cuda_api.h"
DRIVER = CSRC / "driver_cuda.cpp"


def _slots() -> list[str]:
    """The function-pointer members of cuda_api.h's Api, in order."""
    body = re.search(r"struct Api \{(.*?)\n\};", DECLARATIONS.read_text(), re.S).group(1)
    return re.findall(r"\(\*(\w+)\)\(", body)


def _resolved() -> list[tuple[str, str]]:
    """(Api slot, exported symbol) for each lookup in driver_cuda.cpp, required or optional."""
    text = DRIVER.read_text()
    required = re.findall(r'need\(api_\.(\w+), "(\w+)"\)', text)
    optional = re.findall(r'symbol<decltype\(api_\.(\w+)\)>\("(\w+)"\)', text)
    return required + optional


def _constants() -> list[str]:
    return re.findall(r"constexpr \w+ (CU\w+) = ", DECLARATIONS.read_text())


def _cuda_include() -> Path | None:
    """A folder holding cuda.h: $CUDA_HOME / $CUDA_PATH, what cuda-pathfinder finds, /usr/local/cuda."""
    candidates = [Path(os.environ[v]) / "include" for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        found = find_nvidia_header_directory("cudart")
        if found:
            candidates.append(Path(found))
    except Exception:  # noqa: BLE001 - an absent or broken pathfinder just means one place fewer to look
        pass
    candidates.append(Path("/usr/local/cuda/include"))
    return next((c for c in candidates if (c / "cuda.h").is_file()), None)


# Each type reduced to what the calling convention sees: a scalar's size and whether it is a
# float, a pointer to what it points at (void and struct handles alike opaque), a function's
# result and parameters. So `void*` for CUstream_st* passes and `unsigned` for size_t fails.
_CHECKER = r"""
#define __CUDA_API_VERSION_INTERNAL 1  // every exported symbol under its own name: no _v2 macros
#include <cuda.h>

#include <cstddef>
#include <type_traits>

#include "cuda_api.h"

namespace abi {
struct Opaque {};
template <class T> struct Ptr {};
template <std::size_t Bytes, bool Float> struct Scalar {};
template <class R, class... A> struct Fn {};

template <class T, class = void> struct of { using type = Scalar<sizeof(T), std::is_floating_point_v<T>>; };
template <class T> struct of<T, std::enable_if_t<std::is_void_v<T> || std::is_class_v<T>>> { using type = Opaque; };
template <class T> struct of<T*, void> { using type = Ptr<typename of<std::remove_cv_t<T>>::type>; };
template <class R, class... A> struct of<R (*)(A...), void> {
  using type = Fn<typename of<R>::type, typename of<std::remove_cv_t<A>>::type...>;
};
template <class A, class B> constexpr bool same = std::is_same_v<typename of<A>::type, typename of<B>::type>;
}  // namespace abi

namespace ours = gompute::cuda_api;
"""


def _check_source(pairs: list[tuple[str, str]], constants: list[str]) -> str:
    lines = [_CHECKER]
    for slot, symbol in pairs:
        lines.append(
            f"static_assert(abi::same<decltype(ours::Api::{slot}), decltype(&::{symbol})>, "
            f'"Api::{slot} does not match {symbol} in cuda.h");'
        )
    for name in constants:
        lines.append(f'static_assert(ours::{name} == ::{name}, "{name} differs from cuda.h");')
    return "\n".join(lines) + "\n"


def _compile(cxx: str, include: Path, source: str, tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "check_cuda_api.cpp"
    path.write_text(source)
    argv = [cxx, "-std=c++17", "-fsyntax-only", "-Wno-deprecated-declarations", f"-I{include}", f"-I{CSRC}", str(path)]
    return subprocess.run(argv, capture_output=True, text=True)


@pytest.fixture(scope="module")
def cuda_include() -> Path:
    found = _cuda_include()
    if found is None:
        pytest.skip("no cuda.h here (set CUDA_HOME, or install the CUDA toolkit headers)")
    return found


def test_every_slot_is_resolved_from_a_symbol():
    slots, pairs = _slots(), _resolved()
    assert len(slots) >= 30 and len(_constants()) >= 10, "the parse of cuda_api.h found too little"
    assert sorted({slot for slot, _ in pairs}) == sorted(slots)


def test_declarations_match_cuda_h(cxx, cuda_include, tmp_path):
    result = _compile(cxx, cuda_include, _check_source(_resolved(), _constants()), tmp_path)
    failures = re.findall(r'"([^"]*(?:does not match|differs from)[^"]*)"', result.stderr)
    assert result.returncode == 0, "\n".join(failures) or result.stderr


def test_the_check_tells_a_v2_symbol_from_its_legacy_one(cxx, cuda_include, tmp_path):
    """cuMemAlloc (CUDA 3.1's, 32-bit sizes) has the name the slot has; the slot must be _v2."""
    result = _compile(cxx, cuda_include, _check_source([("cuMemAlloc", "cuMemAlloc")], []), tmp_path)
    assert result.returncode != 0
    assert "Api::cuMemAlloc does not match cuMemAlloc in cuda.h" in result.stderr
