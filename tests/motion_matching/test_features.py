"""Feature vectors of a known clip against an independent computation: per frame, plain loops, scipy rotations.

The oracle here re-derives every column from the source clip's keys with its own forward kinematics
(4×4 matrices joint by joint), its own root smoothing (an explicit convolution), and velocities as
Richardson-extrapolated finite differences of the playback (root-space pose slerped between
frames, root moving linearly), none of it through the engine's jobs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation, Slerp

from engine.anim.clip_velocity import sample_with_velocity
from engine.anim.velocity import PoseVelocity
from engine.errors import InvalidInputError
from engine.motion_matching import BuildOptions, build_database
from engine.motion_matching.features import pose_features, trajectory_features
from engine.motion_matching.layout import DEFAULT_WEIGHTS, make_layout

FPS = 60.0


def _local_matrix(t: np.ndarray, q: np.ndarray) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = Rotation.from_quat(q).as_matrix()
    m[:3, 3] = t
    return m


def _world(parents, translations, rotations) -> list[np.ndarray]:
    """Model matrices of one frame, joint by joint (parents come first)."""
    out: list[np.ndarray] = []
    for j, parent in enumerate(parents):
        local = _local_matrix(translations[j], rotations[j])
        out.append(local if parent < 0 else out[parent] @ local)
    return out


def _smooth(values: list[np.ndarray], sigma: float) -> list[np.ndarray]:
    """Gaussian of ``sigma`` frames, the ends extended by point reflection, one frame at a time."""
    last = len(values) - 1
    half = min(math.ceil(3 * sigma), last)
    weights = [math.exp(-0.5 * (o / sigma) ** 2) for o in range(-half, half + 1)]
    total = sum(weights)

    def at(i: int) -> np.ndarray:
        if i < 0:
            return 2 * values[0] - values[-i]
        if i > last:
            return 2 * values[last] - values[2 * last - i]
        return values[i]

    return [
        sum(w * at(k + o) for w, o in zip(weights, range(-half, half + 1), strict=True)) / total
        for k in range(last + 1)
    ]


class Oracle:
    """Features of the turning walk, frame by frame."""

    def __init__(self, mannequin, source) -> None:
        skeleton = mannequin.skeleton
        self.parents = [int(p) for p in skeleton.parents]
        names = skeleton.names
        self.hips, self.feet = names.index("hips"), (names.index("foot_l"), names.index("foot_r"))
        clip = source.clip
        keys = clip.channel(0, "rotation").times
        frames = round(keys[-1] * FPS) + 1
        self.frames = frames
        translations = np.broadcast_to(skeleton.rest_translations, (frames, len(names), 3)).copy()
        rotations = np.broadcast_to(skeleton.rest_rotations, (frames, len(names), 4)).copy()
        for channel in clip.channels:  # database frame k is source key 2k (120 fps keys)
            target = translations if channel.path == "translation" else rotations
            target[:, channel.target] = channel.values[::2][:frames]
        rest = _world(self.parents, skeleton.rest_translations, skeleton.rest_rotations)
        thighs = rest[names.index("upper_leg_l")][:3, 3] - rest[names.index("upper_leg_r")][:3, 3]
        forward = np.cross(thighs, [0.0, 1.0, 0.0])
        forward /= np.linalg.norm(forward)
        hips_positions, facings = [], []
        for k in range(frames):
            world = _world(self.parents, translations[k], rotations[k])
            hips_positions.append(world[self.hips][:3, 3] * [1.0, 0.0, 1.0])
            turn = world[self.hips][:3, :3] @ rest[self.hips][:3, :3].T
            facing = (turn @ forward) * [1.0, 0.0, 1.0]
            facings.append(facing / np.linalg.norm(facing))
        self.roots = _smooth(hips_positions, 0.2 * FPS)
        smoothed = _smooth(facings, 0.3 * FPS)
        yaws = [math.atan2(f[0], f[2]) for f in smoothed]
        for k in range(1, frames):  # unwrap
            while yaws[k] - yaws[k - 1] > math.pi:
                yaws[k] -= 2 * math.pi
            while yaws[k] - yaws[k - 1] < -math.pi:
                yaws[k] += 2 * math.pi
        self.yaws = yaws
        # root space: the root joint re-expressed in the root of each frame
        self.local_t, self.local_q = translations.copy(), rotations.copy()
        for k in range(frames):
            heading = Rotation.from_rotvec([0.0, yaws[k], 0.0])
            self.local_t[k, 0] = heading.inv().apply(translations[k, 0] - self.roots[k])
            self.local_q[k, 0] = (heading.inv() * Rotation.from_quat(rotations[k, 0])).as_quat()

    def _root_space(self, k: int, joint: int) -> np.ndarray:
        return _world(self.parents, self.local_t[k], self.local_q[k])[joint][:3, 3]

    def _played(self, a: int, b: int, s: float, joint: int) -> np.ndarray:
        """World position of ``joint`` a fraction ``s`` of the way from frame ``a`` to frame ``b``."""
        root = (1 - s) * self.roots[a] + s * self.roots[b]
        yaw = (1 - s) * self.yaws[a] + s * self.yaws[b]
        t = (1 - s) * self.local_t[a] + s * self.local_t[b]
        q = np.stack(
            [
                Slerp([0.0, 1.0], Rotation.from_quat([self.local_q[a, j], self.local_q[b, j]]))([s]).as_quat()[0]
                for j in range(len(self.parents))
            ]
        )
        return root + Rotation.from_rotvec([0.0, yaw, 0.0]).apply(_world(self.parents, t, q)[joint][:3, 3])

    def velocity(self, k: int, joint: int) -> np.ndarray:
        """The joint's world velocity arriving at frame ``k`` (leaving it at frame 0), in root axes."""
        a, b, s_end = (k - 1, k, 1.0) if k > 0 else (0, 1, 0.0)
        sign = -1.0 if k > 0 else 1.0

        def difference(h: float) -> np.ndarray:
            return sign * (self._played(a, b, s_end + sign * h, joint) - self._played(a, b, s_end, joint)) / (h / FPS)

        h = 1e-4
        estimate = 2 * difference(h / 2) - difference(h)  # Richardson: the O(h) term cancels
        return Rotation.from_rotvec([0.0, self.yaws[k], 0.0]).inv().apply(estimate)

    def root(self, i: int) -> tuple[np.ndarray, float]:
        """The root at frame ``i``, continued past the last frame by its last step."""
        last = self.frames - 1
        if i <= last:
            return self.roots[i], self.yaws[i]
        turn = self.yaws[last] - self.yaws[last - 1]
        step = Rotation.from_rotvec([0.0, self.yaws[last], 0.0]).inv().apply(self.roots[last] - self.roots[last - 1])
        position, yaw = self.roots[last].copy(), self.yaws[last]
        for _ in range(i - last):
            yaw += turn
            position = position + Rotation.from_rotvec([0.0, yaw, 0.0]).apply(step)
        return position, yaw

    def features(self, k: int, horizons) -> np.ndarray:
        heading = Rotation.from_rotvec([0.0, self.yaws[k], 0.0]).inv()
        row = []
        for foot in self.feet:
            row += list(self._root_space(k, foot))
        for foot in self.feet:
            row += list(self.velocity(k, foot))
        row += list(self.velocity(k, self.hips))
        future = [self.root(k + h) for h in horizons]
        for position, _ in future:
            local = heading.apply(position - self.roots[k])
            row += [local[0], local[2]]
        for _, yaw in future:
            row += [math.sin(yaw - self.yaws[k]), math.cos(yaw - self.yaws[k])]
        return np.array(row)


@pytest.fixture(scope="module")
def single(turning_source, mannequin):
    """The turning walk alone (no mirror), and its oracle."""
    database = build_database([turning_source], options=BuildOptions(mirror=False, end_margin=0))
    return database, Oracle(mannequin, turning_source)


@pytest.mark.parametrize("frame", [0, 1, 2, 57, 90, 123, 150, 179, 180])
def test_features_equal_the_independent_computation(single, frame) -> None:
    database, oracle = single
    assert database.num_frames == oracle.frames == 181
    expected = oracle.features(frame, database.layout.horizons)
    np.testing.assert_allclose(database.features[frame], expected, rtol=0, atol=1e-8)


def test_normalisation_is_holdens_per_group_rule(single) -> None:
    database, _ = single
    features = database.features
    for group in database.layout.groups:
        columns = features[:, group.columns]
        sigma = np.mean([np.sqrt(np.mean((c - c.mean()) ** 2)) for c in columns.T])
        np.testing.assert_allclose(database.offset[group.columns], columns.mean(axis=0), atol=1e-15)
        np.testing.assert_allclose(database.scale[group.columns], DEFAULT_WEIGHTS[group.name] / sigma, rtol=1e-12)
    np.testing.assert_allclose(database.normalized, (features - database.offset) * database.scale, atol=1e-15)


def test_the_query_from_a_played_frame_equals_its_stored_features(turning_database) -> None:
    """The runtime path: sample the range clip at a frame's time (pose and velocity), compute its pose columns."""
    db = turning_database
    width = db.layout.group("hip_velocity").stop
    for r in range(db.num_ranges):
        clip, start, stop = db.clip(r), db.range_starts[r], db.range_stops[r]
        frames = np.arange(start, stop)
        times = db.frame_time(frames)
        pose, velocity = sample_with_velocity(clip, db.skeleton, times)
        _, leaving = sample_with_velocity(clip, db.skeleton, times[:1], side="right")
        velocity.linear[0], velocity.angular[0], velocity.scaling[0] = (
            leaving.linear[0],
            leaving.angular[0],
            leaving.scaling[0],
        )
        found = pose_features(
            db.layout, db.skeleton, pose, velocity, db.root_velocities[frames], db.root_yaw_rates[frames]
        )
        np.testing.assert_allclose(found, db.features[frames, :width], atol=1e-9)


def test_trajectory_features_of_roots_straight_ahead() -> None:
    layout = make_layout({}, (1, 2), None)
    found = trajectory_features(
        layout,
        np.array([[1.0, 0.0, 1.0]]),
        np.array([np.pi / 2]),  # facing +X
        np.array([[[2.0, 0.0, 1.0], [3.0, 0.0, 0.0]]]),
        np.array([[np.pi / 2, np.pi]]),
    )
    np.testing.assert_allclose(found, [[0.0, 1.0, 1.0, 2.0, 0.0, 1.0, 1.0, 0.0]], atol=1e-15)


def test_feature_functions_refuse_mismatched_shapes(turning_database) -> None:
    db = turning_database
    pose = db.poses(np.arange(3))
    still = PoseVelocity(np.zeros((3, 25, 3)), np.zeros((3, 25, 3)), np.zeros((3, 25, 3)))
    with pytest.raises(InvalidInputError, match="root_velocity must be"):
        pose_features(db.layout, db.skeleton, pose, still, np.zeros((2, 3)), np.zeros(3))
    with pytest.raises(InvalidInputError, match="future_positions"):
        trajectory_features(db.layout, np.zeros((3, 3)), np.zeros(3), np.zeros((3, 2, 3)), np.zeros((3, 2)))
