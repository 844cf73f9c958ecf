"""A kernel's Python source: its AST, where it lives, and errors that point into it."""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass

from ..errors import CompileError


@dataclass
class Source:
    """The parsed source of one Python function, with the offsets back into its file."""

    function: object
    tree: ast.FunctionDef
    filename: str
    first_line: int  # file line of the snippet's first line
    indent: int  # columns textwrap.dedent removed
    lines: list[str]  # the file's lines of the snippet, as written

    @classmethod
    def of(cls, function) -> Source:
        name = getattr(function, "__qualname__", function)
        if getattr(function, "__name__", None) == "<lambda>":
            raise CompileError("a lambda cannot be a kernel or @g.func; write it as a def in a .py file")
        if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
            raise CompileError(f"{name} is an async def; kernels and @g.func functions are plain def functions")
        try:
            lines, first_line = _source_lines(function)
        except (OSError, TypeError) as e:
            raise CompileError(
                f"cannot read the source of {getattr(function, '__qualname__', function)!r}: {e}; "
                "kernels must be defined in a .py file"
            ) from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != text else 0
        module = ast.parse(dedented)
        tree = module.body[0]
        if not isinstance(tree, ast.FunctionDef):
            raise CompileError(f"{function.__qualname__} is not a plain def function")
        if tree.name != function.__name__:  # the file was edited after the function was defined
            raise CompileError(
                f"the source of {function.__qualname__!r} has changed since it was defined (its line now "
                f"starts `def {tree.name}`); re-import its module or restart Python"
            )
        filename = inspect.getsourcefile(function) or inspect.getfile(function)
        return cls(function, tree, filename, first_line, indent, [line.rstrip("\n") for line in lines])

    @property
    def name(self) -> str:
        return self.function.__name__

    def line_of(self, node: ast.AST) -> int:
        """The file line of `node`."""
        return self.first_line + getattr(node, "lineno", 1) - 1

    def error(self, node: ast.AST, message: str) -> CompileError:
        """A CompileError naming the function, file and line, with the line and a caret under `node`."""
        line = self.line_of(node)
        text = self.lines[line - self.first_line] if 0 <= line - self.first_line < len(self.lines) else ""
        col = getattr(node, "col_offset", 0) + self.indent
        caret = " " * col + "^"
        err = CompileError(f"{message} in {self.name!r} ({self.filename}:{line})\n    {text}\n    {caret}")
        err.filename, err.lineno, err.function = self.filename, line, self.name
        return err


def _source_lines(function) -> tuple[list[str], int]:
    """The function's lines as written and the file line of the first: what inspect reads, or
    the text a function rebuilt from a pickle carries (lang/pickling.py), which no file holds."""
    carried = getattr(function, "__gompute_source_lines__", None)
    return carried if carried is not None else inspect.getsourcelines(function)
