#version 430 core
// Linear blend skinning: position = sum_i w_i * palette[j_i] * bind_position (morphed first).
// Normals use the cofactor (inverse transpose) of the blended matrix. Matches
// engine.anim.skinning.skin_vertices on the CPU.
#include "skin_common.glsl"

// (characters x joints) column-major mat4, one shader storage buffer for all instances.
layout(std430, binding = 0) readonly buffer Palette {
    mat4 palette[];
};

mat4 blend(uvec4 joints, vec4 weights, int base) {
    return weights.x * palette[base + int(joints.x)]
         + weights.y * palette[base + int(joints.y)]
         + weights.z * palette[base + int(joints.z)]
         + weights.w * palette[base + int(joints.w)];
}

void main() {
    vec3 position, normal;
    bind_vertex(position, normal);
    if (unweighted()) {
        emit(position, normal);
        return;
    }
    int base = palette_base();
    mat4 skin = blend(in_joints0, in_weights0, base);
#if INFLUENCE_SETS > 1
    skin += blend(in_joints1, in_weights1, base);
#endif
    emit((skin * vec4(position, 1.0)).xyz, normal_matrix(mat3(skin)) * normal);
}
