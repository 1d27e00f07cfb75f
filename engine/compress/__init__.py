"""Error-bounded clip compression, clip libraries, and sampling straight from the compressed bits.

- :func:`compress_clip`: a clip in, a :class:`CompressedClip` out whose virtual vertices (a shell
  around every joint, :func:`shell_radii`) never move by more than the tolerance through the
  whole hierarchy, measured on the packed bits at every checked time.
- :class:`ClipLibrary`: compressed clips and their skeletons; :func:`save_library` /
  :func:`load_library` write and map the ``.ossalib`` file (:mod:`engine.compress.fileformat`).
- :func:`engine.anim.sample`, :class:`engine.backend.ClipBank` (the compiled frame kernels) and
  the :class:`engine.player.Player` (so the Animator and the graph) take a :class:`CompressedClip`
  like any clip, sampled from its bits.

See ``docs/compression.md``.
"""

from engine.compress.clip import CompressedClip
from engine.compress.compressor import DEFAULT_TOLERANCE, compress_clip
from engine.compress.fileformat import SUFFIX, LibraryFormatError, is_library, load_library, save_library
from engine.compress.library import ClipLibrary
from engine.compress.metric import DEFAULT_SHELL, shell_radii

__all__ = [
    "DEFAULT_SHELL",
    "DEFAULT_TOLERANCE",
    "SUFFIX",
    "ClipLibrary",
    "CompressedClip",
    "LibraryFormatError",
    "compress_clip",
    "is_library",
    "load_library",
    "save_library",
    "shell_radii",
]
