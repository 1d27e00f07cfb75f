"""``python -m game.camera_lab``: start the camera lab."""

from game.camera_lab.lab import main

raise SystemExit(main())
