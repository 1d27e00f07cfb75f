"""The playable demo game: ``python -m game.demo`` (see :mod:`game.demo.game` for what to look at)."""
