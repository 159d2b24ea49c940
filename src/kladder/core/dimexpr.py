"""Dim expressions: a value range's bounds written over dim names (`range=(0, "E-1")`,
`(1, "2*S")`). A tiny evaluator over Python's own parse tree that admits only integers, dim
names, + - * // and parentheses: a spec's text is never eval'd."""
from __future__ import annotations

import ast
import operator

OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}


class DimExprError(ValueError):
    """The text is not a dim expression; the message says what is not admitted."""


def _parse(text: str) -> ast.AST:
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise DimExprError(f"{text!r} does not parse") from None


def _walk(node: ast.AST, names: list[str]) -> None:
    if isinstance(node, ast.BinOp) and type(node.op) in OPS:
        _walk(node.left, names)
        _walk(node.right, names)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        _walk(node.operand, names)
    elif isinstance(node, ast.Name):
        names.append(node.id)
    elif not (isinstance(node, ast.Constant) and type(node.value) is int):
        raise DimExprError(f"{ast.unparse(node)!r} is not an integer, a dim name or + - * //")


def names(text: str) -> list[str]:
    """The dim names `text` reads, in order; DimExprError if it is not a dim expression."""
    found: list[str] = []
    _walk(_parse(text), found)
    return list(dict.fromkeys(found))


def _eval(node: ast.AST, sizes: dict[str, int]) -> int:
    if isinstance(node, ast.BinOp):
        return OPS[type(node.op)](_eval(node.left, sizes), _eval(node.right, sizes))
    if isinstance(node, ast.UnaryOp):
        return -_eval(node.operand, sizes)
    if isinstance(node, ast.Name):
        return sizes[node.id]
    return node.value


def evaluate(text: str, sizes: dict[str, int]) -> int:
    """The value of `text` at a point's sizes ("E-1" at E = 8 is 7)."""
    node = _parse(text)
    _walk(node, [])
    return _eval(node, sizes)
