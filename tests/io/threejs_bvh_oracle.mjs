// World positions of every bone of a BVH file as three.js's BVHLoader plays it: the independent
// oracle behind tests/io/data/pirouette_threejs.json. Regenerate with (three 0.160.0):
//
//   npm install --prefix /tmp/three three@0.160.0
//   NODE_PATH=/tmp/three/node_modules node tests/io/threejs_bvh_oracle.mjs \
//       ../shared/assets/pirouette_bvh/pirouette.bvh '[0, 137, 300, 591]' > tests/io/data/pirouette_threejs.json
//
// (ES modules ignore NODE_PATH: run it from a folder whose node_modules holds three, or link it.)
import fs from 'fs';
import * as THREE from 'three';
import { BVHLoader } from 'three/examples/jsm/loaders/BVHLoader.js';

const text = fs.readFileSync(process.argv[2], 'utf8');
const frames = JSON.parse(process.argv[3]);
const result = new BVHLoader().parse(text);
const group = new THREE.Group();
group.add(result.skeleton.bones[0]);
const mixer = new THREE.AnimationMixer(group);
const action = mixer.clipAction(result.clip);
action.setLoop(THREE.LoopOnce);
action.clampWhenFinished = true; // the last frame sits at the clip's end: do not wrap to frame 0
action.play();
const frameTime = result.clip.duration / (result.clip.tracks[0].times.length - 1);
const out = { three: THREE.REVISION, frames, names: result.skeleton.bones.map((b) => b.name), positions: [] };
for (const f of frames) {
  mixer.setTime(f * frameTime);
  group.updateMatrixWorld(true);
  out.positions.push(result.skeleton.bones.map((b) => b.getWorldPosition(new THREE.Vector3()).toArray()
    .map((v) => Math.round(v * 1e5) / 1e5)));
}
console.log(JSON.stringify(out));
