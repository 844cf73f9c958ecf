"""The kernel language: typed Python functions → typed IR → C++ for CUDA, HIP and the host CPU.

`frontend` (statements) and `exprs` (expressions) turn Python's AST into the IR of `ir`, typed by
the NumPy 2 rules in `typing_rules`; `builtins` is the table of builtins; `codegen` spells IR as C++;
`module` assembles a module: a backend prelude from `preludes/`, params structs, functions and
entry points. `kernel` holds the decorators users see.

`import gompute.lang as g` gives the language on its own: the decorators, the builtins, the
scalar types and `Params`, spelled as `import gompute as g` spells them.
"""

from ..abi import Params
from ..types import bf16, bool_, c64, c128, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
from .builtins import *  # noqa: F403 - the builtins, as gompute.lang.NAME
from .builtins import BUILTINS, Builtin
from .kernel import Func, Image, MapKernel, func, map_kernel
from .module import EntryArg, EntryPoint, Specialization

__all__ = [
    "bool_",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "f16",
    "bf16",
    "f32",
    "f64",
    "c64",
    "c128",
    "Params",
    "map_kernel",
    "func",
    "MapKernel",
    "Func",
    "Image",
    "EntryPoint",
    "EntryArg",
    "Specialization",
    "Builtin",
    "BUILTINS",
    *BUILTINS,
]
