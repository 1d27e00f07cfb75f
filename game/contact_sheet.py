"""A contact sheet: every available character and animated object standing on the ground, one labelled tile each.

``python -m game.contact_sheet --out docs/images/characters.png`` renders each file's whole scene
headless (EGL) exactly as the programs place and draw it (:func:`game.model.load_model`: units,
facing, ground and framing from its motion; :class:`engine.render.SceneRenderer`: every mesh node,
skinned, rigid or morphed) and tiles the pictures with a label: file, height, unit assumed, clip
and time shown, mesh nodes drawn. It is the picture to look at when a character is added: each
must stand on the grid at ``y = 0`` with its shadow under its feet, whole and in frame.

Which characters: the files named on the command line, else every ``.gltf``/``.glb``/``.bvh`` of
the default places (:func:`default_sources`): the generated mannequin, the shared assets
(``$OSSA_SHARED_ASSETS``, else ``../shared/assets``) and the character corpus as
``python3 -m tests.corpus.fetch`` fetches it (``$OSSA_CORPUS/files``, else
``~/.cache/ossa-corpus/files``; see ``tests/data/characters/README.md``) when they exist. A
file the programs cannot load is left out and said so; one file per name (``Fox.glb`` and
``Fox.gltf`` are one fox). A file of clips without a mesh (an asset pack's animation file, as
KayKit's ``anim/Med_General.glb``) is shown as the clips of the character nearest to it in the
folder tree (:func:`clip_companions`), loaded as ``--clips`` loads them, not as a tile of its own.

``python -m game.contact_sheet --retargets --out docs/images/retargets.png`` is the second sheet:
every mocap take of the default places (``.bvh``) retargeted onto every humanoid character there
(a ``.gltf``/``.glb`` with a skinned mesh whose skeleton :func:`engine.anim.humanoid.find_humanoid`
takes: the mannequin, CesiumMan, the GDQuest and KayKit mannequins, ...; not the Fox) as ``ossa
retarget`` writes it (:func:`engine.io.mocap_commands.retarget_file`), one row per take, each tile
the retargeted clip at mid-clip as the programs place and draw it: upright, on its shadow, in frame.

Each tile shows the reference clip (:attr:`game.model.Model.reference`) at a sampled time where
its lowest point is the clip's lowest (the one nearest mid-clip), so the contact with the ground
is on the picture; the camera looks from the front-left, a little from above, and fits that pose
(:func:`game.bounds.fit_distance`). The last label line says how many mesh nodes were drawn and
how far the same pose would float (or sink) had the character been grounded by its rest pose, as
the programs used to do.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import moderngl
import numpy as np
import pygame

from engine.anim.humanoid import find_humanoid
from engine.anim.scene import SceneFrame
from engine.camera import orbit_orientation, view_matrix
from engine.errors import GLContextError, OssaError
from engine.io.bvh import UnitWarning
from engine.io.mocap_commands import model_up, retarget_character, retarget_file, retarget_source
from engine.math import matrix_from_trs, perspective
from engine.render import DebugDraw, SceneRenderer, SkinnedMesh, create_context
from engine.render.context import release_context
from game.app import Progress, check_output, say
from game.bounds import Bounds, clip_motion, fit_distance, frame_boxes, framing_position
from game.demo.world import disc, single_joint_mesh
from game.model import DEFAULT_MODEL, ROOT, SUFFIXES, Model, load_model

PROG = "python -m game.contact_sheet"
TILE = (320, 400)
"""Pixels of one tile: the picture, then :data:`LABEL_HEIGHT` of text under it."""
LABEL_HEIGHT = 78
COLUMNS = 4
BACKGROUND = (0.16, 0.17, 0.2)
FLOOR_COLOR = (0.33, 0.35, 0.39, 1.0)
GRID_COLOR = (0.55, 0.58, 0.64, 1.0)
LIGHT = (-0.4, -0.8, -0.5)
FOV_Y = float(np.radians(40.0))
VIEW_YAW, VIEW_PITCH = -0.6, -0.2
"""Radians: from the character's front-left, a little from above (its forward is +Z)."""
CONTACT = 0.005
"""Metres: a pose whose lowest point is this close to its clip's lowest touches the ground."""
FILL = 0.8
"""The pose's bounds reach at most this fraction of the tile's half-height from its middle."""


@dataclass(frozen=True)
class Shot:
    """One character's picture and label."""

    path: Path
    image: np.ndarray
    """``(H, W, 3)`` uint8, first row at the top."""
    label: tuple[str, ...]


def corpus_files() -> Path:
    """Where the character corpus's files are fetched: ``$OSSA_CORPUS/files`` (``~/.cache/ossa-corpus``)."""
    cache = os.environ.get("OSSA_CORPUS")
    return (Path(cache).expanduser() if cache else Path.home() / ".cache" / "ossa-corpus") / "files"


def default_sources() -> list[Path]:
    """The mannequin, then the shared assets and the fetched character corpus, if present (one file per name)."""
    shared = Path(os.environ.get("OSSA_SHARED_ASSETS", ROOT.parent / "shared" / "assets"))
    found = [DEFAULT_MODEL]
    for folder in (shared, corpus_files()):
        if folder.is_dir():
            found += sorted(p for p in folder.rglob("*") if p.suffix.lower() in SUFFIXES)
    unique: dict[str, Path] = {}
    for path in found:
        unique.setdefault(path.stem.lower(), path)
    return list(unique.values())


def contact_pose(model: Model) -> tuple[SceneFrame, float, str | None, float]:
    """The scene at a reference-clip time whose pose touches the ground.

    Of the sampled poses whose lowest point is within :data:`CONTACT` of the clip's lowest, the
    one nearest the middle of the clip. Returns its scene frame (batch ``(1,)``, scene world
    space: draw it with :attr:`~game.model.Model.frame`), that clip time, the clip's name
    (``None``: the rest pose) and that pose's lowest point above the character frame's ``y = 0``.
    """
    name = model.reference
    clip = model.clips[name] if name is not None else None
    motion = clip_motion(model.scene, clip, model.frame, root=model.root, in_place=model.root_motion)
    touching = np.nonzero(motion.lows[:, 1] <= motion.lows[:, 1].min() + CONTACT)[0]
    k = int(touching[np.argmin(np.abs(motion.times[touching] - 0.5 * motion.times[-1]))])
    time = float(motion.times[k])
    return model.sample_frame(name, np.array([time])), time, name, float(motion.lows[k, 1])


class Renderer:
    """Draws one character at a time into an offscreen tile (one GL context for the whole sheet)."""

    def __init__(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        self.ctx = ctx
        self.size = size
        self.target = ctx.simple_framebuffer(size)
        self.debug = DebugDraw(ctx)
        floor = np.array([[-1.0, 0.0, -1.0], [1.0, 0.0, -1.0], [1.0, 0.0, 1.0], [-1.0, 0.0, 1.0]])
        self.floor = SkinnedMesh(
            ctx, single_joint_mesh(floor, [0, 2, 1, 0, 3, 2], np.tile([0.0, 1.0, 0.0], (4, 1)), FLOOR_COLOR)
        )
        self.shadow = SkinnedMesh(ctx, single_joint_mesh(*disc(1.0), (0.0, 0.0, 0.0, 0.45), name="shadow"))
        self.drawn_mesh_nodes = 0
        """Mesh nodes drawn in the last :meth:`shoot` (:attr:`engine.render.SceneRenderer.drawn_mesh_nodes`)."""

    def shoot(self, model: Model, title: str | None = None) -> Shot:
        """The tile picture of ``model`` and its label lines; sets :attr:`drawn_mesh_nodes`.

        With a ``title`` (a retarget's ``take on character``) the pose is the reference clip's at
        mid-clip and the label is that title, the time and the height.
        """
        if title is None:
            frame, time, clip, _ = contact_pose(model)
        else:
            clip = model.reference
            time = 0.5 * model.clips[clip].duration if clip is not None else 0.0
            frame = model.sample_frame(clip, np.array([time]))
        lows, highs = frame_boxes(model.scene, model.scene.frame(model.frame @ frame.world, frame.morph_weights))
        bounds = Bounds(lows[0], highs[0])
        aspect = self.size[0] / self.size[1]
        orientation = orbit_orientation(VIEW_YAW, VIEW_PITCH)
        distance = fit_distance(bounds.corners(), bounds.centre, orientation, FOV_Y, aspect, fill=FILL)
        eye = framing_position(bounds.centre, orientation, distance, FOV_Y, aspect)
        view = view_matrix(eye, orientation)
        projection = perspective(FOV_Y, aspect, distance / 50.0, distance * 20.0)
        self.target.use()
        self.target.clear(*BACKGROUND, 1.0, depth=1.0)
        reach = 4.0 * float(max(bounds.size))
        self.floor.draw(np.diag([reach, 1.0, reach, 1.0])[None, None], view, projection, light_direction=LIGHT)
        ticks = np.linspace(-reach, reach, 33)
        zeros, edge = np.zeros_like(ticks), np.full_like(ticks, reach)
        starts = np.concatenate(
            [np.stack([-edge, zeros + 1e-4 * reach, ticks], -1), np.stack([ticks, zeros, -edge], -1)]
        )
        ends = np.concatenate([np.stack([edge, zeros + 1e-4 * reach, ticks], -1), np.stack([ticks, zeros, edge], -1)])
        self.debug.lines(starts, ends, GRID_COLOR)
        self.debug.flush(view, projection)
        renderer = SceneRenderer(self.ctx, model.scene)
        try:
            renderer.draw(frame, view, projection, model.frame[None], light_direction=LIGHT)
        finally:
            renderer.release()
        self.drawn_mesh_nodes = renderer.drawn_mesh_nodes
        self._shadow(model, bounds, frame, view, projection)
        width, height = self.size
        pixels = np.frombuffer(self.target.read(components=3), np.uint8).reshape(height, width, 3)[::-1]
        if title is not None:
            return Shot(model.path, np.array(pixels), (title, f"at {time:.2f} s, {model.height:.2f} m tall"))
        lowest = float(bounds.low[1])
        scaled = f" (x{model.scale:.3g})" if model.scale != 1.0 else ""
        unit = model.unit.split(" (")[0]  # "CMU units (inches / 0.45)": the name, not its definition
        floating = round(-model.rest_bounds.low[1] * 100) + 0  # + 0: no "-0"
        nodes = f"{self.drawn_mesh_nodes} mesh node{'' if self.drawn_mesh_nodes == 1 else 's'}"
        label = (
            model.path.name,
            f"{model.height:.2f} m tall, file in {unit}{scaled}",
            f"'{clip}' at {time:.2f} s: lowest {abs(lowest) * 100:.1f} cm up" if clip else "rest pose",
            f"{nodes}; rest-pose grounding {floating:+d} cm",
        )
        return Shot(model.path, np.array(pixels), label)

    def _shadow(
        self, model: Model, bounds: Bounds, frame: SceneFrame, view: np.ndarray, projection: np.ndarray
    ) -> None:
        """A blob shadow on the floor under the root joint (an object's middle), as the demo draws it."""
        centre = bounds.centre if model.root is None else (model.frame @ frame.world[0, model.root])[:3, 3]
        radius = 0.22 * model.height
        spot = matrix_from_trs([centre[0], 2e-3 * model.height, centre[2]], [0.0, 0.0, 0.0, 1.0], [radius] * 3)
        self.target.depth_mask = False
        self.ctx.enable(moderngl.BLEND)
        self.ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        self.shadow.draw(spot[None, None], view, projection, light_color=(0.0, 0.0, 0.0), ambient=(1.0, 1.0, 1.0))
        self.ctx.disable(moderngl.BLEND)
        self.target.depth_mask = True


def compose(shots: Sequence[Shot], columns: int = COLUMNS, tile: tuple[int, int] = TILE) -> pygame.Surface:
    """Tile the shots ``columns`` wide, each ``tile`` pixels with its label under it."""
    pygame.font.init()
    font = pygame.font.Font(None, 20)
    bold = pygame.font.Font(None, 24)
    columns = max(1, min(columns, len(shots)))
    rows = -(-len(shots) // columns)
    width, height = tile
    sheet = pygame.Surface((columns * width, rows * height))
    sheet.fill((30, 32, 38))
    label_height = height - shots[0].image.shape[0] if shots else LABEL_HEIGHT
    for k, shot in enumerate(shots):
        x, y = (k % columns) * width, (k // columns) * height
        picture = pygame.image.frombuffer(np.ascontiguousarray(shot.image).tobytes(), shot.image.shape[1::-1], "RGB")
        sheet.blit(picture, (x, y))
        for line, text in enumerate(shot.label):
            rendered = (bold if line == 0 else font).render(
                text, True, (235, 235, 235) if line == 0 else (190, 190, 190)
            )
            sheet.blit(rendered, (x + 8, y + height - label_height + 4 + 18 * line), (0, 0, width - 12, 20))
        pygame.draw.rect(sheet, (60, 63, 72), (x, y, width, height), 1)
    return sheet


RETARGET_TILE = (220, 270)
"""Pixels of one retarget tile: the picture, then :data:`RETARGET_LABEL` of text."""
RETARGET_LABEL = 44


def humanoid_targets(paths: Sequence[Path]) -> list[Path]:
    """The glTF files of ``paths`` that ``ossa retarget`` takes as a humanoid target (a skinned mesh, a biped)."""
    found = []
    for path in paths:
        if path.suffix.lower() not in (".gltf", ".glb"):
            continue
        try:
            character = retarget_character(path, "TARGET")
            find_humanoid(character.skeleton, model_up(character))
        except OssaError:
            continue
        if character.meshes:
            found.append(path)
    return found


def retarget_shots(renderer: Renderer, sources: Sequence[Path], targets: Sequence[Path], folder: Path) -> list[Shot]:
    """One tile per (take, target): the take retargeted (into ``folder``) and drawn at mid-clip.

    A pair ``ossa retarget`` refuses is left out and said so.
    """
    shots = []
    progress = Progress(PROG, len(sources) * len(targets), "pair")
    for source in sources:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.simplefilter("ignore", UnitWarning)  # a take's unit: the tile shows the height it gives
            take = retarget_source(source)
        for warning in caught:
            say(PROG, "warning", str(warning.message))
        for target in targets:
            title = f"{source.stem} on {target.stem}"
            try:
                done = retarget_file(take, target, folder / f"{source.stem}-{target.stem}.glb")
                shots.append(renderer.shoot(load_model(done.path), title))
            except OssaError as exc:
                say(PROG, "note", f"left out {title}: {exc}")
            progress.step(len(shots))
    return shots


def _load(path: Path) -> Model | None:
    """The model in ``path``, or ``None`` (said) when the programs cannot load it."""
    try:
        return load_model(path)
    except OssaError as exc:
        say(PROG, "note", f"left out {path.name}: {exc}")
        return None


def clip_companions(meshes: Mapping[Path, bool]) -> dict[Path, list[Path]]:
    """Which clip files show as which character's clips: character file → its clip files, in ``meshes``' order.

    ``meshes``: each glTF file loaded, true where it draws a mesh of its own, false where it holds
    clips and no mesh (an asset pack's animation file: the rig and its clips, as KayKit and Mixamo
    ship them; the programs draw its bones). A clip file goes with the file with a mesh nearest to
    it in the folder tree — the only one in the lowest folder that holds both; where that folder
    holds several, with none.
    """
    characters = [path for path, mesh in meshes.items() if mesh]
    found: dict[Path, list[Path]] = {}
    for path, mesh in meshes.items():
        if mesh or not characters:
            continue
        shared = [len(Path(os.path.commonpath([path.parent, c.parent])).parts) for c in characters]
        nearest = [c for c, depth in zip(characters, shared, strict=True) if depth == max(shared)]
        if len(nearest) == 1:
            found.setdefault(nearest[0], []).append(path)
    return found


def with_clip_files(models: dict[Path, Model]) -> dict[Path, Model]:
    """``models`` with each clip file's clips on its character (:func:`clip_companions`), the clip files' tiles gone.

    A clip file whose clips animate nodes the character mostly lacks (by name: another rig) keeps
    its tile, and the character its own clips; said either way.
    """
    meshes = {}  # the glTF files with a mesh of their own (true) or with clips only (false)
    for path, model in models.items():
        own = bool(model.scene.instances) and not model.bones
        if path.suffix.lower() != ".bvh" and (own or model.clips):
            meshes[path] = own
    shown = dict(models)
    for character, files in clip_companions(meshes).items():
        names = set(models[character].skeleton.names)
        taken = []
        for path in files:
            animated = _animated_names(models[path])
            if 2 * len(animated & names) > len(animated):
                taken.append(path)
            else:
                say(
                    PROG,
                    "note",
                    f"{path.name} shown apart: {character.name} has {len(animated & names)} of the "
                    f"{len(animated)} nodes its clips animate",
                )
        if not taken:
            continue
        listed = ", ".join(path.name for path in taken)
        try:
            shown[character] = load_model(character, clips=taken)
        except OssaError as exc:
            say(PROG, "note", f"{listed} shown apart: {character.name} does not load with them: {exc}")
            continue
        for path in taken:
            del shown[path]
        say(PROG, "note", f"{listed} shown as the clips of {character.name}")
    return shown


def _animated_names(model: Model) -> set[str]:
    """Names of the nodes ``model``'s clips animate."""
    names = model.skeleton.names
    return {names[channel.target] for clip in model.scene.clips.values() for channel in clip.nodes.channels}


def build_parser() -> argparse.ArgumentParser:
    """The contact sheet's options."""
    parser = argparse.ArgumentParser(prog=PROG, description="Tile headless pictures of every character.")
    parser.add_argument("models", nargs="*", type=Path, help="character files (default: see game/contact_sheet.py)")
    parser.add_argument("--out", type=Path, required=True, help="the PNG file to write")
    parser.add_argument(
        "--columns", type=int, default=None, help=f"tiles per row (default {COLUMNS}; retargets: one row per take)"
    )
    parser.add_argument(
        "--retargets",
        action="store_true",
        help="every take (.bvh) retargeted onto every humanoid character (.gltf/.glb) of the files or default places",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Render the sheet; the exit status is 0, or 2 when no GL context or no character could be had."""
    args = build_parser().parse_args(argv)
    try:
        check_output(args.out, "--out")
    except OssaError as exc:
        say(PROG, "error", str(exc))
        return 2
    sources = list(args.models) or default_sources()
    if args.retargets:
        takes = [p for p in sources if p.suffix.lower() == ".bvh"]
        targets = humanoid_targets(sources)
        if not takes or not targets:
            say(PROG, "error", f"no pair to show: {len(takes)} takes (.bvh), {len(targets)} humanoid characters")
            return 2
        models: list[Model] = []
    else:
        loaded = {path: model for path in sources if (model := _load(path)) is not None}
        models = list(with_clip_files(loaded).values())
        if not models:
            say(PROG, "error", "no character to show")
            return 2
    try:
        ctx = create_context(standalone=True)
    except GLContextError as exc:
        say(PROG, "error", str(exc))
        return 2
    tile = RETARGET_TILE if args.retargets else TILE
    label = RETARGET_LABEL if args.retargets else LABEL_HEIGHT
    try:
        renderer = Renderer(ctx, (tile[0], tile[1] - label))
        if args.retargets:
            with tempfile.TemporaryDirectory(prefix="ossa-retargets-") as folder:
                shots = retarget_shots(renderer, takes, targets, Path(folder))
        else:
            progress = Progress(PROG, len(models), "character")
            shots = []
            for model in models:
                shots.append(renderer.shoot(model))
                progress.step(len(shots))
    finally:
        release_context(ctx)
    columns = args.columns or (len(targets) if args.retargets else COLUMNS)
    pygame.image.save(compose(shots, columns, tile), str(args.out))
    what = "retargets" if args.retargets else "characters"
    print(f"wrote {args.out}: {len(shots)} {what} ({', '.join(s.label[0] for s in shots)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
