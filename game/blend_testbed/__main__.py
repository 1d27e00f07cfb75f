"""``python -m game.blend_testbed``: the testbed (options: ``--help``); with ``--transitions`` the transitions view."""

import sys

from game.blend_testbed import testbed, transitions

if "--transitions" in sys.argv[1:]:
    raise SystemExit(transitions.main([a for a in sys.argv[1:] if a != "--transitions"]))
raise SystemExit(testbed.main())
