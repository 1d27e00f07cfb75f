"""``python -m game.demo``: start the demo game."""

from game.demo.game import main

raise SystemExit(main())
