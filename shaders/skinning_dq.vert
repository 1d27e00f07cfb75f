#version 430 core
// Dual-quaternion skinning (Kavan et al. 2007, "Skinning with dual quaternions"): the joints'
// rigid transforms are blended as unit dual quaternions, so a twisting joint keeps the limb's
// radius instead of collapsing it ("candy wrapper") as linear blending does.
//
// Scale, shear and mirroring (two-phase skinning, Kavan et al. 2008): each joint's palette
// matrix M is split into a rigid part (rotation R, translation t) and a stretch S = R^T M3
// (identity for rigid joints, s*I for uniform scale; see dq_joint.glsl). The vertex is first
// stretched by sum_i w_i S_i, then moved by the normalised blend of the rigid dual quaternions.
// This is what engine.anim.skinning.skin_vertices_dq computes on the CPU.
#include "skin_common.glsl"

#include "dq_joint.glsl"

// (characters x joints) records of 80 bytes, one shader storage buffer for all instances,
// filled by palette_dq.comp from the uploaded matrices.
layout(std430, binding = 0) readonly buffer Palette {
    Joint joints[];
};

const int INFLUENCES = 4 * INFLUENCE_SETS;

vec3 quat_rotate(vec4 q, vec3 v) {
    return v + 2.0 * cross(q.xyz, cross(q.xyz, v) + q.w * v);
}

void main() {
    vec3 bind_position, bind_normal;
    bind_vertex(bind_position, bind_normal);
    int base = palette_base();
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
    if (unweighted()) {
        emit(bind_position, bind_normal);
        return;
    }

    // Flip every rotation into the hemisphere of the first influence, then sum and normalise.
    vec4 pivot = joints[index[0]].real;
    vec4 real = vec4(0.0);
    vec4 dual = vec4(0.0);
    mat3 stretch = mat3(0.0);
    for (int k = 0; k < INFLUENCES; ++k) {
        Joint joint = joints[index[k]];
        float signed_weight = dot(joint.real, pivot) < 0.0 ? -weight[k] : weight[k];
        real += signed_weight * joint.real;
        dual += signed_weight * joint.dual;
        stretch += weight[k] * joint.stretch;
    }
    float norm = length(real);
    real /= norm;
    dual /= norm;
    // translation = 2 * vector part of (dual * conjugate(real)) for a unit real part; the part
    // of dual along real cancels in this expression, so no further normalisation is needed.
    vec3 translation = 2.0 * (real.w * dual.xyz - dual.w * real.xyz + cross(real.xyz, dual.xyz));
    vec3 position = quat_rotate(real, stretch * bind_position) + translation;
    emit(position, quat_rotate(real, normal_matrix(stretch) * bind_normal));
}
