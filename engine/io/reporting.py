"""Warnings of a load, emitted once it is done and attributed to the caller's line.

The loaders collect what they find suspicious while they read (:meth:`GltfDocument.warn
<engine.io.gltf.GltfDocument.warn>`) and emit it when the public function returns, through
:func:`warn_at_caller`: the :class:`~engine.errors.OssaWarning` then points at the line of the
program that called ``load_gltf`` or ``load_character`` (``game/model.py:412``), not at a line
inside ``engine/io`` — Python's own ``stacklevel`` counts frames, and the loaders' depth varies.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

from engine.errors import OssaWarning

#: The folder whose frames a warning skips: ``engine/io``.
_PACKAGE = str(Path(__file__).resolve().parent) + os.sep


def warn_at_caller(message: str, category: type[Warning] = OssaWarning) -> None:
    """Issue ``message`` as a ``category`` warning attributed to the first caller outside ``engine/io``."""
    level = 1  # 1: this function's own frame
    frame = sys._getframe(0)
    while frame.f_back is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
