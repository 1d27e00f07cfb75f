#version 430 core
// Base colour (texture x material factor when a texture is bound, else the material colour)
// lit by one directional light plus ambient, plus the material's emissive colour; an unlit
// material (KHR_materials_unlit) is its base colour alone. Colours are linear inside,
// sRGB-encoded on output.
in vec3 v_world_position;
in vec3 v_world_normal;
in vec2 v_uv;

uniform vec4 u_base_color;          // linear RGBA material colour (glTF baseColorFactor)
uniform bool u_has_texture;
uniform sampler2D u_base_color_texture;   // sRGB-encoded RGBA8
uniform vec3 u_light_direction;     // world space, the direction the light travels (unit)
uniform vec3 u_light_color;
uniform vec3 u_ambient;
uniform vec3 u_emissive;            // linear RGB (glTF emissiveFactor x emissiveStrength)
uniform bool u_unlit;

out vec4 f_color;

void main() {
    vec4 base = u_base_color;
    if (u_has_texture) {
        vec4 texel = texture(u_base_color_texture, v_uv);
        base *= vec4(pow(texel.rgb, vec3(2.2)), texel.a);
    }
    vec3 color = base.rgb;
    if (!u_unlit) {
        vec3 normal = normalize(v_world_normal);
        if (!gl_FrontFacing) {
            normal = -normal;
        }
        float diffuse = max(dot(normal, -u_light_direction), 0.0);
        color = base.rgb * (u_ambient + diffuse * u_light_color) + u_emissive;
    }
    f_color = vec4(pow(clamp(color, 0.0, 1.0), vec3(1.0 / 2.2)), base.a);
}
