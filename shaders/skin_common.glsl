// Shared by skinning.vert and skinning_dq.vert: vertex inputs, per-instance world transform,
// morph targets, outputs, and the final model -> world -> clip step. Included after #version.
//
// INFLUENCE_SETS (1 or 2, #defined by engine/render/shaders.py) is the number of
// JOINTS_n/WEIGHTS_n pairs: 4 or 8 joint influences per vertex.
// Joint indices address the palette records of the instance's character, from this mesh's
// first record on: palette[gl_InstanceID * u_joint_count + u_joint_offset + joint]. A rigid
// mesh is drawn as a mesh skinned 100 % to one record, its node's world matrix.
//
// MORPH (0 or 1) enables morph targets (glTF: morphed = base + sum_t w_t * delta_t, in bind
// space, before skinning): the displacements of all targets sit in one storage buffer, the
// weights of every instance in another.

#ifndef MORPH
#define MORPH 0
#endif

in vec3 in_position;      // bind pose, mesh space
in vec3 in_normal;
in vec2 in_uv;
in uvec4 in_joints0;
in vec4 in_weights0;
#if INFLUENCE_SETS > 1
in uvec4 in_joints1;
in vec4 in_weights1;
#endif
in mat4 in_world;         // per instance: the character's model -> world transform

uniform mat4 u_view;
uniform mat4 u_projection;
uniform int u_joint_count;   // palette records per character
uniform int u_joint_offset;  // this mesh's first record among them

int palette_base() {
    return gl_InstanceID * u_joint_count + u_joint_offset;
}

#if MORPH
// (targets x vertices x 3) position displacements, then as many normal displacements when
// u_morph_normals: packed floats, written by engine.render.skinned_mesh.SkinnedMesh.
layout(std430, binding = 2) readonly buffer MorphTargets {
    float morph_deltas[];
};
// (characters x u_weight_stride) weights; this mesh's u_morph_targets start at u_weight_offset.
layout(std430, binding = 3) readonly buffer MorphWeights {
    float morph_weights[];
};
uniform int u_morph_targets;
uniform int u_vertex_count;
uniform int u_weight_stride;
uniform int u_weight_offset;
uniform bool u_morph_normals;

void morph(inout vec3 position, inout vec3 normal) {
    int weights = gl_InstanceID * u_weight_stride + u_weight_offset;
    int normals = 3 * u_morph_targets * u_vertex_count;
    for (int t = 0; t < u_morph_targets; ++t) {
        float w = morph_weights[weights + t];
        if (w == 0.0) {
            continue;  // the same for every vertex of the instance: most of a face rig is idle at a time
        }
        int p = 3 * (t * u_vertex_count + gl_VertexID);
        position += w * vec3(morph_deltas[p], morph_deltas[p + 1], morph_deltas[p + 2]);
        if (u_morph_normals) {
            normal += w * vec3(morph_deltas[normals + p], morph_deltas[normals + p + 1], morph_deltas[normals + p + 2]);
        }
    }
}
#endif

// The bind-space vertex to skin: morphed when MORPH is on.
void bind_vertex(out vec3 position, out vec3 normal) {
    position = in_position;
    normal = in_normal;
#if MORPH
    morph(position, normal);
#endif
}

out vec3 v_world_position;
out vec3 v_world_normal;
out vec2 v_uv;

// Vertices whose weights are all zero follow no joint: they keep their bind position (the
// weights were L1-normalised when the mesh was uploaded, so the others sum to 1).
bool unweighted() {
    float total = dot(in_weights0, vec4(1.0));
#if INFLUENCE_SETS > 1
    total += dot(in_weights1, vec4(1.0));
#endif
    return total == 0.0;
}

// Transforms normals like the inverse transpose of m, up to a positive factor (normalised
// later). The cofactor matrix equals det(m) * inverse(transpose(m)): no division, so it stays
// finite for singular m; the sign of the determinant keeps normals outward under mirroring.
mat3 normal_matrix(mat3 m) {
    mat3 cofactor = mat3(cross(m[1], m[2]), cross(m[2], m[0]), cross(m[0], m[1]));
    return determinant(m) < 0.0 ? -cofactor : cofactor;
}

void emit(vec3 skinned_position, vec3 skinned_normal) {
    vec4 world = in_world * vec4(skinned_position, 1.0);
    v_world_position = world.xyz;
    v_world_normal = normalize(normal_matrix(mat3(in_world)) * skinned_normal);
    v_uv = in_uv;
    gl_Position = u_projection * u_view * world;
}
