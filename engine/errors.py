"""Typed errors and warnings raised by Ossa.

Every error Ossa raises on purpose derives from :class:`OssaError` and also from the builtin
category a caller would expect (``ValueError`` for bad data, ``RuntimeError`` for a missing GL
context), so ``except ValueError`` keeps working. Messages say what was expected and what arrived.
"""

from __future__ import annotations


class OssaError(Exception):
    """Base of every error Ossa raises on purpose."""


class InvalidInputError(OssaError, ValueError):
    """An argument has the wrong shape or dtype, or holds NaN/inf where numbers are required."""


class DegenerateInputError(InvalidInputError):
    """Geometry with no defined answer: zero-length axis, zero quaternion, eye == target, ..."""


class SkeletonMismatchError(OssaError, ValueError):
    """Poses, clips or masks that belong to a different skeleton than the one given."""


class AssetError(OssaError, ValueError):
    """A file (glTF, GLB, BVH) is malformed or violates its specification.

    Parameters
    ----------
    message
        What was wrong, including what was expected.
    file
        The file being read, if known.
    where
        The location inside the file: a JSON path such as ``animations[0].samplers[2].input``,
        or ``line 12`` for text formats.
    """

    def __init__(self, message: str, *, file: str | None = None, where: str | None = None) -> None:
        self.file = file
        self.where = where
        self.problem = message
        parts = [p for p in (file, where) if p]
        prefix = ": ".join(parts)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class GLContextError(OssaError, RuntimeError):
    """No usable OpenGL context (none current, or a version below what Ossa needs)."""


class ShaderError(OssaError, RuntimeError):
    """A shader file is missing or fails to compile or link; the message names the file."""


class OssaWarning(UserWarning):
    """Something the specification allows but that is suspicious (e.g. weights summing to 0.9)."""
