"""``python -m game.blend_testbed``: run the testbed (options: ``--help``)."""

from game.blend_testbed.testbed import main

raise SystemExit(main())
