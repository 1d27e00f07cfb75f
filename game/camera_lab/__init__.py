"""The camera lab: ``python -m game.camera_lab`` (see :mod:`game.camera_lab.lab` for what to look at)."""

from game.camera_lab.lab import CameraLab, build_parser, main

__all__ = ["CameraLab", "build_parser", "main"]
