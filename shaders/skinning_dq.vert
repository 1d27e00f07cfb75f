#version 430 core
// Dual-quaternion skinning (Kavan et al. 2007, "Skinning with dual quaternions"): the joints'
// rigid transforms are blended as unit dual quaternions, so a twisting joint keeps the limb's
// radius instead of collapsing it ("candy wrapper") as linear blending does.
//
// Scale: a joint whose palette matrix is s * rotation + translation (uniform scale s) is
// blended as a dual quaternion applied to (sum_i w_i s_i) * bind_position. A vertex influenced
// (with non-zero weight) by any joint whose matrix has non-uniform scale, shear or a mirror
// falls back to linear blend skinning with the palette matrices, exactly as skinning.vert.
#include "skin_common.glsl"

struct Joint {
    vec4 real;     // unit rotation quaternion (x, y, z, w)
    vec4 dual;     // 1/2 (t, 0) * real
    vec4 scale;    // x: uniform scale s; y: 1 when this joint needs the LBS fallback, else 0
    mat4 matrix;   // the palette matrix (column-major), used by the fallback
};

// (characters x joints) records of 112 bytes, one shader storage buffer for all instances.
layout(std430, binding = 0) readonly buffer Palette {
    Joint joints[];
};

const int INFLUENCES = 4 * INFLUENCE_SETS;

vec3 quat_rotate(vec4 q, vec3 v) {
    return v + 2.0 * cross(q.xyz, cross(q.xyz, v) + q.w * v);
}

void main() {
    int base = gl_InstanceID * u_joint_count;
    int index[INFLUENCES];
    float weight[INFLUENCES];
    for (int k = 0; k < 4; ++k) {
        index[k] = base + int(in_joints0[k]);
        weight[k] = in_weights0[k];
#if INFLUENCE_SETS > 1
        index[4 + k] = base + int(in_joints1[k]);
        weight[4 + k] = in_weights1[k];
#endif
    }

    bool linear = false;
    for (int k = 0; k < INFLUENCES; ++k) {
        linear = linear || (weight[k] != 0.0 && joints[index[k]].scale.y > 0.5);
    }
    if (linear) {
        mat4 skin = mat4(0.0);
        for (int k = 0; k < INFLUENCES; ++k) {
            skin += weight[k] * joints[index[k]].matrix;
        }
        emit((skin * vec4(in_position, 1.0)).xyz, normal_matrix(mat3(skin)) * in_normal);
        return;
    }

    // Flip every rotation into the hemisphere of the first influence, then sum and normalise.
    vec4 pivot = joints[index[0]].real;
    vec4 real = vec4(0.0);
    vec4 dual = vec4(0.0);
    float scale = 0.0;
    for (int k = 0; k < INFLUENCES; ++k) {
        Joint joint = joints[index[k]];
        float signed_weight = dot(joint.real, pivot) < 0.0 ? -weight[k] : weight[k];
        real += signed_weight * joint.real;
        dual += signed_weight * joint.dual;
        scale += weight[k] * joint.scale.x;
    }
    float norm = length(real);
    real /= norm;
    dual /= norm;
    // translation = 2 * vector part of (dual * conjugate(real)) for a unit real part
    vec3 translation = 2.0 * (real.w * dual.xyz - dual.w * real.xyz + cross(real.xyz, dual.xyz));
    emit(quat_rotate(real, scale * in_position) + translation, quat_rotate(real, in_normal));
}
