"""Ossa's runtime: batched quaternion math, skeletons, clips, sampling, blending, IK, camera.

The public surface is small; import submodules (``engine.math``, ``engine.anim``, ...) for the
full API. Conventions: ``docs/conventions.md``.
"""

__version__ = "0.1.0"
