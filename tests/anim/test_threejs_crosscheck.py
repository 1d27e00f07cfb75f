"""Optional cross-check of ``ossa evaluate`` against three.js (GLTFLoader + AnimationMixer).

Runs only where ``OSSA_THREEJS`` names a folder holding ``node_modules/three`` (for instance after
``npm install --prefix /tmp/three three@0.170.0``) and ``node`` is on the PATH; .ci/run installs it.
three.js loops clips, samples Float32 tracks and skins with ``JOINTS_0``/``WEIGHTS_0`` only, so the
comparison stays inside each clip's key range and on files with one influence set.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from engine.errors import OssaWarning
from engine.io import load_gltf
from engine.io.commands import evaluate
from tests.anim.test_gltf_conformance import SHARED, Reference

THREE = os.environ.get("OSSA_THREEJS")

SCRIPT = r"""
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const [threeDir, file, clipIndex, timesText] = process.argv.slice(2);
globalThis.ProgressEvent ??= class extends Event {  // FileLoader reports progress; node lacks the class
  constructor(type, init = {}) { super(type); Object.assign(this, init); }
};
const base = pathToFileURL(threeDir + '/node_modules/three/').href;
const THREE = await import(base + 'build/three.module.js');
const { GLTFLoader } = await import(base + 'examples/jsm/loaders/GLTFLoader.js');
const gltf = await new GLTFLoader().parseAsync(readFileSync(file, 'utf8'), '');
const times = timesText.split(',').map(Number);
const objects = new Map();
gltf.parser.associations.forEach((value, object) => {
  if (object.isObject3D && value && value.nodes !== undefined) objects.set(value.nodes, object);
});
const mixer = new THREE.AnimationMixer(gltf.scene);
mixer.clipAction(gltf.animations[Number(clipIndex)]).play();
const nodes = {}, positions = {};
for (const t of times) {
  mixer.setTime(t);
  gltf.scene.updateMatrixWorld(true);
  for (const [index, object] of objects) {
    (nodes[index] ??= []).push(object.matrixWorld.elements.slice());
    if (object.isSkinnedMesh) {
      const position = object.geometry.attributes.position;
      const out = [];
      const v = new THREE.Vector3();
      for (let i = 0; i < position.count; i++) {
        v.fromBufferAttribute(position, i);
        object.applyBoneTransform(i, v);
        v.applyMatrix4(object.matrixWorld);
        out.push([v.x, v.y, v.z]);
      }
      (positions[index] ??= []).push(out);
    }
  }
}
console.log(JSON.stringify({ nodes, positions }));
"""


def embedded_without_images(path: Path, out: Path) -> Path:
    """The file as one .gltf with data-URI buffers and no images (three.js cannot decode them in node)."""
    ref = Reference(path)
    doc = copy.deepcopy(ref.json)
    for key in ("images", "textures", "samplers"):
        doc.pop(key, None)
    for material in doc.get("materials", []):
        material.get("pbrMetallicRoughness", {}).pop("baseColorTexture", None)
        material.pop("normalTexture", None)
    doc["buffers"] = [
        {"byteLength": len(data), "uri": "data:application/octet-stream;base64," + base64.b64encode(data).decode()}
        for data in ref.buffers
    ]
    out.write_text(json.dumps(doc))
    return out


@pytest.mark.assets
@pytest.mark.skipif(THREE is None or shutil.which("node") is None, reason="optional: set OSSA_THREEJS to use three.js")
@pytest.mark.parametrize("relative", SHARED)
def test_evaluate_agrees_with_threejs(shared_assets: Path, relative: str, tmp_path: Path) -> None:
    path = shared_assets / relative
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)
        asset = load_gltf(path, textures=False)
    ref = Reference(path)
    script = tmp_path / "three_eval.mjs"
    script.write_text(SCRIPT)
    stripped = embedded_without_images(path, tmp_path / "model.gltf")
    for a, clip in enumerate(asset.clips):
        keys = ref.key_times(ref.json["animations"][a])
        start = max(float(keys[0]), 0.0)
        times = np.linspace(start, float(keys[-1]) - 1e-4, 7)
        run = subprocess.run(
            ["node", str(script), str(THREE), str(stripped), str(a), ",".join(map(repr, times.tolist()))],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        three = json.loads(run.stdout)
        ours = evaluate(asset, clip, times)
        size = max(1.0, float(np.abs(np.array(ours["meshes"][0]["skinnedPositions"][0])).max()))
        for entry in ours["nodes"]:
            expected = np.array(three["nodes"][str(entry["index"])])
            np.testing.assert_allclose(np.array(entry["world"]), expected, rtol=0, atol=1e-5 * size)
        for entry in ours["meshes"]:
            if entry["skinned"]:
                expected = np.array(three["positions"][str(entry["node"])])
                np.testing.assert_allclose(entry["skinnedPositions"], expected, rtol=0, atol=1e-5 * size)
