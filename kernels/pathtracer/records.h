// Records shared with the host: the launch parameters, the scene record and the tables it points at (meshes,
// materials, light sources, emissive triangles).
//
// optixasync/render/_layout.py mirrors these structs field for field, and the layout test compiles them with
// NVRTC to check every offset; change both sides together. They stay at global scope, outside namespace pt,
// because the host code and that test name them unqualified.
#pragma once

#include "optixasync_device.h"

// Defined in environment.h, with the functions that read it.
struct EnvironmentRecord;
// Defined in shapes.h: spheres and curves.
struct ShapeRecord;
// Defined in motion.h: the motion keys of moving meshes.
struct MeshMotion;

enum MeshFlags : unsigned int {
    MESH_TWO_SIDED = 1u << 0,  // reflect on both sides (else black seen from the back)
    MESH_EMISSIVE = 1u << 1,   // emits on its front side
    MESH_ALPHA_MASK = 1u << 2, // cut out where the opacity is below the material's cutoff (any-hit program)
    MESH_ALPHA_BLEND = 1u << 3,// let rays through with probability 1 - opacity (any-hit program)
    MESH_LIGHT_SAMPLED = 1u << 4,  // emissive and in the emitter table (an emission texture keeps it out)
    MESH_INSTANCED = 1u << 5,  // object-space vertices placed by to_world (an instance of a shared GAS)
    MESH_MIRRORED = 1u << 6,   // to_world mirrors: the world winding is reversed, the front side is not
    MESH_CULL_BACK = 1u << 7,  // one-sided, back faces culled: rays pass through them (any-hit program)
};

// A texture of a material: a CUDA texture object (0: none) and the affine map from the mesh's UV to the
// texture's, u' = uv[0] u + uv[1] v + uv[2], v' = uv[3] u + uv[4] v + uv[5] (KHR_texture_transform).
struct TextureSlot {
    unsigned long long texture;
    float uv[6];
};

// Floats of a material's own BSDF parameters (MaterialRecord::params).
constexpr unsigned int MATERIAL_PARAMS = 16u;

// One per material; mesh records point at theirs. Textures multiply the factor of the same name. What is common to
// every material is named here; a BSDF family's own parameters are `params`, packed by its Python descriptor
// (optixasync/scene/bsdfs/) and read by its header (pathtracer/bsdf_<name>.h), which documents their order.
struct MaterialRecord {
    unsigned int type;             // the BSDF family: its index in the registry (optixasync.scene.bsdf_families())
    float opacity;                 // alpha mask and blend
    float alpha_cutoff;
    float normal_scale;
    float3 color;                  // reflectance: albedo, specular reflectance or base colour
    float3 emission;               // radiance leaving the front side
    const float* table;            // a family's precomputed table (the plastic's transmittance), or null
    TextureSlot color_texture;     // rgb: colour, a: opacity
    TextureSlot roughness_texture; // glTF metallic-roughness: g roughness, b metallic
    TextureSlot emission_texture;
    TextureSlot normal_texture;    // tangent space, [0, 1] encoding of [-1, 1]
    float params[MATERIAL_PARAMS]; // the family's own parameters
};

struct MeshRecord {
    const float* vertices;         // (V, 3) float32
    const unsigned int* indices;   // (F, 3), front side given by the winding
    const float* normals;          // (V, 3) shading normals, or null (flat: the winding normal)
    const float* uvs;              // (V, 2) texture coordinates, or null
    const float* tangents;         // (V, 4) tangent xyz and handedness w, or null
    const float* colors;           // (V, 4) linear RGBA multiplying the base colour and opacity, or null
    const MaterialRecord* material;
    unsigned int emitter_offset;   // entry of triangle 0 of this mesh in the emitter table (emissive meshes)
    unsigned int flags;            // MeshFlags
    float to_world[12];            // MESH_INSTANCED: object-to-world affine, 3 rows of 4, row-major
    float normal_to_world[9];      // MESH_INSTANCED: the inverse transpose of its 3x3 part, for normals
};

// One emissive triangle in world space. 64 bytes and 16-aligned, so that light sampling fetches it with four
// float4 loads.
struct __align__(16) EmitterTriangle {
    float3 p0;
    float pdf;               // selection probability / area: the light's pdf per unit area on this triangle
    float3 e1;               // p1 - p0
    float alias_q;           // alias table: keep this entry when the fraction is below alias_q ...
    float3 e2;               // p2 - p0
    unsigned int alias;      // ... else take entry `alias`
    float3 radiance;
    float area;
};

// The outputs a raygen variant writes (a bit mask; optixasync/render/_outputs.py names them). The accumulation
// (PathTracerParams::accum) is always written.
enum OutputBits : unsigned int {
    OUTPUT_IMAGE = 1u << 0,     // image: sRGB of the running mean (uchar4)
    OUTPUT_RADIANCE = 1u << 1,  // radiance: the running mean (float4, w = 1)
    OUTPUT_ALBEDO = 1u << 2,    // albedo: mean first-hit albedo (float4, w = 1)
    OUTPUT_NORMAL = 1u << 3,    // normal: mean first-hit normal facing the camera (float4, w = 0)
};

// The outputs beyond these, the variants' other bits, and the records of a batch of views.
#include "pathtracer/view_records.h"

// One light source: an instance of a light type (pathtracer/light_<name>.h, optixasync/render/lights/). Next-event
// estimation picks one by the selection CDF over the sources, then samples a point of it through its type.
struct LightRecord {
    unsigned int type;             // the light type: its index in the registry (optixasync.render.light_types())
    float cdf;                     // selection CDF up to and including this source (the last one's is 1)
    float probability;             // its selection probability (by power)
    unsigned int count;            // entries of its data (emissive triangles), or 1
    const void* data;              // the type's own record(s)
};

// The scene as the integrator sees it: addresses of the scene tables, filled by the host in one assignment.
struct SceneRecord {
    const MeshRecord* meshes;        // indexed by build input (= SBT GAS index), or by instance id when instanced
    const LightRecord* lights;       // num_lights light sources, in the order of their selection CDF
    const EmitterTriangle* emitters; // the emissive triangles' table (its pdfs include its selection probability),
                                     // for the MIS weight of emission that BSDF-sampled rays find
    const EnvironmentRecord* environment;  // light from infinitely far away, or null (black)
    oa_traversable handle;
    unsigned int num_lights;
    float environment_probability;   // the environment's selection probability (0 without one)
    unsigned int instanced;          // 1: handle is an IAS whose instance ids are mesh indices; 0: one GAS
    unsigned int num_shapes;         // entries of shapes
    const ShapeRecord* shapes;       // spheres and curves (shapes.h), or null; with any, the handle is an IAS
    const MeshMotion* motions;       // per mesh, its motion keys (motion.h), or null: nothing moves
    float shutter_open;              // the times the camera's exposure spans (motion blur)
    float shutter_close;
};

struct PathTracerParams {
    float4* accum;                   // width * height running sums: rgb, w = samples dropped as NaN/Inf
    uchar4* image;                   // sRGB of the running mean, or null (no tonemap)
    float3 eye;                      // the pinhole; an orthographic camera's eye on its near plane
    float3 cam_u;                    // right, scaled by tan(half fov) across (orthographic: by the half width)
    float3 cam_v;                    // up, scaled by tan(half fov) up (orthographic: by the half height)
    float3 cam_w;                    // unit viewing direction
    unsigned int width;
    unsigned int height;
    unsigned int sample_offset;      // samples already in accum: absolute index of this launch's first sample
    unsigned int spp;                // samples per pixel in this launch
    unsigned int accumulate;         // 1: add to accum, 0: overwrite it
    unsigned int seed;
    unsigned int max_depth;
    unsigned int rr_depth;
    float inv_total;                 // 1 / (sample_offset + spp), for the tonemapped mean
    unsigned int orthographic;       // 1: parallel camera rays along cam_w (pathtracer/camera.h), 0: a pinhole
    float ray_length;                // how far camera rays run: the far plane's distance, or 1e16 (none)
    // Outputs beside the image (each null unless the launch's variant writes it): running sums of the first hit's
    // albedo and normal, accumulated like `accum` (2 float4 per pixel: albedo rgb, normal xyz), and the means of
    // the colour, albedo and normal written after each launch.
    float4* aov_sums;
    float4* radiance;                // mean radiance, rgb (w = 1)
    float4* albedo;                  // mean first-hit albedo, rgb in [0, 1] (w = 1)
    float4* normal;                  // mean first-hit normal, facing the camera, xyz in [-1, 1] (w = 0)
    SceneRecord scene;
    // Read only by the raygens of a batch of views (VARIANT_VIEWS): the views, and the outputs beyond the four above.
    ViewBatch batch;
    OutputRecord out;
};
