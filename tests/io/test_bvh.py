"""BVH import: Euler orders against scipy, channel subsets, real mocap against an independent FK, bad files."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.anim import model_from_pose, sample
from engine.errors import AssetError, InvalidInputError, OssaWarning
from engine.io.bvh import AXES, UNITS, detect_unit, load_bvh, parse_bvh
from tests.anim.rigs import rest_positions, rig, to_bvh, walk
from tests.helpers import assert_quat_allclose

ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def rotation_channels(order: str) -> str:
    return " ".join(f"{axis}rotation" for axis in order)


def two_joint_bvh(root_channels: str, child_channels: str, frames: list[list[float]], frame_time: str = "0.1") -> str:
    """A root at the origin with one child 10 units along +X, one End Site 5 units further."""
    head = [
        "HIERARCHY",
        "ROOT root",
        "{",
        "  OFFSET 0 0 0",
        f"  CHANNELS {len(root_channels.split())} {root_channels}" if root_channels else "",
        "  JOINT child",
        "  {",
        "    OFFSET 10 0 0",
        f"    CHANNELS {len(child_channels.split())} {child_channels}" if child_channels else "",
        "    End Site",
        "    {",
        "      OFFSET 5 0 0",
        "    }",
        "  }",
        "}",
        "MOTION",
        f"Frames: {len(frames)}",
        f"Frame Time: {frame_time}",
    ]
    body = [" ".join(repr(float(v)) for v in frame) for frame in frames]
    return "\n".join([line for line in head if line] + body) + "\n"


def scipy_quat(order: str, degrees: np.ndarray) -> np.ndarray:
    return Rotation.from_euler(order, degrees, degrees=True).as_quat()


# --- Euler orders and channel subsets ---------------------------------------------------------


@pytest.mark.parametrize("order", ORDERS)
def test_every_euler_order_matches_scipy_intrinsic(order: str, rng: np.random.Generator) -> None:
    angles = rng.uniform(-180, 180, size=(4, 2, 3))
    frames = [[*a[0], *a[1]] for a in angles]
    anim = parse_bvh(two_joint_bvh(rotation_channels(order), rotation_channels(order[::-1]), frames))
    root, child = anim.clip.channel(0, "rotation"), anim.clip.channel(1, "rotation")
    assert root is not None
    assert child is not None
    assert_quat_allclose(root.values, scipy_quat(order, angles[:, 0]), atol=1e-12)
    assert_quat_allclose(child.values, scipy_quat(order[::-1], angles[:, 1]), atol=1e-12)


def test_each_joint_uses_its_own_order(rng: np.random.Generator) -> None:
    angles = rng.uniform(-90, 90, size=(3, 2, 3))
    frames = [[*a[0], *a[1]] for a in angles]
    anim = parse_bvh(two_joint_bvh(rotation_channels("ZYX"), rotation_channels("ZXY"), frames))
    child = anim.clip.channel(1, "rotation")
    assert child is not None
    assert_quat_allclose(child.values, scipy_quat("ZXY", angles[:, 1]), atol=1e-12)
    assert not np.allclose(np.abs(child.values), np.abs(scipy_quat("ZYX", angles[:, 1])), atol=1e-3)


@given(
    order=st.sampled_from(ORDERS),
    angles=st.lists(st.floats(-720, 720), min_size=3, max_size=3),
)
def test_euler_property_any_angles(order: str, angles: list[float]) -> None:
    anim = parse_bvh(two_joint_bvh(rotation_channels(order), "", [angles]))
    channel = anim.clip.channel(0, "rotation")
    assert channel is not None
    assert_quat_allclose(channel.values[0], scipy_quat(order, np.array(angles)), atol=1e-12)


def test_rotation_keys_are_unflipped_for_interpolation() -> None:
    frames = [[0.0, 0.0, z] for z in np.linspace(0, 720, 40)]  # two full turns about Z
    anim = parse_bvh(two_joint_bvh("Xrotation Yrotation Zrotation", "", frames))
    channel = anim.clip.channel(0, "rotation")
    assert channel is not None
    values = channel.values
    assert np.all(np.sum(values[1:] * values[:-1], axis=-1) > 0)


def test_rotation_only_root_and_position_only_child() -> None:
    frames = [[30.0, 1.0, 2.0, 3.0], [60.0, 4.0, 5.0, 6.0]]
    anim = parse_bvh(two_joint_bvh("Yrotation", "Xposition Yposition Zposition", frames), scale=1.0)
    clip = anim.clip
    assert clip.channel(0, "translation") is None
    assert clip.channel(1, "rotation") is None
    root = clip.channel(0, "rotation")
    assert root is not None
    assert_quat_allclose(root.values, Rotation.from_euler("Y", [[30], [60]], degrees=True).as_quat(), atol=1e-12)
    child = clip.channel(1, "translation")
    assert child is not None
    np.testing.assert_allclose(child.values, [[1, 2, 3], [4, 5, 6]])
    pose = sample(clip, anim.skeleton.rest_pose, 0.0)
    np.testing.assert_allclose(pose.translations[0], [0, 0, 0])  # rest offset, no channel
    np.testing.assert_allclose(pose.translations[2], [5, 0, 0])  # end site


def test_a_position_channel_replaces_only_its_axis_of_the_offset() -> None:
    anim = parse_bvh(two_joint_bvh("", "Yposition Zrotation", [[7.0, 90.0]]), scale=1.0)
    child = anim.clip.channel(1, "translation")
    assert child is not None
    np.testing.assert_allclose(child.values, [[10, 7, 0]])
    assert anim.channel_names == ((), ("Yposition", "Zrotation"), ())


def test_two_rotation_channels_leave_the_third_axis_at_zero() -> None:
    anim = parse_bvh(two_joint_bvh("Zrotation Xrotation", "", [[40.0, -25.0]]))
    channel = anim.clip.channel(0, "rotation")
    assert channel is not None
    assert_quat_allclose(channel.values[0], Rotation.from_euler("ZX", [40, -25], degrees=True).as_quat(), atol=1e-12)


def test_times_frame_time_and_skeleton() -> None:
    text = two_joint_bvh("Xposition Yposition Zposition Zrotation Xrotation Yrotation", "", [[0] * 6] * 5, ".025")
    anim = parse_bvh(text, name="tiny")
    assert anim.frame_time == 0.025
    assert anim.num_frames == 5
    assert anim.clip.name == "tiny"
    assert anim.clip.duration == pytest.approx(0.1)
    np.testing.assert_allclose(anim.clip.channels[0].times, [0, 0.025, 0.05, 0.075, 0.1])
    skeleton = anim.skeleton
    assert skeleton.names == ("root", "child", "child_End")
    np.testing.assert_array_equal(skeleton.parents, [-1, 0, 1])
    np.testing.assert_allclose(skeleton.rest_translations, [[0, 0, 0], [0.1, 0, 0], [0.05, 0, 0]])
    np.testing.assert_allclose(skeleton.inverse_bind_matrices[2, :3, 3], [-0.15, 0, 0])
    assert anim.clips == (anim.clip,)
    assert anim.meshes == ()


def test_end_sites_can_be_dropped() -> None:
    anim = parse_bvh(two_joint_bvh("Zrotation", "Zrotation", [[1.0, 2.0]]), end_sites=False)
    assert anim.skeleton.names == ("root", "child")
    assert anim.clip.num_targets == 2


def test_zero_frames_gives_a_clip_without_channels() -> None:
    anim = parse_bvh(two_joint_bvh("Zrotation", "", []))
    assert anim.num_frames == 0
    assert anim.clip.channels == ()
    assert anim.motion.shape == (0, 1)


# --- what real files contain --------------------------------------------------------------------

MESSY = (
    "HIERARCHY\r\n"
    "ROOT\tHips\r\n"
    "{\r\n"
    "\tOFFSET\t0.00\t0.00\t0.00\r\n"
    "\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\r\n"
    "\tJOINT Left Up Leg\r\n"
    "\t{\r\n"
    "\t\tOFFSET .5 -4.0E+1 0\r\n"
    "\t\tCHANNELS 3 Zrotation Xrotation Yrotation\r\n"
    "\t\tEnd site\r\n"
    "\t\t{\r\n"
    "\t\t\tOFFSET 0 -10 0\r\n"
    "\t\t}\r\n"
    "\t}\r\n"
    "}\r\n"
    "MOTION\r\n"
    "Frames:\t2\r\n"
    "Frame Time:\t.0083333\r\n"
    "1 2 3 10 20 30 -.5 +1.5e1 0\r\n"
    "\t1\t2\t3\t10\t20\t30\t0\t0\t0  \r\n"
    "\r\n"
    "\r\n"
)


def test_crlf_tabs_spaced_names_short_numbers_and_trailing_blank_lines() -> None:
    anim = parse_bvh(MESSY, scale=1.0)
    assert anim.skeleton.names == ("Hips", "Left Up Leg", "Left Up Leg_End")
    assert anim.frame_time == pytest.approx(0.0083333)
    np.testing.assert_allclose(anim.skeleton.rest_translations[1], [0.5, -40, 0])
    np.testing.assert_allclose(anim.motion[0], [1, 2, 3, 10, 20, 30, -0.5, 15, 0])
    assert not anim.motion.flags.writeable


def test_load_bvh_reads_a_file_and_names_the_clip(tmp_path: Path) -> None:
    path = tmp_path / "messy_take.bvh"
    path.write_bytes(MESSY.encode())
    anim = load_bvh(path)
    assert anim.clip.name == "messy_take"
    np.testing.assert_allclose(anim.skeleton.rest_translations[1], [0.005, -0.4, 0])


def fk_positions(anim_scale: float, text: str, frame: int, axes: np.ndarray) -> np.ndarray:
    """World positions of every joint from the raw text (scipy rotations, explicit recursion)."""
    anim = parse_bvh(text, scale=1.0)
    skeleton, values = anim.skeleton, anim.motion[frame]
    world_r: list[Rotation] = []
    world_t: list[np.ndarray] = []
    column = 0
    for j, channels in enumerate(anim.channel_names):
        offset = skeleton.rest_translations[j].copy()
        rot_axes, rot_angles = "", []
        for name in channels:
            if name.endswith("position"):
                offset["XYZ".index(name[0])] = values[column]
            else:
                rot_axes += name[0]
                rot_angles.append(values[column])
            column += 1
        local_r = Rotation.from_euler(rot_axes, rot_angles, degrees=True) if rot_axes else Rotation.identity()
        p = skeleton.parents[j]
        if p < 0:
            world_r.append(local_r)
            world_t.append(offset)
        else:
            world_r.append(world_r[p] * local_r)
            world_t.append(world_t[p] + world_r[p].apply(offset))
    return anim_scale * np.array(world_t) @ axes.T


@pytest.mark.parametrize(
    "axes",
    [
        "z_up",
        np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),  # axis permutation
        np.diag([-1.0, 1.0, 1.0]),  # handedness flip
    ],
    ids=["z_up", "permutation", "mirror"],
)
def test_axis_conversion_moves_the_whole_motion(axes: str | np.ndarray, rng: np.random.Generator) -> None:
    angles = rng.uniform(-60, 60, size=(2, 9))
    frames = [[*a[:3] * 0.1, *a[3:]] for a in angles]
    text = two_joint_bvh(
        "Xposition Yposition Zposition Zrotation Xrotation Yrotation", "Yrotation Zrotation Xrotation", frames
    )
    matrix = AXES[axes] if isinstance(axes, str) else axes
    anim = parse_bvh(text, scale=0.5, axes=axes)
    model = model_from_pose(anim.skeleton, sample(anim.clip, anim.skeleton.rest_pose, anim.clip.channels[0].times))
    for frame in range(2):
        np.testing.assert_allclose(model[frame, :, :3, 3], fk_positions(0.5, text, frame, matrix), atol=1e-12)


# --- the real file -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pirouette_path(shared_assets: Path) -> Path:
    return shared_assets / "pirouette_bvh" / "pirouette.bvh"


@pytest.mark.assets
def test_pirouette_counts_and_duration(pirouette_path: Path) -> None:
    anim = load_bvh(pirouette_path)
    with_tips = anim.skeleton
    assert with_tips.num_joints == 43 + 14
    assert load_bvh(pirouette_path, end_sites=False).skeleton.num_joints == 43
    assert anim.num_frames == 592
    assert anim.motion.shape == (592, 132)
    assert anim.frame_time == pytest.approx(1 / 120, rel=1e-5)
    assert anim.clip.duration == pytest.approx(591 * 0.00833333)
    assert with_tips.names[0] == "hip"
    assert anim.channel_names[0] == ("Xposition", "Yposition", "Zposition", "Zrotation", "Yrotation", "Xrotation")
    assert {c for c in anim.channel_names[1:] if c} == {("Zrotation", "Xrotation", "Yrotation")}
    assert len(anim.clip.channels) == 43 + 1  # a rotation per joint, a translation on the hip


def independent_fk(path: Path, frames: list[int]) -> tuple[list[str], np.ndarray]:
    """Joint names and world positions (cm) straight from the file's text, without engine code."""
    names: list[str] = []
    parents: list[int] = []
    offsets: list[list[float]] = []
    channels: list[list[str]] = []
    stack: list[int] = []
    lines = path.read_text().splitlines()
    k = 0
    while lines[k].strip() != "MOTION":
        words = lines[k].split()
        if words and words[0] in ("ROOT", "JOINT"):
            names.append(words[1])
            parents.append(stack[-1] if stack else -1)
            channels.append([])
        elif words and words[0] == "End":
            names.append("")  # a tip: not a joint, but it takes part in the brace nesting
            parents.append(stack[-1])
            channels.append([])
        elif words and words[0] == "{":
            stack.append(len(names) - 1)
        elif words and words[0] == "}":
            stack.pop()
        elif words and words[0] == "OFFSET":
            offsets.append([float(w) for w in words[1:]])
        elif words and words[0] == "CHANNELS":
            channels[-1] = words[2:]
        k += 1
    data = [[float(w) for w in line.split()] for line in lines[k + 3 :] if line.strip()]
    out = np.zeros((len(frames), len(names), 3))
    for f, frame in enumerate(frames):
        values = iter(data[frame])
        rotations: list[Rotation] = []
        for j in range(len(names)):
            position = np.array(offsets[j])
            euler_axes, euler_angles = "", []
            for name in channels[j]:
                value = next(values)
                if name.endswith("position"):
                    position["XYZ".index(name[0])] = value
                else:
                    euler_axes += name[0]
                    euler_angles.append(value)
            local = Rotation.from_euler(euler_axes, euler_angles, degrees=True) if euler_axes else Rotation.identity()
            p = parents[j]
            rotations.append(local if p < 0 else rotations[p] * local)
            out[f, j] = position if p < 0 else out[f, p] + rotations[p].apply(position)
    keep = [j for j, n in enumerate(names) if n]
    return [names[j] for j in keep], out[:, keep]


@pytest.mark.assets
def test_pirouette_world_positions_match_an_independent_fk(pirouette_path: Path) -> None:
    frames = [0, 137, 300, 591]
    names, expected_cm = independent_fk(pirouette_path, frames)
    anim = load_bvh(pirouette_path, end_sites=False)
    assert list(anim.skeleton.names) == names
    times = np.array(frames) * anim.frame_time
    model = model_from_pose(anim.skeleton, sample(anim.clip, anim.skeleton.rest_pose, times))
    picked = [names.index(n) for n in ("hip", "head", "lHand", "rForeArm", "lFoot", "rFoot", "rThumb2")]
    np.testing.assert_allclose(model[:, picked][..., :3, 3], 0.01 * expected_cm[:, picked], atol=1e-9)
    np.testing.assert_allclose(model[:, :, :3, 3], 0.01 * expected_cm, atol=1e-9)


@pytest.mark.assets
def test_pirouette_matches_threejs_bvhloader(pirouette_path: Path) -> None:
    """World positions (cm) recorded from three.js's BVHLoader by tests/io/threejs_bvh_oracle.mjs."""
    recorded = json.loads((Path(__file__).parent / "data" / "pirouette_threejs.json").read_text())
    anim = load_bvh(pirouette_path, scale=1.0)
    assert [n if n != "ENDSITE" else "" for n in recorded["names"]] == [
        "" if n.endswith("_End") else n for n in anim.skeleton.names
    ]
    times = np.array(recorded["frames"]) * anim.frame_time
    model = model_from_pose(anim.skeleton, sample(anim.clip, anim.skeleton.rest_pose, times))
    np.testing.assert_allclose(model[..., :3, 3], recorded["positions"], atol=1e-3)


# --- bad files ----------------------------------------------------------------------------------

GOOD = two_joint_bvh("Xposition Yposition Zposition Zrotation Xrotation Yrotation", "Zrotation", [[0] * 7] * 3)


def broken(old: str, new: str, text: str = GOOD) -> str:
    assert old in text
    return text.replace(old, new, 1)


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


FRAME = "0.0 0.0 0.0 0.0 0.0 0.0 0.0\n"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        pytest.param(broken(FRAME, "0.0 0.0 0.0 0.0 0.0 0.0\n"), 19, "expected 7 numbers.*got 6", id="short-frame"),
        pytest.param(broken(FRAME, "0.0 " + FRAME), 19, "expected 7 numbers.*got 8", id="long-frame"),
        pytest.param(
            broken("Frames: 3", "Frames: 4"),
            22,
            r"'Frames: 4' \(line 17\) does not match the 3 frame lines",
            id="frames-more-than-lines",
        ),
        pytest.param(broken("Zrotation\n", "Zrot\n"), 9, "unknown channel 'Zrot' of joint 'child'", id="channel"),
        pytest.param(
            broken("CHANNELS 1 Zrotation", "CHANNELS 2 Zrotation Zrotation"), 9, "listed twice", id="channel-twice"
        ),
        pytest.param(
            broken("CHANNELS 1 Zrotation", "CHANNELS one Zrotation"), 9, "followed by a count", id="channel-count"
        ),
        pytest.param(GOOD[: GOOD.index("MOTION")], 16, "no MOTION section", id="no-motion"),
        pytest.param(broken("MOTION\n", "MOTON\n"), 16, "unexpected 'MOTON' after the hierarchy", id="motion-typo"),
        pytest.param(broken(FRAME, "0.0 0.0 0.0 zero 0.0 0.0 0.0\n"), 19, "value 4 is 'zero'", id="word"),
        pytest.param(broken(FRAME, "0.0 0.0 nan 0.0 0.0 0.0 0.0\n"), 19, "value 3 is 'nan'", id="nan"),
        pytest.param(broken(FRAME, "0.0 0.0 1,5 0.0 0.0 0.0 0.0\n"), 19, "value 3 is '1,5'", id="comma"),
        pytest.param(
            broken("Frame Time: 0.1", "Frame Time: -0.1"), 18, "positive number of seconds, got -0.1", id="negative-dt"
        ),
        pytest.param(
            broken("Frame Time: 0.1", "Frame Time: 0"), 18, "positive number of seconds, got 0.0", id="zero-dt"
        ),
        pytest.param(broken("Frame Time: 0.1", "Frame Time: fast"), 18, "Frame Time must be a number", id="word-dt"),
        pytest.param(broken("Frame Time: 0.1", "Frame Tme: 0.1"), 18, "expected 'Frame Time: <seconds>'", id="no-dt"),
        pytest.param(broken("Frames: 3", "Frames: -3"), 17, "expected 'Frames: <count>'", id="negative-frames"),
        pytest.param(broken("OFFSET 10 0 0", "OFFSET 10 0 x"), 8, "OFFSET z", id="offset"),
        pytest.param(broken("ROOT root", "ROOT root\nJOINT"), 3, "expected '{', got 'JOINT'", id="brace"),
        pytest.param(broken("HIERARCHY", "HIERARCHIE"), 1, "expected 'HIERARCHY'", id="hierarchy"),
        pytest.param(broken("    End Site", "    End Sight"), 10, "expected 'End Site'", id="end-site"),
        pytest.param(
            broken("  JOINT child", "  JIONT child"),
            6,
            "expected JOINT, End Site or '}' in joint 'root', got 'JIONT'",
            id="keyword",
        ),
        pytest.param(broken("  JOINT child", "  JOINT root"), 6, "joint name 'root' is used twice", id="same-name"),
        pytest.param(
            broken("}\nMOTION", "}\nROOT other\n{\n OFFSET 0 0 0\n}\nMOTION"), 16, "a second ROOT", id="two-roots"
        ),
        pytest.param(broken("}\nMOTION", "\nMOTION"), 16, "unexpected end of HIERARCHY", id="unclosed"),
        pytest.param("", 1, "the file is empty", id="empty"),
    ],
)
def test_bad_files_name_the_line_and_the_problem(text: str, line: int, message: str) -> None:
    with pytest.raises(AssetError, match=message) as info:
        parse_bvh(text, file="bad.bvh")
    assert info.value.where == f"line {line}"
    assert info.value.file == "bad.bvh"
    assert str(info.value).startswith(f"bad.bvh: line {line}: ")


def test_frame_lines_beyond_the_stated_count_are_dropped_with_a_warning() -> None:
    # Boxing_Toes.bvh (assimp's test models) says 'Frames: 3069' above 3070 frame lines; three.js
    # and Blender play the stated count.
    text = broken(FRAME * 3, FRAME * 2 + "1 2 3 4 5 6 7\n0 0 0 0 0 0 9\n")
    with pytest.warns(OssaWarning, match=r"'Frames: 3' \(line 17\) is followed by 4 frame lines; reading the first 3"):
        anim = parse_bvh(text, file="long.bvh")
    assert anim.num_frames == 3
    assert anim.clip.duration == pytest.approx(0.2)
    assert parse_bvh(GOOD).num_frames == 3


def test_bad_file_lines_are_counted_in_crlf_files_too() -> None:
    text = broken("1 2 3 10 20 30 -.5 +1.5e1 0", "1 2 3 10 20 30 -.5 +1.5e1", MESSY)
    with pytest.raises(AssetError, match="expected 9 numbers") as info:
        parse_bvh(text)
    assert info.value.where == f"line {line_of(MESSY, '1 2 3 10')}"


def test_second_root_after_a_blank_line_is_an_error() -> None:
    text = broken("}\nMOTION", "}\n\nROOT again\n{\n OFFSET 0 0 0\n}\nMOTION")
    with pytest.raises(AssetError, match=r"second ROOT.*first ROOT at line 2"):
        parse_bvh(text)


def test_frame_lines_without_a_hierarchy_channel_are_an_error() -> None:
    with pytest.raises(AssetError, match="expected 0 numbers"):
        parse_bvh(two_joint_bvh("", "", [[1.0]]))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"scale": 0.0}, "scale must be a positive finite number, got 0.0"),
        ({"scale": float("nan")}, "scale must be a positive finite number"),
        ({"axes": "x_up"}, re.escape("axes must be one of ['y_up', 'z_up']")),
        ({"axes": np.ones((3, 3))}, "3×3 orthogonal matrix"),
    ],
)
def test_bad_options(options: dict, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        parse_bvh(GOOD, **options)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(AssetError, match="cannot read the file") as info:
        load_bvh(tmp_path / "absent.bvh")
    assert info.value.file == str(tmp_path / "absent.bvh")


# --- length units -------------------------------------------------------------------------------


def scheme_bvh(name: str) -> tuple[str, float, str]:
    """A two-frame walk on the scheme rig ``name`` as BVH text in the rig's own units, its unit and axes."""
    r = rig(name)
    return to_bvh(r, *walk(r, np.array([0.0, 0.25])), frame_time=0.25), r.unit, "z_up" if r.up[2] else "y_up"


@pytest.mark.parametrize(
    ("scheme", "unit"),
    [
        ("cmu", "CMU units (inches / 0.45)"),
        ("biovision", "centimetres"),
        ("mocapdata", "inches"),
        ("mixamo", "centimetres"),
        ("unreal", "centimetres"),
        ("rigify", "metres"),
        ("vrm", "metres"),
        ("genesis", "centimetres"),
    ],
)
def test_the_unit_is_read_from_the_skeletons_height(scheme: str, unit: str) -> None:
    text, scale, axes = scheme_bvh(scheme)
    assert UNITS[unit] == pytest.approx(scale)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        anim = parse_bvh(text, file=f"{scheme}.bvh", axes=axes)
    assert anim.scale == UNITS[unit]
    assert anim.unit.startswith(f"{unit} (detected: the figure's joints span ")
    height = np.ptp(model_from_pose(anim.skeleton, anim.skeleton.rest_pose)[:, 1, 3])
    assert 1.3 < height < 1.9
    messages = [str(w.message) for w in caught if issubclass(w.category, OssaWarning)]
    if unit == "centimetres":
        assert messages == []
    else:
        assert messages == [
            f"{scheme}.bvh: lengths read as {unit} (× {UNITS[unit]:.6g} m): the figure's joints then span "
            f"{height:.2f} m; pass scale (ossa: --scale) if that is wrong"
        ]


def test_a_cmu_take_is_no_longer_27_centimetres_tall() -> None:
    text, _, _ = scheme_bvh("cmu")
    given = parse_bvh(text, scale=0.01)
    with pytest.warns(OssaWarning, match="CMU units"):
        detected = parse_bvh(text)
    heights = [np.ptp(model_from_pose(a.skeleton, a.skeleton.rest_pose)[:, 1, 3]) for a in (given, detected)]
    assert heights[0] == pytest.approx(0.252, abs=0.005)
    assert heights[1] == pytest.approx(heights[0] * (0.0254 / 0.45) / 0.01)
    assert given.unit == "× 0.01 (given)"


def test_the_unit_does_not_depend_on_keeping_end_sites() -> None:
    text, _, _ = scheme_bvh("mocapdata")
    with pytest.warns(OssaWarning, match="inches"):
        assert parse_bvh(text, end_sites=False).scale == 0.0254


def test_a_skeleton_that_is_no_humanoid_is_read_in_centimetres() -> None:
    anim = parse_bvh(GOOD)
    assert anim.scale == 0.01
    assert anim.unit == "centimetres (assumed: not a humanoid, so its height tells no unit)"
    assert detect_unit(anim.skeleton) is None


def test_an_implausible_height_says_so() -> None:
    """A figure 10 units tall: no unit makes it a person (the closest, feet, gives 3 m), and the warning says so."""
    text, _, _ = scheme_bvh("vrm")
    grown = re.sub(
        r"OFFSET (\S+) (\S+) (\S+)", lambda m: "OFFSET " + " ".join(str(7 * float(v)) for v in m.groups()), text
    )
    with pytest.warns(OssaWarning, match=r"lengths read as feet .* span 3\.\d\d m; no unit gives a 1–2.5 m figure"):
        anim = parse_bvh(grown)
    assert anim.scale == 0.3048


def test_detect_unit_of_a_skeleton_in_file_units() -> None:
    r = rig("cmu")
    name, scale, height = detect_unit(r.skeleton)
    assert (name, scale) == ("CMU units (inches / 0.45)", 0.0254 / 0.45)
    assert height == pytest.approx(np.ptp(rest_positions(r.skeleton)[:, 1]) * scale)
