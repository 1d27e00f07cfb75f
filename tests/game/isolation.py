"""Run one real-window session in a fresh Python process.

A process that has already made and dropped OpenGL contexts (the headless EGL runs of the other
tests) cannot always make a new window's GLX context current afterwards; a fresh interpreter
always starts clean. The function runs in a spawned child; its arguments and result are pickled.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def in_fresh_process(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` evaluated in a newly spawned interpreter (module-level functions only)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(function, args)
