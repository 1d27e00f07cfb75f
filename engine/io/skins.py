"""glTF skins → a runtime skeleton per skin, with the joints' order, inverse binds and clips.

The glTF 2.0 specification (§3.7.3) asks of a skin's joints only that they be distinct nodes with
a **common root**, which may or may not be a joint; ``skin.skeleton`` names that root or an
ancestor of it, but only as a hint: a valid FBX2glTF export names a node beside it, and three.js
and the Khronos validator read such files, so Ossa checks the index and otherwise ignores it.
Joints may hang from one another through nodes that are not joints, and a skin may have several
top joints under a non-joint node. The
skin's :class:`~engine.anim.skeleton.Skeleton` is therefore the **closure** of the joints: every
node on the paths from the joints up to their closest common root (the root itself only when it
is a joint), depth-first. Non-joint entries have an identity inverse bind matrix and no vertex
refers to them; they carry their rest transform and their animation like any joint, which keeps
``world(joint) = root_transform @ model(joint)`` exact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engine.anim.clip import Clip
from engine.anim.skeleton import Skeleton
from engine.io.animations import RawAnimation, bind_clip
from engine.io.gltf import GltfDocument, _items
from engine.io.nodes import Nodes, depth_first, skeleton_over
from engine.math._checks import FloatArray, IntArray, readonly_copy

#: An inverse bind matrix whose |det| is below this times the product of its basis column lengths is
#: singular (the columns are, to this tolerance, coplanar or zero).
SINGULAR_TOLERANCE = 1e-9


@dataclass(frozen=True, eq=False)
class SkinData:
    """One glTF skin, ready for the runtime.

    Attributes
    ----------
    index
        The skin's index in the file.
    name
        Its name (``"skin<i>"`` when the file has none).
    skeleton
        The joints and the non-joint nodes between them (see the module docstring) in
        depth-first order (``parents[i] < i``), rest pose from the nodes' TRS/matrix, inverse
        bind matrices (identity when the file has none, and for non-joint entries).
    joint_nodes
        ``(J,)`` glTF node index of each skeleton entry.
    from_gltf_order
        ``(K,)`` skeleton index of each entry of the file's ``skins[i].joints`` (what a
        ``JOINTS_n`` attribute refers to; ``K ≤ J``). Meshes are already remapped with it.
    is_joint
        ``(J,)`` whether each skeleton entry is one of the skin's joints (``False`` for a
        non-joint node between joints).
    root_parent
        glTF index of the node the skeleton's roots hang from, ``-1`` if they are scene roots.
    root_transform
        ``(4, 4)`` rest world transform of ``root_parent`` (identity when ``-1``): world =
        ``root_transform @ model``.
    clips
        One clip per animation of the file (aligned with :attr:`GltfAsset.clips`), its
        translation/rotation/scale channels re-bound to skeleton indices; channels of nodes
        outside the skeleton are left out.
    """

    index: int
    name: str
    skeleton: Skeleton
    joint_nodes: IntArray
    from_gltf_order: IntArray
    is_joint: np.ndarray
    root_parent: int
    root_transform: FloatArray
    clips: tuple[Clip, ...]


def read_skin(
    doc: GltfDocument, i: int, nodes: Nodes, animations: Sequence[RawAnimation], humanoid: Mapping[int, str] = {}
) -> SkinData:
    """Read and check ``skins[i]``: joints, their common root, inverse binds, and its clips.

    ``humanoid`` (glTF node → body role) goes with the skeleton when it covers the skin
    (:func:`~engine.io.nodes.skeleton_over`).
    """
    skin, where = doc.gltf.skins[i], f"skins[{i}]"
    joints = [doc.index(j, nodes.count, f"{where}.joints[{k}]", "nodes") for k, j in enumerate(_items(skin.joints))]
    if not joints:
        raise doc.error("a skin needs at least one joint", f"{where}.joints")
    if len(set(joints)) != len(joints):
        dupes = sorted({j for j in joints if joints.count(j) > 1})
        raise doc.error(f"joints must be distinct nodes, got nodes {dupes} more than once", f"{where}.joints")
    common = _closest_common_root(doc, nodes, joints, f"{where}.joints")
    if skin.skeleton is not None:  # a hint only (three.js and the validator read it so): checked, unused
        doc.index(skin.skeleton, nodes.count, f"{where}.skeleton", "nodes")
    members = set(joints)
    closure = _closure(nodes, joints, common)
    root_parent = int(nodes.parents[common]) if common in members else common
    roots = [common] if common in members else [c for c in nodes.children[common] if c in closure]
    roots.sort(key=lambda r: _first_listed(nodes, joints, r))
    order = depth_first(roots, lambda n: [c for c in nodes.children[n] if c in closure])
    position = {n: k for k, n in enumerate(order)}
    from_gltf = np.array([position[j] for j in joints], dtype=np.intp)
    inverse_bind = _inverse_bind(doc, i, len(joints))
    skeleton_ibm = None
    if inverse_bind is not None:
        skeleton_ibm = np.tile(np.eye(4), (len(order), 1, 1))
        skeleton_ibm[from_gltf] = inverse_bind
    skeleton = skeleton_over(nodes, order, skeleton_ibm, humanoid)
    clips = tuple(bind_clip(animation, position, len(order))[0] for animation in animations)
    return SkinData(
        index=i,
        name=skin.name or f"skin{i}",
        skeleton=skeleton,
        joint_nodes=readonly_copy(np.asarray(order, dtype=np.intp)),
        from_gltf_order=readonly_copy(from_gltf),
        is_joint=readonly_copy(np.isin(order, joints)),
        root_parent=root_parent,
        root_transform=readonly_copy(np.eye(4) if root_parent < 0 else nodes.world[root_parent]),
        clips=clips,
    )


def _ancestry(nodes: Nodes, node: int) -> list[int]:
    """``node`` and its ancestors, up to its root."""
    chain = []
    while node >= 0:
        chain.append(node)
        node = int(nodes.parents[node])
    return chain


def _closest_common_root(doc: GltfDocument, nodes: Nodes, joints: Sequence[int], where: str) -> int:
    """The deepest node that is ``joints[k]`` or an ancestor of it for every ``k``."""
    chains = [_ancestry(nodes, j) for j in joints]
    shared = set(chains[0]).intersection(*chains[1:])
    if not shared:
        roots = sorted({chain[-1] for chain in chains})
        raise doc.error(f"joints must have a common root, but they lie in separate trees (root nodes {roots})", where)
    return next(n for n in chains[0] if n in shared)  # the first shared node walking up is the deepest


def _closure(nodes: Nodes, joints: Sequence[int], common: int) -> set[int]:
    """The joints and every node between them and ``common`` (``common`` only when it is a joint)."""
    closure = {common} if common in joints else set()
    for joint in joints:
        node = joint
        while node != common and node not in closure:
            closure.add(node)
            node = int(nodes.parents[node])
    return closure


def _first_listed(nodes: Nodes, joints: Sequence[int], root: int) -> int:
    """Position in ``joints`` of ``root`` if it is a joint, else of its first-listed descendant joint."""
    if root in joints:
        return joints.index(root)
    return min(k for k, j in enumerate(joints) if root in _ancestry(nodes, j))


def _inverse_bind(doc: GltfDocument, i: int, count: int) -> FloatArray | None:
    """``(count, 4, 4)`` inverse bind matrices of ``skins[i]`` (file joint order), or ``None``."""
    accessor = doc.gltf.skins[i].inverseBindMatrices
    if accessor is None:
        return None
    where = f"skins[{i}].inverseBindMatrices"
    meta = doc.accessor_meta(accessor, where)
    if meta.type != "MAT4" or meta.componentType != 5126:
        raise doc.error(
            f"must be a FLOAT MAT4 accessor, got componentType {meta.componentType} type {meta.type}", where
        )
    if meta.count < count:
        raise doc.error(f"has {meta.count} matrices for {count} joints; one per joint is needed", where)
    if meta.count > count:
        doc.warn(f"has {meta.count} matrices for {count} joints; the extra ones are ignored", where)
    matrices = doc.floats(accessor, where)[:count]
    if not np.isfinite(matrices).all():
        raise doc.error("inverse bind matrices must be finite", where)
    projective = np.abs(matrices[:, 3] - [0.0, 0.0, 0.0, 1.0]).max(axis=1) > 1e-6
    if projective.any():
        k = int(np.argmax(projective))
        raise doc.error(f"matrix {k} is not affine (last row {matrices[k, 3].tolist()}, expected 0 0 0 1)", where)
    basis = matrices[:, :3, :3]
    determinants = np.linalg.det(basis)
    singular = np.abs(determinants) <= SINGULAR_TOLERANCE * np.prod(np.linalg.norm(basis, axis=1), axis=1)
    if singular.any():
        k = int(np.argmax(singular))
        raise doc.error(
            f"matrix {k} is singular (determinant {determinants[k]:.3g}); inverse bind matrices must be invertible",
            where,
        )
    return matrices
