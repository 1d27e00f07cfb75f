"""``python3 -m engine.cli``: the ``ossa`` command without the console script."""

from engine.cli import main

raise SystemExit(main())
