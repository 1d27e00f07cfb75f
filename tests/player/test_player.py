"""The player: layers, overrides, LOD, captures, the transition stage and its outputs, on both backends.

References: the jobs of engine.anim called directly (blend of the nested layer motion, the
additive formula), finite differences of the player's own poses for its velocities, the stateless
inertialization jobs, and the numpy backend for the compiled one (1e-12).
"""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
import pytest

from engine.anim import blend, sample, subtree_mask
from engine.anim.inertialization import pose_offsets, quintic_decay, quintic_offset
from engine.anim.velocity import pose_velocity
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.player import Loop, Player
from engine.player.offsets import turn_components
from engine.procedural.mannequin import build_mannequin
from tests.helpers import assert_quat_allclose

BACKENDS = ("numba", "numpy")


@pytest.fixture(scope="module")
def mannequin():
    return build_mannequin()


def rig(mannequin, backend: str, count: int = 20, root: str | None = None) -> tuple[Player, dict[str, int]]:
    """Walk and run blended, the wave as an override of them on the upper body, an additive lean."""
    player = Player(mannequin.skeleton, count, backend=backend, root_motion=root)
    clips = mannequin.clips
    rows = {name: player.add_layer(clips[name]) for name in ("walk", "run")}
    upper = subtree_mask(mannequin.skeleton, "spine")
    rows["wave"] = player.add_layer(clips["wave"], mask=upper, loop=Loop.ONCE)
    rows["lean"] = player.add_layer(clips["lean_look"], additive=True)
    rows["override"] = player.add_override(range(rows["walk"], rows["run"] + 1), upper)
    rng = np.random.default_rng(count)
    player.set_weights([rows["walk"], rows["run"]], rng.uniform(0.0, 1.0, (2, count)))
    player.set_weights(rows["wave"], rng.uniform(0.0, 1.0, count))
    player.set_override_weights(rows["override"], player.weights[rows["wave"]])
    player.set_weights(rows["lean"], rng.uniform(0.0, 1.0, count))
    return player, rows


def play(player: Player, rows: dict[str, int], frames: int, dt: float, characters=None) -> None:
    layers = [rows[n] for n in ("walk", "run", "wave", "lean")]
    for _ in range(frames):
        player.begin_frame(dt)
        player.advance_layers(layers, player.raw_times[layers] + dt, True)
        player.pose(characters)
        player.finalize()


def step(player: Player, layers: list[int], dt: float = 1 / 60) -> None:
    """Begin a frame of ``dt`` and move ``layers`` by it."""
    player.begin_frame(dt)
    player.advance_layers(layers, player.raw_times[layers] + dt, True)


def walking(player: Player, clips, frames: int) -> tuple[int, int]:
    """Walk and run layers on ``player``, the walk played alone for ``frames`` frames at 60 FPS."""
    walk, run = player.add_layer(clips["walk"]), player.add_layer(clips["run"])
    player.set_weights(walk, 1.0)
    for _ in range(frames):
        step(player, [walk, run])
        player.pose()
    return walk, run


@pytest.mark.parametrize("root", [None, "root"])
def test_both_backends_agree_with_overrides_additive_layers_and_lod(mannequin, root) -> None:
    results = []
    for backend in BACKENDS:
        player, rows = rig(mannequin, backend, root=root)
        play(player, rows, 5, 1 / 60)
        play(player, rows, 3, 1 / 30, characters=np.array([1, 4, 5, 19]))
        results.append(
            (
                player.local_pose.rotations,
                player.local_pose.translations,
                player.palette,
                player.root_motion.translation,
            )
        )
    for compiled, reference in zip(*results, strict=True):
        np.testing.assert_allclose(compiled, reference, rtol=0.0, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_override_is_the_nested_layer_blend(mannequin, backend) -> None:
    """walk under the wave by w on the upper body: ``blend(walk, walk, wave)`` with (1, 1-w, w) and (1-m, m, m)."""
    skeleton, clips = mannequin.skeleton, mannequin.clips
    count = 17
    player = Player(skeleton, count, backend=backend)
    walk, wave = player.add_layer(clips["walk"]), player.add_layer(clips["wave"], mask=None)
    upper = subtree_mask(skeleton, "spine", 0.8)
    player.set_mask(wave, upper)
    override = player.add_override(range(walk, walk + 1), upper)
    w = np.linspace(0.0, 1.0, count)
    player.set_weights(walk, 1.0)
    player.set_weights(wave, w)
    player.set_override_weights(override, w)
    times = np.linspace(0.0, 0.9, count)
    player.set_time([walk, wave], times)
    player.pose()
    base, layer = sample(clips["walk"], skeleton.rest_pose, times), sample(clips["wave"], skeleton.rest_pose, times)
    expected = blend(
        skeleton.rest_pose,
        [base, base, layer],
        np.stack((np.ones(count), 1.0 - w, w)),
        np.stack((1.0 - upper, upper, upper)),
    )
    assert_quat_allclose(player.local_pose.rotations, expected.rotations, atol=1e-12)
    np.testing.assert_allclose(player.local_pose.translations, expected.translations, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_lod_poses_only_the_characters_given(mannequin, backend) -> None:
    lod, full = rig(mannequin, backend)[0], rig(mannequin, backend)
    full_player, rows = full
    lod_rows = rows
    play(lod, lod_rows, 2, 1 / 60)
    before = lod.palette.copy()
    due = np.array([0, 3, 7])
    play(lod, lod_rows, 1, 1 / 60, characters=due)
    play(full_player, rows, 3, 1 / 60)
    others = np.setdiff1d(np.arange(20), due)
    np.testing.assert_array_equal(lod.palette[others], before[others])  # kept
    np.testing.assert_allclose(lod.palette[due], full_player.palette[due], rtol=0.0, atol=1e-12)  # the current time


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_lod_in_any_order_applies_a_transition_once(mannequin, backend) -> None:
    """Characters posed given unsorted and repeated, mid-transition: each gets the stage once, as when given once."""
    players = [Player(mannequin.skeleton, 6, backend=backend) for _ in range(2)]
    for player in players:
        walk, run = walking(player, mannequin.clips, 10)
        player.switch([1, 3, 4], "inertialize", 0.5, functools.partial(player.set_weights, [walk, run], [[0.0], [1.0]]))
        step(player, [walk, run])
    players[0].pose(np.array([4, 1, 4, 0, 1]))
    players[1].pose(np.array([0, 1, 4]))
    np.testing.assert_array_equal(players[0].transitions.active(np.array([4, 1, 4, 0])), [1, 4])
    for mine, theirs in zip(players[0].local_pose.arrays(), players[1].local_pose.arrays(), strict=True):
        np.testing.assert_array_equal(mine[[0, 1, 4]], theirs[[0, 1, 4]])


def test_the_captured_velocity_is_the_derivative(mannequin) -> None:
    """Captures against finite differences of the player's own poses (blends, masks, an override, the lean, rest)."""
    player, rows = rig(mannequin, "numpy", count=6)
    layers = [rows[n] for n in ("walk", "run", "wave", "lean")]
    player.set_weights(rows["run"], 0.0, characters=[5])  # below the threshold: the rest pose fills in
    player.set_weights(rows["walk"], 0.3, characters=[5])
    play(player, rows, 2, 0.0217)  # between keys
    rates = np.ones((len(layers), 6))
    velocity = player.capture(np.arange(6), rates=rates).velocity
    h = 1e-7
    before = player.local_pose
    player.begin_frame(h)
    player.advance_layers(layers, player.raw_times[layers] + h, True)
    player.pose()
    difference = pose_velocity(before, player.local_pose, h)
    np.testing.assert_allclose(velocity.angular, difference.angular, atol=2e-5)
    np.testing.assert_allclose(velocity.linear, difference.linear, atol=2e-5)


@pytest.mark.parametrize("kind", ["inertialize", "spring", "dead_blend", "frozen"])
def test_a_switch_starts_at_the_output_and_ends_at_the_new_layers(mannequin, kind) -> None:
    """Motion matching's call: ``switch`` from walking to running; no jump at the switch, exactly the run at the end."""
    skeleton, clips = mannequin.skeleton, mannequin.clips
    player = Player(skeleton, 3, backend="numpy")
    walk, run = walking(player, clips, 20)
    shown = player.local_pose

    def to_run() -> None:
        player.set_weights([walk, run], [[0.0], [1.0]])

    player.switch(np.arange(3), kind, 0.3, to_run, half_life=0.05)
    player.pose()  # the same instant: the output it showed
    np.testing.assert_allclose(player.local_pose.translations, shown.translations, atol=1e-12)
    assert_quat_allclose(player.local_pose.rotations, shown.rotations, atol=1e-12)
    for _ in range(70):  # past the end (a spring: 20 half-lives of 0.05 s)
        step(player, [walk, run])
        player.pose()
    assert not player.transitions.active().size
    expected = sample(clips["run"], skeleton.rest_pose, player.times[run])
    assert_quat_allclose(player.local_pose.rotations, expected.rotations, atol=1e-12)


def test_rounding_noise_in_a_switch_changes_nothing(mannequin) -> None:
    """Two characters switched alike, one with 1e-17 of noise in a source that equals its target: the same output."""
    skeleton = mannequin.skeleton
    player = Player(skeleton, 2, backend="numpy")
    player.add_layer(mannequin.clips["walk"])
    player.set_weights(0, 1.0)
    player.pose()
    source, target = player.capture([0, 1]), player.capture([0, 1], stage=False)
    source.velocity.linear[:, 0] = [-2.0, 0.0, 0.0]  # moving back towards the target where both agree
    source.pose.translations[1, 0, 0] += 1e-17
    player.start_transition([0, 1], "inertialize", 0.3, source, target)
    player.begin_frame(0.05)
    player.pose()
    np.testing.assert_allclose(player.local_pose.translations[1], player.local_pose.translations[0], atol=1e-15)
    offsets, rates = pose_offsets(source.pose, source.velocity, target.pose, target.velocity)
    clean = quintic_offset(quintic_decay(offsets[0, 0, 0], rates[0, 0, 0], 0.3), 0.05)
    np.testing.assert_allclose(player.local_pose.translations[0, 0] - target.pose.translations[0, 0], clean, atol=1e-15)


def test_an_inertialized_switch_slows_the_travel_down_smoothly(mannequin) -> None:
    """Root motion through the stage: walking (1.2 m/s) switched to standing decays, no stop in one frame."""
    player = Player(mannequin.skeleton, 1, backend="numpy", root_motion="root")
    walk, idle = player.add_layer(mannequin.clips["walk"]), player.add_layer(mannequin.clips["idle"])
    player.set_weights(walk, 1.0)
    speeds = []
    for frame in range(60):
        if frame == 30:
            player.switch([0], "inertialize", 0.4, lambda: player.set_weights([walk, idle], [[0.0], [1.0]]))
        step(player, [walk, idle])
        player.pose()
        speeds.append(float(np.linalg.norm(player.root_motion.translation[0])) * 60)
    assert speeds[29] == pytest.approx(1.2, abs=0.05)
    assert np.abs(np.diff(speeds)).max() < 0.15  # m/s per frame: a cut would drop 1.2 at once
    assert speeds[-1] < 0.05


@pytest.mark.parametrize("backend", BACKENDS)
def test_records_are_the_palette_column_major(mannequin, backend) -> None:
    player, rows = rig(mannequin, backend, count=4)
    play(player, rows, 2, 1 / 60)
    player.pose()
    records = np.zeros((4, mannequin.skeleton.num_joints, 4, 4), dtype=np.float32)
    player.finalize(records)
    np.testing.assert_allclose(np.swapaxes(records, -1, -2), player.palette, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_records_without_model_matrices_compose_them_when_asked(mannequin, backend) -> None:
    """finalize(records, model=False) writes the records only; the model matrices come on request, LOD included."""
    player, rows = rig(mannequin, backend, count=12)
    reference, _ = rig(mannequin, "numpy", count=12)
    records = np.zeros((12, mannequin.skeleton.num_joints, 4, 4), dtype=np.float32)
    layers = [rows[n] for n in ("walk", "run", "wave", "lean")]
    for frame, due in enumerate((None, np.array([1, 4, 9]), np.array([0, 4]), None, np.array([2]))):
        for each in (player, reference):
            each.begin_frame(1 / 60)
            each.advance_layers(layers, each.raw_times[layers] + 1 / 60, True)
            each.pose(due)
        stored = player.model_buffer.to_array().copy()
        player.finalize(records, model=False)
        reference.finalize()
        np.testing.assert_allclose(np.swapaxes(records, -1, -2), reference.palette, rtol=0.0, atol=1e-5)
        if backend == "numba" and frame:  # not stored: the buffer still holds the last matrices asked for
            np.testing.assert_array_equal(player.model_buffer.to_array(), stored)
        if frame % 2:  # asked every other frame: every character current, the unposed ones too
            np.testing.assert_allclose(player.model, reference.model, rtol=0.0, atol=1e-12)
            np.testing.assert_allclose(player.palette, reference.palette, rtol=0.0, atol=1e-12)


def test_results_are_ordinary_arrays_or_read_only(mannequin) -> None:
    player, rows = rig(mannequin, "numpy", count=3)
    play(player, rows, 1, 1 / 60)
    matrices = np.asarray(player.update_model())
    assert matrices.shape == (3, mannequin.skeleton.num_joints, 4, 4)
    assert matrices.dtype == np.float64
    with pytest.raises(InvalidInputError, match="a PoseBuffer holds three arrays"):
        np.asarray(player.pose_buffer)
    for array in (player.weights, player.raw_times, player.override_weights, player.local_pose.rotations, player.model):
        with pytest.raises(ValueError, match="read-only"):
            array[...] = 0.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_results_are_copies_the_next_frame_leaves_alone(mannequin, backend) -> None:
    """The compiled backend's buffers are character-major: their C-ordered views must be copied too."""
    player, rows = rig(mannequin, backend, count=20)
    play(player, rows, 1, 1 / 60)
    pose, model, palette = player.local_pose, player.model, player.palette
    kept = [array.copy() for array in (*pose.arrays(), model, palette)]
    play(player, rows, 3, 1 / 60)
    for array, before in zip((*pose.arrays(), model, palette), kept, strict=True):
        np.testing.assert_array_equal(array, before)
    assert not np.array_equal(player.local_pose.rotations, pose.rotations)  # the frames did move


def test_bad_input_is_a_typed_one_line_error(mannequin) -> None:
    player, _rows = rig(mannequin, "numpy", count=3)
    cases = [
        (lambda: player.set_weights(0, -1.0), InvalidInputError, "weights must be non-negative"),
        (lambda: player.set_override_weights(0, 1.5), InvalidInputError, r"override weights must be in \[0, 1\]"),
        (
            lambda: player.add_override(range(9), np.ones(25)),
            InvalidInputError,
            "covered must lie within the 4 layers",
        ),
        (lambda: player.add_override(range(1), np.full(25, 2.0)), InvalidInputError, r"values in \[0, 1\]"),
        (
            lambda: player.add_layer(mannequin.clips["walk"], mask=np.ones(3)),
            SkeletonMismatchError,
            r"mask must have shape \(25,\)",
        ),
        (lambda: player.begin_frame(-0.1), InvalidInputError, "dt must be >= 0"),
        (
            lambda: player.advance_layers(0, 0.1, True, [1], weights=-1.0, jump=([[0.0]], [[True]])),
            InvalidInputError,
            "weights must be non-negative",
        ),
        (lambda: player.advance_layers(0, 0.1, True, exact=np.nan), InvalidInputError, "exact must be finite"),
        (lambda: player.begin_frame(np.nan), InvalidInputError, "dt must be finite"),
        (lambda: player.begin_frame(np.ones(2)), InvalidInputError, r"one per character \(3,\), got shape \(2,\)"),
        (lambda: player.layer(7), InvalidInputError, "layer must be an index below 4"),
        (lambda: player.on_marker(0, "nope", print), InvalidInputError, "has no marker 'nope'"),
        (
            lambda: player.start_transition([0], "cut", 0.2, *[player.capture([0])] * 2),
            InvalidInputError,
            "kind must be one of",
        ),
        (
            lambda: Player(mannequin.skeleton, 2, root_motion="tail"),
            SkeletonMismatchError,
            "root_motion: no joint named",
        ),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message) as raised:
            call()
        assert "\n" not in str(raised.value)


def test_component_rotation_kernel_matches_the_quaternion_functions() -> None:
    from engine.math import quat_from_rotvec, quat_multiply  # noqa: PLC0415

    rng = np.random.default_rng(4)
    rotvecs = rng.normal(size=(5, 7, 3)) * np.array([1e-9, 1e-5, 0.3, 1.0, 3.0])[:, None, None]
    q = rng.normal(size=(5, 7, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    expected = quat_multiply(quat_from_rotvec(rotvecs), q)
    got = np.moveaxis(q, -1, 0).copy()
    turn_components(got, np.moveaxis(rotvecs, -1, 0))
    np.testing.assert_allclose(np.moveaxis(got, 0, -1), expected, atol=1e-15)


def test_a_capture_during_transitions_on_the_kernels_equals_numpy(mannequin) -> None:
    """The transition stage on a capture (offsets and their rates; frozen and dead blends beside) on both paths."""
    kinds = ["inertialize", "spring", "inertialize", "frozen", "dead_blend", "spring"]
    captures = []
    for compiled in (False, True):
        player, rows = rig(mannequin, "numba", count=8)
        play(player, rows, 4, 1 / 60)
        for k, kind in enumerate(kinds):  # each its own switch, from the output now to the run alone
            change = functools.partial(player.set_weights, rows["run"], 1.0, [k])
            player.switch(np.array([k]), kind, 0.4, change, half_life=0.07)
        play(player, rows, 5, 0.013)
        player.transitions.compiled = compiled
        rates = np.random.default_rng(3).uniform(0.5, 1.5, (player.num_layers, 8))
        captures.append(player.capture(np.arange(8), rates=rates))
    numpy_capture, kernel_capture = captures
    assert player.transitions.active().size == len(kinds)
    for a, b in zip(numpy_capture.pose.arrays(), kernel_capture.pose.arrays(), strict=True):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-12)
    for name in ("linear", "angular", "scaling"):
        np.testing.assert_allclose(
            getattr(kernel_capture.velocity, name), getattr(numpy_capture.velocity, name), atol=1e-11
        )
    np.testing.assert_allclose(kernel_capture.root, numpy_capture.root, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_switch_between_is_both_captures_then_the_start(mannequin, backend) -> None:
    """``switch_between`` (what the graph calls) against ``capture`` twice and ``start_transition``, mid-transition.

    The states are an instant of the frame with weights moving and layers entered (``leaving``),
    the characters already in transitions of every kind (the stage on the source): the same
    poses, velocities and root travel afterwards: bit for bit on the kernels; numpy's products
    sum in an order that follows the batch size (one capture of ``2K`` rows instead of two of
    ``K``), to rounding there.
    """
    kinds = ["inertialize", "spring", "frozen", "dead_blend", "inertialize", "spring"]
    players = []
    for batched in (False, True):
        player, rows = rig(mannequin, backend, count=8, root="root")
        play(player, rows, 4, 1 / 60)
        for k, kind in enumerate(kinds):
            player.switch(np.array([k]), kind, 0.4, functools.partial(player.set_weights, rows["run"], 1.0, [k]))
        play(player, rows, 3, 0.013)
        chosen = np.array([0, 1, 2, 3, 6, 7])
        before, after = player.layer_state(chosen), player.layer_state(chosen, leaving=True)
        rng = np.random.default_rng(5)
        before = replace(before, weight_rates=rng.uniform(-1.0, 1.0, before.weights.shape), at=before.at + 0.004)
        after = replace(after, times=after.times + 0.1, leaving=rng.uniform(size=after.leaving.shape) < 0.5)
        if batched:
            player.switch_between(chosen, before, after, "inertialize", 0.3, half_life=0.05)
        else:
            given = before.override_weights
            source = player.capture(chosen, *before.arrays()[:4], override_weights=given, at=before.at)
            target = player.capture(
                chosen, *after.arrays()[:4], override_weights=after.override_weights, stage=False, leaving=after.leaving
            )
            player.start_transition(chosen, "inertialize", 0.3, source, target, half_life=0.05, at=before.at)
        play(player, rows, 6, 1 / 60)
        players.append(player)
    single, batched_player = players
    tolerance = 0.0 if backend == "numba" else 1e-15
    pairs = [
        *zip(single.local_pose.arrays(), batched_player.local_pose.arrays(), strict=True),
        (single.root_motion.translation, batched_player.root_motion.translation),
        (single.output_velocity().angular, batched_player.output_velocity().angular),
    ]
    for expected, got in pairs:
        np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance)


def test_a_bad_layer_state_is_refused(mannequin) -> None:
    player, _ = rig(mannequin, "numpy", count=3)
    state = player.layer_state([0, 1])
    for bad, message in (
        (replace(state, times=np.zeros((2, 2))), r"times must broadcast to \(4, 2\)"),
        (replace(state, at=np.zeros(3)), r"at must broadcast to \(2,\)"),
        (replace(state, weights=np.full((4, 2), np.nan)), "weights must be finite"),
    ):
        with pytest.raises(InvalidInputError, match=message):
            player.switch_between([0, 1], state, bad, "inertialize", 0.3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_advance_layers_of_some_characters_leaves_the_others(mannequin, backend) -> None:
    """``advance_layers(..., characters)``: those characters as when all move; the others' times, travel untouched.

    Markers report the characters that crossed them (not positions in the subset).
    """
    layers = [0, 1, 2]  # walk, run, wave
    chosen = np.array([1, 3, 4, 6])
    results = []
    for subset in (False, True):
        player, rows = rig(mannequin, backend, count=8, root="root")
        crossings: list[tuple[str, np.ndarray]] = []
        record = functools.partial(lambda found, name, time, who, weights: found.append((name, who)), crossings)
        player.on_marker(rows["walk"], "right_foot_down", record)
        before = player.raw_times.copy()
        end = before[layers] + np.linspace(0.4, 0.7, 8)  # past the walk's right foot (0.5 s) for some
        player.begin_frame(0.55)
        if subset:
            player.advance_layers(layers, end[:, chosen], True, chosen)
        else:
            player.advance_layers(layers, end, True)
        player.pose()
        results.append((before, player.raw_times.copy(), player.root_motion.translation.copy(), crossings))
    (_, everyone, travel, all_crossed), (before, some, some_travel, some_crossed) = results
    np.testing.assert_array_equal(some[:, chosen], everyone[:, chosen])
    others = np.setdiff1d(np.arange(8), chosen)
    np.testing.assert_array_equal(some[:, others], before[:, others])
    np.testing.assert_array_equal(some_travel[chosen], travel[chosen])
    assert not np.any(some_travel[others])
    expected = [who[np.isin(who, chosen)] for _, who in all_crossed]
    assert [list(who) for _, who in some_crossed] == [list(who) for who in expected if who.size]
    assert sum(who.size for _, who in some_crossed) > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_advance_layers_writes_like_set_weights_and_set_time_around_it(mannequin, backend) -> None:
    """``advance_layers(..., weights=, jump=, exact=)`` (the graph's one call) against the four calls it replaces.

    Some characters only; a jump onto a marker fires it (fresh); the travel and the times match.
    """
    layers, chosen = [0, 1, 2], np.array([0, 2, 5, 7])
    rng = np.random.default_rng(8)
    weights = rng.uniform(0.0, 1.0, (3, 4))
    jump, jumped = np.full((3, 4), 0.5), rng.uniform(size=(3, 4)) < 0.5  # the walk's right foot at 0.5 s
    running = rng.uniform(size=(3, 4)) < 0.8
    results = []
    for fused in (False, True):
        player, rows = rig(mannequin, backend, count=8, root="root")
        crossings: list[np.ndarray] = []
        record = functools.partial(lambda found, name, time, who, weights: found.append(who), crossings)
        player.on_marker(rows["walk"], "right_foot_down", record)
        end = np.where(jumped, jump, player.raw_times[np.ix_(layers, chosen)]) + 0.3  # from the jump, if any
        exact = end - 0.01
        player.begin_frame(0.3)
        if fused:
            player.advance_layers(layers, end, running, chosen, weights=weights, jump=(jump, jumped), exact=exact)
        else:
            player.set_weights(layers, weights, chosen)
            player.set_time(layers, jump, chosen, where=jumped)
            player.advance_layers(layers, end, running, chosen)
            player.set_time(layers, exact, chosen, where=running, fresh=False)
        player.pose()
        results.append((player.raw_times.copy(), player.weights.copy(), player.root_motion.translation.copy()))
        results.append([list(who) for who in crossings])
    for expected, got in zip(results[0], results[2], strict=True):
        np.testing.assert_array_equal(got, expected)
    assert results[3] == results[1]
    assert results[1], "the jump onto the marker fires it"
