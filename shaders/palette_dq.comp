#version 430 core
// Palette matrices -> dual-quaternion skinning records, one invocation per (character, joint).
// Runs on the GPU right after the palette upload, so DQS uploads the same 64 bytes per joint as
// LBS. The split is the one engine.anim.skinning.skin_vertices_dq makes on the CPU.
layout(local_size_x = 64) in;

#include "dq_joint.glsl"

layout(std430, binding = 1) readonly buffer Matrices {
    mat4 matrices[];
};
layout(std430, binding = 0) writeonly buffer Palette {
    Joint joints[];
};

uniform uint u_count;  // characters x joints

// Shepperd's method, as engine.math.quat_from_matrix: build the candidate on the largest of the
// diagonal elements and the trace (first one on ties), then normalise. m[c][r] is row r, column c.
vec4 quat_from_basis(mat3 m) {
    float m00 = m[0][0], m11 = m[1][1], m22 = m[2][2];
    float trace = m00 + m11 + m22;
    vec4 q;
    if (m00 >= m11 && m00 >= m22 && m00 >= trace) {
        q = vec4(1.0 + m00 - m11 - m22, m[1][0] + m[0][1], m[2][0] + m[0][2], m[1][2] - m[2][1]);
    } else if (m11 >= m22 && m11 >= trace) {
        q = vec4(m[1][0] + m[0][1], 1.0 - m00 + m11 - m22, m[2][1] + m[1][2], m[2][0] - m[0][2]);
    } else if (m22 >= trace) {
        q = vec4(m[2][0] + m[0][2], m[2][1] + m[1][2], 1.0 - m00 - m11 + m22, m[0][1] - m[1][0]);
    } else {
        q = vec4(m[1][2] - m[2][1], m[2][0] - m[0][2], m[0][1] - m[1][0], 1.0 + trace);
    }
    return normalize(q);
}

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= u_count) {
        return;
    }
    mat4 m = matrices[i];
    mat3 linear = mat3(m);
    mat3 basis = mat3(normalize(linear[0]), normalize(linear[1]), normalize(linear[2]));
    if (determinant(basis) < 0.0) {
        basis[0] = -basis[0];
    }
    vec4 real = quat_from_basis(basis);
    vec3 t = m[3].xyz;
    joints[i].real = real;
    joints[i].dual = 0.5 * vec4(real.w * t + cross(t, real.xyz), -dot(t, real.xyz));
    joints[i].stretch = transpose(basis) * linear;
}
