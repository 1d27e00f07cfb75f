"""Reading graph documents: JSON or TOML into a validated :class:`~engine.graph.definition.GraphDefinition`.

The document's format and rules are written once, in :mod:`engine.graph.definition`; every
error is a :class:`~engine.graph.definition.GraphDefinitionError` naming the file and the path in
the document.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.graph.definition import (
    BLEND2D_MODES,
    BOOL_OPS,
    DEFAULT_DURATION,
    DEFAULT_SPRING_HALF_LIFE,
    FLOAT_OPS,
    KINDS,
    MOTION_KINDS,
    PARAMETER_TYPES,
    REFERENCES,
    AdditiveMotion,
    Blend1DMotion,
    Blend2DMotion,
    ClipMotion,
    Condition,
    GraphDefinition,
    GraphDefinitionError,
    LayerMotion,
    Machine,
    MachineMotion,
    Mask,
    Motion,
    Parameter,
    State,
    Transition,
)
from engine.graph.fields import FieldReader, join
from engine.graph.rules import check_instant_cycles, check_machine_nesting

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 reads TOML with the tomli backport (a dependency there)
    import tomli as tomllib


def load_graph(path: str | Path) -> GraphDefinition:
    """Read and validate a graph document (``.json`` or ``.toml``).

    Raises
    ------
    GraphDefinitionError
        The file cannot be read or parsed, or breaks a rule of the module docstring.
    """
    file = Path(path)
    source = str(path)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise GraphDefinitionError(f"cannot read the graph: {exc.strerror}", file=source) from None
    suffix = file.suffix.lower()
    if suffix == ".json":
        try:
            data = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as exc:
            raise GraphDefinitionError(f"invalid JSON: {exc.msg}", file=source, where=f"line {exc.lineno}") from None
        except (UnicodeDecodeError, ValueError) as exc:
            raise GraphDefinitionError(f"invalid JSON: {exc}", file=source) from None
    elif suffix == ".toml":
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise GraphDefinitionError(f"invalid TOML: {exc}", file=source) from None
    else:
        raise GraphDefinitionError(f"expected a .json or .toml file, got {file.suffix or 'no suffix'!r}", file=source)
    return parse_graph(data, source)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def parse_graph(data: Any, source: str = "<graph>") -> GraphDefinition:
    """Validate a graph document already parsed into dicts and lists (see the module docstring).

    ``source`` names the document in error messages.
    """
    return _Reader(source).graph(data)


class _Reader(FieldReader):
    """Walks the document, checking types and names, each error naming the path reached."""

    def graph(self, data: Any) -> GraphDefinition:
        document = self.table(data, "")
        self.keys(document, "", ("start", "states"), ("name", "parameters", "masks", "any_state", "machines"))
        name = self.name(document.get("name", Path(self.source).stem), "name")
        self.parameters = self.read_parameters(document.get("parameters", {}))
        self.masks = self.read_masks(document.get("masks", {}))
        machines_table = self.table(document.get("machines", {}), "machines")
        self.machine_names = set(machines_table)
        root = self.machine("root", document, "")
        machines = {}
        for key, value in machines_table.items():
            where = join("machines", str(key))
            table = self.table(value, where)
            self.keys(table, where, ("start", "states"), ("any_state",))
            machines[str(key)] = self.machine(str(key), table, where)
        definition = GraphDefinition(name, self.source, self.parameters, self.masks, root, machines)
        check_machine_nesting(definition, self.fail)
        return definition

    def read_parameters(self, value: Any) -> dict[str, Parameter]:
        parameters = {}
        for key, entry in self.table(value, "parameters").items():
            where = join("parameters", str(key))
            table = self.table(entry, where)
            self.keys(table, where, ("type",), ("default",))
            kind = self.choice(table["type"], join(where, "type"), PARAMETER_TYPES)
            default = 0.0
            if "default" in table:
                if kind == "trigger":
                    raise self.fail(join(where, "default"), "a trigger has no default (it starts unset)")
                if kind == "bool":
                    default = float(self.boolean(table["default"], join(where, "default")))
                else:
                    default = self.number(table["default"], join(where, "default"))
            parameters[str(key)] = Parameter(str(key), kind, default)
        return parameters

    def read_masks(self, value: Any) -> dict[str, Mask]:
        masks = {}
        for key, entry in self.table(value, "masks").items():
            where = join("masks", str(key))
            table = self.table(entry, where)
            self.keys(table, where, ("joints",), ("exclude", "weight"))
            joints = tuple(
                self.name(j, f"{where}.joints[{k}]")
                for k, j in enumerate(self.array(table["joints"], join(where, "joints"), empty=False))
            )
            exclude = tuple(
                self.name(j, f"{where}.exclude[{k}]")
                for k, j in enumerate(self.array(table.get("exclude", []), join(where, "exclude")))
            )
            weight = self.number(table.get("weight", 1.0), join(where, "weight"), low=0.0)
            masks[str(key)] = Mask(str(key), joints, exclude, weight, where)
        return masks

    def machine(self, name: str, table: Mapping[str, Any], where: str) -> Machine:
        states_table = self.table(table["states"], join(where, "states"))
        if not states_table:
            raise self.fail(join(where, "states"), "expected at least one state, got none")
        names = [str(key) for key in states_table]
        start = self.name(table["start"], join(where, "start"))
        if start not in names:
            raise self.fail(join(where, "start"), f"unknown state {start!r}; the states are {names}")
        states = {}
        for key, entry in states_table.items():
            state_where = join(join(where, "states"), str(key))
            state = self.table(entry, state_where)
            self.keys(state, state_where, ("motion",), ("speed", "transitions"))
            motion = self.motion(state["motion"], join(state_where, "motion"))
            speed = self.number(state.get("speed", 1.0), join(state_where, "speed"), low=0.0)
            transitions = tuple(
                self.transition(t, f"{state_where}.transitions[{k}]", str(key), names, motion)
                for k, t in enumerate(self.array(state.get("transitions", []), join(state_where, "transitions")))
            )
            states[str(key)] = State(str(key), motion, speed, transitions, state_where)
        any_where = join(where, "any_state")
        any_state = tuple(
            self.transition(t, f"{any_where}[{k}]", None, names, None)
            for k, t in enumerate(self.array(table.get("any_state", []), any_where))
        )
        machine = Machine(name, start, states, any_state, where)
        check_instant_cycles(machine, self.fail)
        return machine

    def motion(self, value: Any, where: str, extra: tuple[str, ...] = ()) -> Motion:
        table = self.table(value, where)
        kinds = [k for k in MOTION_KINDS if k in table]
        if len(kinds) != 1:
            found = "none" if not kinds else " and ".join(kinds)
            raise self.fail(where, f"expected exactly one motion kind of {list(MOTION_KINDS)}, got {found}")
        kind = kinds[0]
        if kind == "clip":
            self.keys(table, where, ("clip",), ("speed", "loop", "sync", *extra))
            return ClipMotion(
                self.name(table["clip"], join(where, "clip")),
                self.number(table.get("speed", 1.0), join(where, "speed"), low=0.0),
                self.boolean(table.get("loop", True), join(where, "loop")),
                self.boolean(table.get("sync", True), join(where, "sync")),
                where,
            )
        if kind == "blend1d":
            self.keys(table, where, ("blend1d", "points"), extra)
            parameter = self.float_parameter(table["blend1d"], join(where, "blend1d"))
            points = self.array(table["points"], join(where, "points"), empty=False)
            positions: list[float] = []
            children = []
            for k, point in enumerate(points):
                point_where = f"{where}.points[{k}]"
                point_table = self.table(point, point_where)
                if "at" not in point_table:
                    raise self.fail(join(point_where, "at"), "missing (required)")
                position = self.number(point_table["at"], join(point_where, "at"))
                if positions and position <= positions[-1]:
                    raise self.fail(
                        join(point_where, "at"),
                        f"positions must increase strictly, got {position:g} after {positions[-1]:g}",
                    )
                positions.append(position)
                children.append(self.motion(point_table, point_where, ("at",)))
            return Blend1DMotion(parameter, tuple(positions), tuple(children), where)
        if kind == "blend2d":
            self.keys(table, where, ("blend2d", "points"), ("mode", *extra))
            axes = self.array(table["blend2d"], join(where, "blend2d"))
            if len(axes) != 2:
                raise self.fail(join(where, "blend2d"), f"expected two float parameters [x, y], got {len(axes)}")
            parameters = (
                self.float_parameter(axes[0], f"{where}.blend2d[0]"),
                self.float_parameter(axes[1], f"{where}.blend2d[1]"),
            )
            mode = self.choice(table.get("mode", "directional"), join(where, "mode"), BLEND2D_MODES)
            points = self.array(table["points"], join(where, "points"), empty=False)
            positions2: list[tuple[float, float]] = []
            children = []
            for k, point in enumerate(points):
                point_where = f"{where}.points[{k}]"
                point_table = self.table(point, point_where)
                if "at" not in point_table:
                    raise self.fail(join(point_where, "at"), "missing (required)")
                at = self.array(point_table["at"], join(point_where, "at"))
                if len(at) != 2:
                    raise self.fail(join(point_where, "at"), f"expected [x, y], got {len(at)} numbers")
                xy = (self.number(at[0], f"{point_where}.at[0]"), self.number(at[1], f"{point_where}.at[1]"))
                if xy in positions2:
                    raise self.fail(join(point_where, "at"), f"position {list(xy)} is used twice")
                positions2.append(xy)
                children.append(self.motion(point_table, point_where, ("at",)))
            return Blend2DMotion(parameters, mode, tuple(positions2), tuple(children), where)
        if kind == "additive":
            self.keys(table, where, ("additive", "base"), ("weight", "mask", "reference", *extra))
            return AdditiveMotion(
                self.motion(table["base"], join(where, "base")),
                self.motion(table["additive"], join(where, "additive")),
                self.weight(table.get("weight", 1.0), join(where, "weight")),
                self.mask(table["mask"], join(where, "mask")) if "mask" in table else None,
                self.choice(table.get("reference", "first_frame"), join(where, "reference"), REFERENCES),
                where,
            )
        if kind == "layer":
            self.keys(table, where, ("layer", "base", "mask"), ("weight", *extra))
            return LayerMotion(
                self.motion(table["base"], join(where, "base")),
                self.motion(table["layer"], join(where, "layer")),
                self.mask(table["mask"], join(where, "mask")),
                self.weight(table.get("weight", 1.0), join(where, "weight")),
                where,
            )
        self.keys(table, where, ("machine",), extra)
        machine = self.name(table["machine"], join(where, "machine"))
        if machine not in self.machine_names:
            raise self.fail(
                join(where, "machine"), f"unknown machine {machine!r}; the machines are {sorted(self.machine_names)}"
            )
        return MachineMotion(machine, where)

    def float_parameter(self, value: Any, where: str) -> str:
        name = self.name(value, where)
        parameter = self.parameters.get(name)
        if parameter is None:
            raise self.fail(where, f"unknown parameter {name!r}; the parameters are {sorted(self.parameters)}")
        if parameter.type != "float":
            raise self.fail(where, f"parameter {name!r} is a {parameter.type}, a blend space needs a float")
        return name

    def weight(self, value: Any, where: str) -> float | str:
        if isinstance(value, str):
            return self.float_parameter(value, where)
        return self.number(value, where, low=0.0)

    def mask(self, value: Any, where: str) -> str:
        name = self.name(value, where)
        if name not in self.masks:
            raise self.fail(where, f"unknown mask {name!r}; the masks are {sorted(self.masks)}")
        return name

    def transition(
        self, value: Any, where: str, source: str | None, states: list[str], motion: Motion | None
    ) -> Transition:
        table = self.table(value, where)
        optional = ("kind", "duration", "half_life", "exit_time", "conditions", "interruptible", "offset")
        self.keys(table, where, ("to",), optional)
        target = self.name(table["to"], join(where, "to"))
        if target not in states:
            raise self.fail(join(where, "to"), f"unknown state {target!r}; the states are {states}")
        kind = self.choice(table.get("kind", "crossfade"), join(where, "kind"), KINDS)
        if kind == "spring":
            if "duration" in table:
                raise self.fail(join(where, "duration"), "a spring transition has no duration; set its half_life")
            half_life = self.number(
                table.get("half_life", DEFAULT_SPRING_HALF_LIFE), join(where, "half_life"), low=0.0, strict=True
            )
            duration = math.inf
        else:
            duration = self.number(table.get("duration", DEFAULT_DURATION), join(where, "duration"), low=0.0)
            if kind == "dead_blend":
                half_life = self.number(
                    table.get("half_life", duration if duration > 0 else DEFAULT_DURATION),
                    join(where, "half_life"),
                    low=0.0,
                    strict=True,
                )
            elif "half_life" in table:
                raise self.fail(
                    join(where, "half_life"), f"only spring and dead_blend transitions take a half_life, not {kind}"
                )
            else:
                half_life = 0.0
        exit_time = None
        if "exit_time" in table:
            exit_time = self.number(table["exit_time"], join(where, "exit_time"), low=0.0, high=1.0)
            if source is None:
                raise self.fail(join(where, "exit_time"), "an any-state transition has no exit time (no state to time)")
            if isinstance(motion, MachineMotion):
                raise self.fail(
                    join(where, "exit_time"), "a state playing a sub-machine has no normalised time for an exit time"
                )
        conditions = tuple(
            self.condition(c, f"{where}.conditions[{k}]")
            for k, c in enumerate(self.array(table.get("conditions", []), join(where, "conditions")))
        )
        if source is None and not conditions:
            raise self.fail(where, "an any-state transition needs conditions (it would fire in every state)")
        interruptible = self.boolean(table.get("interruptible", True), join(where, "interruptible"))
        offset = self.number(table.get("offset", 0.0), join(where, "offset"), low=0.0, high=1.0)
        if kind == "synced" and "offset" in table:
            raise self.fail(
                join(where, "offset"), "a synced transition starts the target at the source's phase, not at an offset"
            )
        return Transition(
            source, target, kind, duration, half_life, exit_time, conditions, interruptible, offset, where
        )

    def condition(self, value: Any, where: str) -> Condition:
        table = self.table(value, where)
        self.keys(table, where, ("parameter",), ("op", "value"))
        name = self.name(table["parameter"], join(where, "parameter"))
        parameter = self.parameters.get(name)
        if parameter is None:
            raise self.fail(
                join(where, "parameter"), f"unknown parameter {name!r}; the parameters are {sorted(self.parameters)}"
            )
        if parameter.type == "trigger":
            for key in ("op", "value"):
                if key in table:
                    raise self.fail(
                        join(where, key), f"{name!r} is a trigger: its condition is just being set, no {key}"
                    )
            return Condition(name, "set", 1.0, where)
        if parameter.type == "bool":
            op = self.choice(table.get("op", "=="), join(where, "op"), BOOL_OPS)
            return Condition(name, op, float(self.boolean(table.get("value", True), join(where, "value"))), where)
        op = self.choice(table.get("op"), join(where, "op"), FLOAT_OPS)
        if "value" not in table:
            raise self.fail(join(where, "value"), f"missing (required): {name!r} is a float")
        return Condition(name, op, self.number(table["value"], join(where, "value")), where)
