"""g.map's repeated calls pack params in C++ (csrc/dispatch.cpp); the first call, and any
value the C++ path declines, go through g.abi.pack. Both must give the kernel the same
values: checked here on random values of every field type.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from .calls import counting
from .kernels import pick

FIELDS = np.arange(9, dtype=np.int32)


def finite(width):
    return st.floats(allow_nan=False, allow_infinity=False, width=width)


values = st.fixed_dictionaries(
    {
        "a": st.one_of(finite(16), st.integers(-2048, 2048), st.sampled_from([65519.0, -65519.0, 1 / 3])),
        "b": st.one_of(finite(32), st.integers(-(2**24), 2**24)),
        "c": st.one_of(finite(64), st.integers(-(2**53), 2**53)),
        "d": st.integers(-128, 127),
        "e": st.one_of(st.integers(0, 2**16 - 1), st.sampled_from([np.uint16(7), 3.0])),
        "f": st.integers(-(2**31), 2**31 - 1),
        "h": st.integers(-(2**53), 2**53),
        "i": st.integers(0, 2**53),
        "j": st.one_of(st.booleans(), st.sampled_from([0, 1, np.bool_(True)])),
    }
)


def expected(v) -> np.ndarray:
    return np.array(
        [np.float16(v["a"]), np.float32(v["b"]), v["c"], v["d"], v["e"], v["f"], v["h"], v["i"], bool(v["j"])],
        np.float64,
    )


@settings(max_examples=150, deadline=None)
@given(first=values, second=values)
def test_both_paths_pack_every_field_as_abi_pack_does(first, second):
    k, calls = counting(pick)
    for v in (first, second, second):  # the general path, then the C++ one where it takes the values
        np.testing.assert_array_equal(k(FIELDS, **v), expected(v))


def test_plain_values_are_packed_on_the_cpp_path():
    k, calls = counting(pick)
    v = dict(a=0.5, b=-2.25, c=1e300, d=-128, e=65535, f=-(2**31), h=-(2**53), i=2**53, j=True)
    for _ in range(3):
        np.testing.assert_array_equal(k(FIELDS, **v), expected(v))
    assert len(calls) == 1
