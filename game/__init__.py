"""Programs built on the engine: the demo game, the blending testbed and the camera lab."""

import os

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # no pygame banner on every start
