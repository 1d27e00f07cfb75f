"""Animation-blending testbed, ``python -m game.blend_testbed``: see :mod:`game.blend_testbed.testbed`."""

from game.blend_testbed.testbed import BlendTestbed, build_parser, main

__all__ = ["BlendTestbed", "build_parser", "main"]
