"""Names a map kernel cannot have: its entry point is a C function of the kernel's own name, in a
module that includes <math.h>, <stdlib.h>, <string.h> and <stdint.h> (or CUDA's and HIP's device
headers), so a kernel called `sqrt` or `double` made code no compiler accepts."""

from __future__ import annotations

CPP_KEYWORDS = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
    char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
    co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
    extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
    nullptr operator or or_eq private protected public register reinterpret_cast requires return
    short signed sizeof static static_assert static_cast struct switch template this thread_local
    throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while
    xor xor_eq restrict""".split()
)

# What the headers above declare that a Python name could plausibly be (the types of <stdint.h>,
# <math.h>'s functions and macros, <stdlib.h>'s and <string.h>'s), and CUDA's and HIP's built-ins.
LIBRARY_NAMES = frozenset(
    """int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t size_t
    ptrdiff_t intmax_t uintmax_t NULL main
    acos acosf acosh acoshf asin asinf asinh asinhf atan atanf atan2 atan2f atanh atanhf cbrt cbrtf
    ceil ceilf copysign copysignf cos cosf cosh coshf erf erff erfc erfcf exp expf exp2 exp2f expm1
    expm1f fabs fabsf fdim fdimf floor floorf fma fmaf fmax fmaxf fmin fminf fmod fmodf frexp frexpf
    hypot hypotf ilogb ldexp ldexpf lgamma lgammaf llrint llround log logf log10 log10f log1p log1pf
    log2 log2f logb lrint lround modf nan nanf nearbyint nextafter pow powf remainder remquo rint
    round roundf scalbn sin sinf sinh sinhf sqrt sqrtf tan tanf tanh tanhf tgamma tgammaf trunc
    truncf isnan isinf isfinite isnormal signbit fpclassify isgreater isless NAN INFINITY HUGE_VAL
    abs labs llabs div ldiv malloc calloc realloc free aligned_alloc exit abort atexit atoi atol
    atof strtod strtol getenv system qsort bsearch rand srand
    memcpy memmove memset memcmp memchr strlen strcpy strncpy strcat strcmp strncmp strchr strrchr
    strstr strdup strtok
    printf assert threadIdx blockIdx blockDim gridDim warpSize clock clock64 atomicAdd atomicSub
    atomicMax atomicMin atomicExch atomicCAS min max float2 float3 float4 double2 int2 int3 int4
    uint2 uint3 uint4 half dim3""".split()
)


def reason(name: str, exact: bool) -> str | None:
    """Why a kernel cannot be called `name`, or None where it can; `exact`: its entry point has
    that very name (a kernel with typed arguments; a generic one's are suffixed by their types)."""
    if not name.isascii():
        return "its entry points are C symbols named after it, which NVRTC wants in ASCII"
    if not exact:
        return None
    if name in CPP_KEYWORDS:
        return "it is a C++ keyword, and its entry point is a C function of that name"
    if name in LIBRARY_NAMES:
        return "its entry point is a C function of that name, which the C/C++ or CUDA headers declare already"
    return None
