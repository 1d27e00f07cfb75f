"""Per-frame crowd kernels on two backends: compiled (numba, multi-core) and the numpy reference.

- :class:`ClipBank`: a skeleton and its clips packed once for the kernels.
- :class:`FrameState`: one crowd's layers (which clip each plays), masks, overrides, sampling
  cursors (:mod:`engine.backend.state`).
- :func:`evaluate_frame`: sample + blend + local→model + palette, fused per character, into a
  caller-owned float32 column-major palette ready for upload; :func:`sample_blend` and
  :func:`finalize` split it around a stage that edits the local pose (IK).
- :class:`BufferFrame`: the same jobs over a player's batch-innermost buffers
  (:class:`engine.player.Player`).
- :class:`UpdateSchedule`: animation LOD (characters updated every frame, every 2nd, 4th, ...).
- :func:`active_backend`, :func:`backend_description`: which backend runs (``OSSA_BACKEND``).
"""

from engine.backend.bank import ClipBank
from engine.backend.buffers import BufferFrame
from engine.backend.frame import evaluate_frame, finalize, sample_blend
from engine.backend.lod import UpdateSchedule
from engine.backend.select import BACKENDS, active_backend, backend_description, default_threads
from engine.backend.state import FrameState

__all__ = [
    "BACKENDS",
    "BufferFrame",
    "ClipBank",
    "FrameState",
    "UpdateSchedule",
    "active_backend",
    "backend_description",
    "default_threads",
    "evaluate_frame",
    "finalize",
    "sample_blend",
]
