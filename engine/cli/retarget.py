"""``ossa retarget SOURCE TARGET --out OUT.glb``: play SOURCE's motion on the glTF character TARGET.

SOURCE is a ``.bvh`` take (from its first captured frame: a converter's calibration T-pose is
left out, and a line says so) or a clip of a glTF character (``--clip``). The joint map is proposed
(:func:`~engine.anim.retarget.propose_joint_map`, printed with the reason for every pair) unless
``--map MAP.json`` gives one (``{"source joint": "target joint"}``); ``--save-map`` writes the map
used, to edit and pass back. The output is TARGET itself, every node, mesh, skin, material and
texture kept, with the retargeted clip as its one animation
(:func:`~engine.io.gltf_writer.save_gltf_with_clips`). The last line says which joint carries the
travel over the ground (the target's root joint when its hips hang below one, as the programs
and game engines move a character by it) and which detached feet were placed on the legs. For
example, the mocap pirouette on the project's mannequin::

    ossa retarget ../shared/assets/pirouette_bvh/pirouette.bvh assets/mannequin.glb --out pirouette.glb
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from engine.anim.retarget import explain_joint_map
from engine.cli.options import add_scale, gltf_path, refuse_scale_for_gltf, write_text, writing
from engine.errors import AssetError
from engine.io.mocap_commands import retarget_file, retarget_source


def add_parser(subcommands: Any) -> None:
    """Add ``retarget``."""
    parser = subcommands.add_parser("retarget", help="play a BVH take or glTF clip on a glTF character")
    parser.add_argument("source", type=Path, help="a .bvh take or a .gltf/.glb character")
    parser.add_argument("target", type=Path, help="the .gltf/.glb character to animate")
    parser.add_argument("--out", type=gltf_path, required=True, help="the .glb or .gltf file to write")
    parser.add_argument("--clip", default=None, help="source clip name (glTF sources; default: the first)")
    parser.add_argument("--map", type=Path, default=None, help='JSON {"source joint": "target joint"} to use')
    parser.add_argument("--save-map", type=Path, default=None, help="write the joint map used to this JSON file")
    parser.add_argument("--keep-target-rest", action="store_true", help="no rest-bone alignment (align_bones=False)")
    add_scale(parser, "a .bvh SOURCE")
    parser.set_defaults(handler=run)


def _read_map(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise AssetError(f"--map: cannot read the joint map: {exc.strerror or exc}", file=str(path)) from None
    except ValueError as exc:
        raise AssetError(f"--map: the joint map is not valid JSON: {exc}", file=str(path)) from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise AssetError(
            '--map: the joint map must be a JSON object {"source joint": "target joint", ...}', file=str(path)
        )
    return data


def run(args: argparse.Namespace) -> int:
    """Retarget ``args.source`` onto ``args.target`` and write ``args.out``."""
    refuse_scale_for_gltf(args, args.source)
    source = retarget_source(args.source, scale=args.scale, clip=args.clip)
    for note in source.notes:
        print(f"source note: {note}")
    joint_map = _read_map(args.map) if args.map is not None else None
    with writing(args.out, "--out"):
        done = retarget_file(
            source,
            args.target,
            args.out,
            joint_map=joint_map,
            map_name=f"--map {args.map}" if args.map is not None else "the proposed joint map",
            align_bones=not args.keep_target_rest,
        )
    plan, target = done.plan, done.plan.target
    if args.save_map is not None:
        write_text(args.save_map, json.dumps(plan.joint_map, indent=2) + "\n", "--save-map")
    print(explain_joint_map(source.skeleton, target, plan.joint_map, source_up=source.up, target_up=done.target_up))
    names = target.names
    travel = (
        f"travel on the root joint {names[plan.travel_root]!r} (the ground position of {names[plan.target_root]!r})"
        if plan.travel_root != plan.target_root
        else f"travel on {names[plan.target_root]!r}"
    )
    print(
        f"wrote {done.path}: clip {done.clip.name!r} ({done.clip.duration:g} s) on {target.num_joints} joints, "
        f"{len(plan.joint_map)} mapped, root scale {plan.root_scale:.3f}, {travel}"
        + (f", feet grounded ({len(plan.target_feet)} joints)" if plan.target_feet.size else "")
        + "".join(
            f", {names[d]!r} placed on {names[a]!r}"
            for d, a in zip(plan.detached.joints, plan.detached.anchors, strict=True)
        )
    )
    return 0
