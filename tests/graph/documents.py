"""Graph documents shared by the graph tests (plain dicts, as a JSON or TOML file would parse)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from engine.anim.clip import Clip
from engine.procedural.mannequin import Mannequin, build_mannequin
from engine.procedural.strafe import build_strafe_clips, strafe_speed

SINGLE_CLIPS = ("idle", "walk", "run", "jump")


def locomotion(kind: str = "inertialize", duration: float = 0.3, **extra: Any) -> dict[str, Any]:
    """idle / move (1-D walk-run) / jump: the transitions all of ``kind``, ``duration`` long."""
    timing: dict[str, Any] = {"kind": kind, **extra}
    if kind != "spring":
        timing["duration"] = duration
    return {
        "name": "locomotion",
        "parameters": {
            "speed": {"type": "float"},
            "grounded": {"type": "bool", "default": True},
            "jump": {"type": "trigger"},
        },
        "start": "idle",
        "states": {
            "idle": {
                "motion": {"clip": "idle"},
                "transitions": [
                    {"to": "move", "conditions": [{"parameter": "speed", "op": ">", "value": 0.1}], **timing}
                ],
            },
            "move": {
                "motion": {"blend1d": "speed", "points": [{"at": 1.2, "clip": "walk"}, {"at": 3.0, "clip": "run"}]},
                "transitions": [
                    {"to": "idle", "conditions": [{"parameter": "speed", "op": "<=", "value": 0.1}], **timing}
                ],
            },
            "jump": {
                "motion": {"clip": "jump", "loop": False},
                "transitions": [
                    {"to": "idle", "exit_time": 1.0, "conditions": [{"parameter": "grounded"}], **timing},
                ],
            },
        },
        "any_state": [{"to": "jump", "conditions": [{"parameter": "jump"}], **timing}],
    }


def chain(kind: str, duration: float = 0.3) -> dict[str, Any]:
    """Three single-clip states a -> b -> c -> a on triggers ``go_b``, ``go_c``, ``go_a``: ``kind`` transitions."""
    timing: dict[str, Any] = {"kind": kind}
    if kind != "spring":
        timing["duration"] = duration
    clips = {"a": "idle", "b": "run", "c": "jump"}
    return {
        "parameters": {f"go_{s}": {"type": "trigger"} for s in clips},
        "start": "a",
        "states": {
            s: {
                "motion": {"clip": clip, "loop": True},
                "transitions": [{"to": t, "conditions": [{"parameter": f"go_{t}"}], **timing} for t in clips if t != s],
            }
            for s, clip in clips.items()
        },
    }


def strafing(kind: str = "inertialize") -> dict[str, Any]:
    """One 2-D directional blend space over (sideways, forward) velocity: idle, 4 walks, 4 runs."""
    points = [{"at": [0.0, 0.0], "clip": "idle"}]
    for gait, forward in (("walk", "walk"), ("run", "run")):
        points.append({"at": [0.0, strafe_speed(gait, 0.0)], "clip": forward})
        for direction, heading in (("back", np.pi), ("left", np.pi / 2), ("right", -np.pi / 2)):
            speed = strafe_speed(gait, heading)
            points.append(
                {
                    "at": [round(speed * np.sin(heading), 12), round(speed * np.cos(heading), 12)],
                    "clip": f"{gait}_{direction}",
                }
            )
    return {
        "parameters": {"vx": {"type": "float"}, "vz": {"type": "float"}, "stop": {"type": "bool"}},
        "start": "strafe",
        "states": {
            "strafe": {
                "motion": {"blend2d": ["vx", "vz"], "mode": "directional", "points": points},
                "transitions": [{"to": "idle", "kind": kind, "duration": 0.25, "conditions": [{"parameter": "stop"}]}],
            },
            "idle": {
                "motion": {"clip": "idle"},
                "transitions": [
                    {
                        "to": "strafe",
                        "kind": kind,
                        "duration": 0.25,
                        "conditions": [{"parameter": "stop", "value": False}],
                    }
                ],
            },
        },
    }


def mannequin_clips() -> tuple[Mannequin, dict[str, Clip]]:
    """The mannequin and its clips plus the strafe clips."""
    mannequin = build_mannequin()
    return mannequin, {**mannequin.clips, **build_strafe_clips(mannequin.skeleton)}


def edited(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``document`` with ``value`` at the dotted ``path`` (``[k]`` indexes lists; ``None`` deletes)."""
    result = copy.deepcopy(document)
    keys: list[Any] = []
    for part in path.replace("]", "").split("."):
        name, *indices = part.split("[")
        keys.append(name)
        keys.extend(int(i) for i in indices)
    node = result
    for key in keys[:-1]:
        node = node[key]
    if value is None:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return result
