"""Motion matching: a feature database of real motion, searched for many characters at once.

Instead of a hand-built state machine, each character searches a database of motion every
~0.1 s for the frame whose pose and future trajectory best match what it is asked to do, and
plays from there (Clavet's motion matching, as in Holden's "Learned Motion Matching" and his open
implementation). The pieces, offline to runtime:

- :func:`load_sources` (BVH takes, glTF clips, a tags sidecar) → :class:`ClipSource`;
- :func:`build_database` (retarget, mirror, resample, roots, features, normalisation) →
  :class:`Database`; :func:`save_database` / :func:`load_database` (a versioned ``.npz``,
  ``docs/motion_matching.md``);
- :class:`Trajectory`, :func:`advance_trajectory`, :func:`predict_trajectory`: the desired
  trajectory from the desired velocity and facing (critically damped springs);
- :func:`query_features`: the query vector from a current root-space pose and the trajectory;
- :func:`search`: the best frame for every character, by brute force, blocks of frames or a k-d
  tree, with a continuing-pose bias and tag filters.

Examples
--------
The mannequin's walk and run go straight ahead, so the facing columns cannot tell frames apart
(the build says so):

>>> import warnings
>>> from engine.io import load_character
>>> mannequin = load_character("assets/mannequin.glb")
>>> sources = [ClipSource(n, mannequin.clips[n], mannequin.skeleton, tags=(n,)) for n in ("walk", "run")]
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     database = build_database(sources, options=BuildOptions(end_margin=10))
>>> print(caught[0].message)
feature groups ['trajectory_directions'] are constant over every frame: they cannot rank frames
>>> database.num_ranges, database.range_names[1], database.tag_names
(4, 'walk (mirrored)', ('walk', 'run'))
>>> result = search(database, database.normalized[[5, 70]], include=["run"])
>>> [database.range_names[r] for r in database.frame_range(result.frames)]
['run', 'run (mirrored)']
"""

from engine.motion_matching.build import BuildOptions, build_database
from engine.motion_matching.database import Database, DatabaseError
from engine.motion_matching.fileformat import load_database, save_database
from engine.motion_matching.layout import DEFAULT_WEIGHTS, GROUPS, FeatureLayout
from engine.motion_matching.search import METHODS, SearchResult, search
from engine.motion_matching.sources import ClipSource, TagSpan, load_sources
from engine.motion_matching.trajectory import (
    Trajectory,
    advance_trajectory,
    horizon_times,
    predict_trajectory,
    query_features,
)

__all__ = [
    "DEFAULT_WEIGHTS",
    "GROUPS",
    "METHODS",
    "BuildOptions",
    "ClipSource",
    "Database",
    "DatabaseError",
    "FeatureLayout",
    "SearchResult",
    "TagSpan",
    "Trajectory",
    "advance_trajectory",
    "build_database",
    "horizon_times",
    "load_database",
    "load_sources",
    "predict_trajectory",
    "query_features",
    "save_database",
    "search",
]
