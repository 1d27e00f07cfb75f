// Rest-pose world positions of every mesh of a glTF file as three.js draws them (GLTFLoader with
// its own meshopt decoder, morph targets at their default weights, then the bones), as JSON
// {mesh name: [[x, y, z] per vertex]}. Usage: node threejs_rest_oracle.mjs THREE_FOLDER FILE.glb
import { readFileSync } from 'node:fs';
import path from 'node:path';
const base = process.argv[2];
const THREE = await import(path.join(base, 'node_modules/three/build/three.module.js'));
const { GLTFLoader } = await import(path.join(base, 'node_modules/three/examples/jsm/loaders/GLTFLoader.js'));
const { MeshoptDecoder } = await import(path.join(base, 'node_modules/three/examples/jsm/libs/meshopt_decoder.module.js'));
const data = readFileSync(process.argv[3]);
const loader = new GLTFLoader(); loader.setMeshoptDecoder(MeshoptDecoder);
const gltf = await new Promise((ok, bad) => loader.parse(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength), '', ok, bad));
gltf.scene.updateMatrixWorld(true);
const out = {};
gltf.scene.traverse((o) => { if (!o.isMesh) return; const v = new THREE.Vector3(), p = [];
  if (o.isSkinnedMesh) o.skeleton.update();
  for (let i = 0; i < o.geometry.attributes.position.count; i++) { o.getVertexPosition(i, v); v.applyMatrix4(o.matrixWorld); p.push([v.x, v.y, v.z]); }
  out[o.name] = p; });
console.log(JSON.stringify(out));
