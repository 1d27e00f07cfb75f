"""The motion-matching controller: switches that never jump, searches that equal a brute-force oracle, its schedule.

The CMU locomotion set on the mannequin is the database. References are independent of the
controller's code: the clips' own per-step joint motion (the timeline sampled along each range
and placed on the database's root track by ``np.interp``), and a numpy brute force over the
normalised rows for the search.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from engine.anim.local_to_model import model_from_pose
from engine.anim.sampling import sample
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.motion_matching import Database, build_database
from engine.motion_matching.controller import ControllerOptions, MatchingController
from engine.player import Player

pytestmark = pytest.mark.assets

Request = Callable[[float], tuple[np.ndarray, float]]


def tour(t: float) -> tuple[np.ndarray, float]:
    """Stand, walk, a sharp right turn, run back the other way, stop: the request at ``t`` seconds."""
    if t < 0.4:
        return np.zeros(3), 0.0
    if t < 1.2:
        return np.array([0.0, 0.0, 1.4]), 0.0
    if t < 2.0:
        return np.array([1.4, 0.0, 0.0]), 0.5 * np.pi
    if t < 2.6:
        return np.array([0.0, 0.0, -3.5]), np.pi
    return np.zeros(3), np.pi


def world_joints(controller: MatchingController) -> np.ndarray:
    """``(C, J, 3)`` world joint positions: the player's model space placed at each root."""
    model = controller.player.model[..., :3, 3]
    c, s = np.cos(controller.yaws)[:, None], np.sin(controller.yaws)[:, None]
    x, z = model[..., 0], model[..., 2]
    turned = np.stack((c * x + s * z, model[..., 1], -s * x + c * z), axis=-1)
    return turned + controller.positions[:, None, :]


def clips_largest_step(db: Database, dt: float) -> np.ndarray:
    """``(J,)`` each joint's largest displacement in a step of ``dt`` as the ranges play, root included."""
    largest = np.zeros(db.skeleton.num_joints)
    timeline = db.timeline()
    for r in range(db.num_ranges):
        start, stop = int(db.range_starts[r]), int(db.range_stops[r])
        frames = np.arange(start, stop - 1, dt * db.fps)
        pose = sample(timeline, db.skeleton.rest_pose, frames / db.fps)
        model = model_from_pose(db.skeleton, pose)[..., :3, 3]
        span = np.arange(start, stop)
        yaw = np.interp(frames, span, db.root_yaws[start:stop])
        x = np.interp(frames, span, db.root_positions[start:stop, 0])
        z = np.interp(frames, span, db.root_positions[start:stop, 2])
        c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
        world = np.stack(
            (
                c * model[..., 0] + s * model[..., 2] + x[:, None],
                model[..., 1],
                -s * model[..., 0] + c * model[..., 2] + z[:, None],
            ),
            axis=-1,
        )
        largest = np.maximum(largest, np.linalg.norm(np.diff(world, axis=0), axis=-1).max(axis=0))
    return largest


def run(controller: MatchingController, steps: np.ndarray, request: Request = tour) -> list[np.ndarray]:
    """Play ``steps`` (seconds each) with ``request``; the world joints after every step."""
    clock, seen = 0.0, []
    for dt in steps:
        velocity, yaw = request(clock)
        controller.update(float(dt), velocity, yaw)
        clock += float(dt)
        seen.append(world_joints(controller))
    return seen


@pytest.mark.parametrize("fps", [30.0, 60.0, 144.0, "random"])
def test_a_switch_never_jumps(cmu_database: Database, fps: float | str) -> None:
    """No joint moves further in one step than that joint moves in the clips in a step of that length."""
    rng = np.random.default_rng(3)
    steps = rng.uniform(1 / 144, 1 / 30, 130) if fps == "random" else np.full(int(3.0 * float(fps)), 1.0 / float(fps))
    controller = MatchingController(cmu_database)
    seen = np.array(run(controller, steps))[:, 0]  # (steps, J, 3)
    assert controller.switches[0] >= 5  # the tour switches between clips
    moved = np.linalg.norm(np.diff(seen, axis=0), axis=-1)  # (steps - 1, J)
    if fps == "random":
        fastest = clips_largest_step(cmu_database, 1.0 / 144.0) * 144.0  # (J,) m/s
        assert np.all(moved / steps[1:, None] <= fastest)
    else:
        assert np.all(moved.max(axis=0) <= clips_largest_step(cmu_database, 1.0 / float(fps)))


def oracle(
    db: Database, queries: np.ndarray, current: np.ndarray, bias: float, exclude: list[str], play_on: np.ndarray
) -> np.ndarray:
    """The best frame of every query by plain numpy: every allowed frame's cost, the continuing one without bias.

    A continuing frame in the end margin competes where ``play_on`` says so.
    """
    costs = ((db.normalized[None, :, :] - queries[:, None, :]) ** 2).sum(axis=-1)
    continuing = np.arange(db.num_frames)[None, :] == current[:, None]
    costs = costs + bias * ~continuing
    tagged = (db.frame_tags & db.tag_mask(exclude)) == 0
    allowed = tagged[None, :] & (db.searchable[None, :] | (continuing & play_on[:, None]))
    return np.argmin(np.where(allowed, costs, np.inf), axis=1)


def wander(count: int, seed: int) -> Request:
    """Each character its own request: a new random velocity (0 to 3.5 m/s) and facing every 0.7 s."""
    rng = np.random.default_rng(seed)
    speeds = rng.uniform(0.0, 3.5, (10, count))
    headings = rng.uniform(-np.pi, np.pi, (10, count))

    def request(t: float) -> tuple[np.ndarray, np.ndarray]:
        k = int(t / 0.7)
        heading = headings[k]
        velocity = np.stack((np.sin(heading), np.zeros(count), np.cos(heading)), axis=-1) * speeds[k][:, None]
        return velocity, heading

    return request


@pytest.mark.parametrize("pose_from", ["player", "database"])
def test_the_controllers_searches_equal_the_oracle(cmu_database: Database, pose_from: str) -> None:
    options = ControllerOptions(exclude=("stylised",), pose_from=pose_from)
    controller = MatchingController(cmu_database, 12, options=options)
    request = wander(12, 5)
    searched = 0
    for k in range(90):
        controller.update(1 / 60, *request(k / 60))
        last = controller.last
        if last.characters.size:
            expected = oracle(cmu_database, last.queries, last.current, options.bias, ["stylised"], last.play_on)
            np.testing.assert_array_equal(last.frames, expected)
            searched += last.characters.size
    assert searched >= 12 * 12  # every 0.1 s, and more when the requests change sharply


def test_the_query_of_a_character_playing_a_frame_is_that_frames_features(cmu_database: Database) -> None:
    """At 60 fps a character plays whole frames: before any switch its query's pose part is that frame's row."""
    controller = MatchingController(cmu_database)
    width = min(g.start for g in cmu_database.layout.groups if g.name.startswith("trajectory_"))
    for _ in range(6):  # its first scheduled search is 0.1 s in
        controller.update(1 / 60, np.zeros(3), 0.0)
    last = controller.last
    assert list(last.characters) == [0]
    assert controller.switches[0] == 0 or last.switched[0]  # nothing switched before this search
    frame = int(last.current[0])
    assert abs(controller.frame_positions[0] - frame) < 1e-9 or last.switched[0]
    np.testing.assert_allclose(last.queries[0, :width], cmu_database.normalized[frame, :width], atol=1e-8)


def test_searches_are_staggered_every_interval(cmu_database: Database) -> None:
    """With a request that never changes, 60 characters search 10 a frame at 60 fps, each every 0.1 s."""
    controller = MatchingController(cmu_database, 60, options=ControllerOptions(exclude=("idle", "stylised")))
    per_frame = []
    for _ in range(36):
        controller.update(1 / 60, np.zeros(3), 0.0)
        per_frame.append(controller.last.characters.size)
    forced = controller.searches.sum() - 6 * 60  # searches forced at a range's end (none expected this short)
    assert forced <= 6
    assert np.median(per_frame) == 10
    assert set(controller.searches.tolist()) <= {6, 7}


def test_a_sharp_change_of_request_searches_at_once(cmu_database: Database) -> None:
    controller = MatchingController(cmu_database, 4, options=ControllerOptions(interval=10.0))
    for _ in range(3):
        controller.update(1 / 60, np.zeros(3), 0.0)
    assert controller.searches.tolist() == [0, 0, 0, 0]
    velocity = np.array([[0.0, 0.0, 0.4], [0.0, 0.0, 0.6], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    controller.update(1 / 60, velocity, np.array([0.0, 0.0, 0.4, 0.6]))
    assert controller.last.characters.tolist() == [1, 3]  # above 0.5 m/s or 0.5 rad, not below


def test_a_character_near_its_ranges_end_searches(cmu_database: Database) -> None:
    """With no scheduled search the character still never runs out of motion: it searches at the end margin."""
    db = cmu_database
    controller = MatchingController(db, options=ControllerOptions(interval=100.0))
    for k in range(600):
        controller.update(1 / 60, np.array([0.0, 0.0, 1.3]), 0.0)
        if controller.last.characters.size and k > 0:  # the first frame's search: the request changed sharply
            assert not db.searchable[controller.last.current[0]]
        assert controller.frames[0] < db.range_stops[controller.ranges[0]] - 1  # never held at a range's last frame
    assert controller.searches[0] >= 2
    assert np.linalg.norm(controller.positions[0]) > 8.0  # walked on for 10 s


def test_a_character_in_the_end_margin_waits_for_its_scheduled_search(cmu_sources, mannequin) -> None:
    """Standing still, a character plays into a range's end margin and searches on schedule: 10 searches a second.

    With 16_01 (standing before and after a jump), as the demo builds it: its best standing frames
    end its range.
    """
    db = build_database(cmu_sources, mannequin.skeleton)
    controller = MatchingController(db, options=ControllerOptions(exclude=("jump",)))
    margin_frames = 0
    for _ in range(600):
        controller.update(1 / 60, np.zeros(3), 0.0)
        margin_frames += not db.searchable[controller.frames[0]]
        assert controller.frames[0] < db.range_stops[controller.ranges[0]] - 1
    assert margin_frames > 0  # the standing frames are near the ranges' ends
    assert controller.searches[0] <= 101  # 10 s at one search every 0.1 s: none forced (19 a second before)


def test_min_jump_keeps_switches_within_a_range_that_far_apart(cmu_database: Database) -> None:
    db = cmu_database
    options = ControllerOptions(min_jump=0.2)
    controller = MatchingController(db, 8, options=options)
    request = wander(8, 2)
    jumps = []
    for k in range(240):
        controller.update(1 / 60, *request(k / 60))
        last = controller.last
        moved = last.switched & (db.frame_range(last.frames) == db.frame_range(last.current))
        jumps.extend(np.abs(last.frames - last.current)[moved].tolist())
    assert jumps
    assert min(jumps) > round(0.2 * db.fps)
    with pytest.raises(InvalidInputError, match="min_jump must be a number >= 0"):
        ControllerOptions(min_jump=-0.1)


def test_the_numpy_and_compiled_players_drive_the_same_motion(cmu_database: Database) -> None:
    runs = []
    for backend in ("numpy", "numba"):
        controller = MatchingController(cmu_database, player=Player(cmu_database.skeleton, 3, backend=backend))
        request = wander(3, 9)
        for k in range(60):
            controller.update(1 / 60, *request(k / 60))
        runs.append((controller.positions.copy(), controller.yaws.copy(), controller.player.model))
    np.testing.assert_allclose(runs[0][0], runs[1][0], atol=1e-12)
    np.testing.assert_allclose(runs[0][1], runs[1][1], atol=1e-12)
    np.testing.assert_allclose(runs[0][2], runs[1][2], atol=1e-12)


def test_bad_controllers_are_refused(cmu_database: Database, cmu_sources) -> None:
    db = cmu_database
    with pytest.raises(InvalidInputError, match="must be a motion-matching Database"):
        MatchingController("cmu.npz")  # type: ignore[arg-type]
    with pytest.raises(SkeletonMismatchError, match="is not the database's"):
        MatchingController(db, player=Player(cmu_sources[0].skeleton, 1))
    with pytest.raises(InvalidInputError, match="root-motion joint"):
        MatchingController(db, player=Player(db.skeleton, 1, root_motion="root"))
    for field, value in (("kind", "frozen"), ("method", "fast"), ("pose_from", "camera")):
        with pytest.raises(InvalidInputError, match=f"{field} must be one of"):
            ControllerOptions(**{field: value})
    for field in ("interval", "half_life", "clamp_distance"):
        with pytest.raises(InvalidInputError, match=f"{field} must be a positive number"):
            ControllerOptions(**{field: 0.0})
    with pytest.raises(InvalidInputError, match="bias must be a number >= 0"):
        ControllerOptions(bias=-1.0)
    with pytest.raises(InvalidInputError, match="no tag 'swim'"):
        MatchingController(db, options=ControllerOptions(include=("swim",)))
    with pytest.raises(InvalidInputError, match="leave no frame"):
        MatchingController(db, options=ControllerOptions(include=("walk",), exclude=("walk",)))
    controller = MatchingController(db, 2)
    controller.player.begin_frame(1 / 60)
    with pytest.raises(InvalidInputError, match=r"desired_velocity must be \(3,\) or \(2, 3\)"):
        controller.control(np.zeros((3, 3)), 0.0)
    with pytest.raises(InvalidInputError, match="desired_velocity"):
        controller.control(np.array([np.nan, 0.0, 0.0]), 0.0)
    controller.player.begin_frame(np.array([1 / 60, 1 / 30]))
    with pytest.raises(InvalidInputError, match="one dt for all its characters"):
        controller.control(np.zeros(3), 0.0)
