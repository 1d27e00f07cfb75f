"""Rendering with moderngl: GL context, shaders by name, GPU skinning and morphing, debug lines, screenshots.

The only package of ``engine`` that imports moderngl. A whole scene (every skin, rigid part and
morph target) for ``C`` characters: ``SceneRenderer(ctx, scene).draw(frame, view, projection,
placements)``. A frame for ``C`` characters of one mesh::

    ctx = create_context(standalone=True)          # or create_context() inside a pygame window
    palette = PaletteBuffer(ctx, skeleton.num_joints, method="lbs")
    mesh = SkinnedMesh(ctx, character.meshes[0])
    with OffscreenTarget(ctx, (640, 360)) as target:
        target.clear()
        palette.upload(palettes)                   # (C, J, 4, 4): one upload
        mesh.draw(palette, view, projection, worlds)  # (C, 4, 4): one instanced draw
        target.save("frame.png")
"""

from engine.render.context import check_context, create_context, release_context
from engine.render.debug_draw import DebugDraw, frustum_corners
from engine.render.scene_renderer import SceneRenderer
from engine.render.screenshot import OffscreenTarget, load_png, read_framebuffer, save_png, save_screenshot
from engine.render.shaders import load_program, shader_path, shader_source
from engine.render.skinned_mesh import SkinnedMesh, vertex_normals
from engine.render.storage_buffers import MorphWeightBuffer, PaletteBuffer, pack_palette

__all__ = [
    "DebugDraw",
    "MorphWeightBuffer",
    "OffscreenTarget",
    "PaletteBuffer",
    "SceneRenderer",
    "SkinnedMesh",
    "check_context",
    "create_context",
    "frustum_corners",
    "load_png",
    "load_program",
    "pack_palette",
    "read_framebuffer",
    "release_context",
    "save_png",
    "save_screenshot",
    "shader_path",
    "shader_source",
    "vertex_normals",
]
