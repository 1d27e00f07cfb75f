"""Programs built on the engine: the demo game, the blending testbed and the camera lab."""
