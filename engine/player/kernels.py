"""The player's compiled layer step, for controllers' kernels that decide a layer entry as they move it (numba only).

A controller on the compiled player may fuse its write of the layers' weights and times with the
player's move, in one pass: its kernel sets an entry's weight, moves the entry's cell with
:func:`move_layer` (inlined: scalars in, scalars out) and writes the results into the arrays
:meth:`~engine.player.Player.advance_with` gives it. The formula stays
the player's, in one copy (:func:`engine.backend._clock_kernels.move_layer`), and the controller
does not choose the backend: it takes this path where the player's backend is numba. Imported by
kernel modules only (``engine.graph._leaf_kernels``), never by the player's numpy path.
"""

from __future__ import annotations

from typing import Any

from engine.backend import _clock_kernels, kernel_cache
from engine.backend._clock_kernels import move_layer

__all__ = ["follow", "move_layer"]


def follow(dispatcher: Any, module_file: str) -> None:
    """Key the numba cache of ``module_file`` (a kernel module inlining :func:`move_layer`) by the player's step too.

    ``dispatcher``: any cached kernel of that module. Call it at the end of the module.
    """
    kernel_cache.follow(dispatcher, module_file, (_clock_kernels,))
