// One joint's record for dual-quaternion skinning (80 bytes in std430), written by
// palette_dq.comp from the palette matrix M and read by skinning_dq.vert.
//
// Rigid part: M's basis columns normalised, the first one negated when the determinant is
// negative (so it is a rotation R), as a unit dual quaternion with M's translation t.
// Stretch: S = R^T M3 carries scale, shear and mirroring (identity for a rigid joint, s*I for
// uniform scale s), so that M3 = R S.
struct Joint {
    vec4 real;     // rotation quaternion (x, y, z, w)
    vec4 dual;     // 1/2 (t, 0) * real (Hamilton product)
    mat3 stretch;  // columns padded to vec4 by std430
};
