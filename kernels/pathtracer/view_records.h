// Records of a batch of views and of the outputs beside the colour: shared with the host.
//
// optixasync/render/_layout.py mirrors these structs field for field (VIEW_RECORD, VIEW_BATCH, OUTPUT_RECORD), and
// the layout test compiles them with NVRTC to check every offset. Included by records.h, before the launch
// parameters that hold a ViewBatch and an OutputRecord; at global scope like the other records.
#pragma once

// The outputs beyond the first four (records.h's OutputBits), one bit each in a raygen variant's mask; the names
// and meanings are optixasync/render/_outputs.py's OUTPUTS. The "G-buffer sample" is the camera ray of each pixel's
// first sample of the launch: its hit (or miss) gives depth, distance, position, the geometric normal, the ids,
// the UV and the motion.
enum OutputBitsMore : unsigned int {
    OUTPUT_DEPTH = 1u << 4,             // float: camera-space z of the G-buffer sample's hit (0: a miss)
    OUTPUT_DISTANCE = 1u << 5,          // float: distance along its ray (0: a miss)
    OUTPUT_POSITION = 1u << 6,          // float3: its world position (world-local in a world of a batch)
    OUTPUT_GEOMETRIC_NORMAL = 1u << 7,  // float3: its unit winding normal, world space, not flipped
    OUTPUT_MESH_ID = 1u << 8,           // uint: index of the mesh hit in the scene's meshes (~0u: a miss)
    OUTPUT_PRIMITIVE_ID = 1u << 9,      // uint: the triangle's index in its mesh (~0u: a miss)
    OUTPUT_MATERIAL_ID = 1u << 10,      // uint: the material's index in the scene's distinct materials (~0u)
    OUTPUT_UV = 1u << 11,               // float2: texture coordinates (0: a miss or none)
    OUTPUT_MOTION = 1u << 12,           // float2: film position now minus where the point was in the previous view
    OUTPUT_COVERAGE = 1u << 13,         // float: fraction of the samples whose camera ray hit a surface
    OUTPUT_SPP = 1u << 14,              // uint: samples in the pixel's mean (NaN/Inf samples dropped)
    OUTPUT_RAYS = 1u << 15,             // 3 x u64 per view: camera, bounce and shadow rays traced (added up)
};

// How a raygen variant runs, beside what it writes (the bits above the outputs').
enum VariantBits : unsigned int {
    VARIANT_VIEWS = 1u << 16,    // a batch of views (ViewBatch): launch depth = views * lanes
    VARIANT_WORLDS = 1u << 17,   // each view traces its own world's cell of one instance structure
    VARIANT_PRIMARY = 1u << 18,  // camera rays only, no shading (the G-buffer integrator)
};

// The outputs taken from the G-buffer sample.
constexpr unsigned int OUTPUTS_OF_THE_G_SAMPLE = OUTPUT_DEPTH | OUTPUT_DISTANCE | OUTPUT_POSITION |
                                                 OUTPUT_GEOMETRIC_NORMAL | OUTPUT_MESH_ID | OUTPUT_PRIMITIVE_ID |
                                                 OUTPUT_MATERIAL_ID | OUTPUT_UV | OUTPUT_MOTION;

enum ViewKind : unsigned int {
    VIEW_CAMERA = 0u,        // the pipeline's Camera: to_world's columns are U, V, W and the eye (camera.h's rays)
    VIEW_PINHOLE = 1u,       // intrinsics fx, fy, cx, cy in pixels and a camera-to-world pose
    VIEW_ORTHOGRAPHIC = 2u,  // fx, fy in pixels per world unit, cx, cy in pixels, and a pose
};

enum PoseConvention : unsigned int {
    POSE_OPENCV = 0u,  // camera x right, y down, looking along +z
    POSE_OPENGL = 1u,  // camera x right, y up, looking along -z
};

// One view of a batch. Image coordinates run over [0, width] x [0, height], x right and y down, so that the centre
// of pixel (i, j) is (i + 0.5, j + 0.5).
struct ViewRecord {
    unsigned int kind;        // ViewKind
    unsigned int convention;  // PoseConvention of to_world (pinhole and orthographic)
    unsigned int world;       // the world it traces (0 without worlds)
    unsigned int seed;        // seed of its random numbers
    float fx, fy, cx, cy;     // intrinsics (see ViewKind)
    float to_world[12];       // camera-to-world, 3 rows of 4, row-major (overridden by ViewBatch::poses)
    float ray_length;         // how far its camera rays run: an orthographic camera's far plane, else 1e16
};

// The views of a launch and what they need beside their records.
struct ViewBatch {
    const ViewRecord* views;          // num_views records
    const float* poses;               // num_views poses of pose_stride floats (3x4 or 4x4 row-major), or null
    const ViewRecord* prev_views;     // the previous launch's views, for motion (null: these)
    const float* prev_poses;          // their poses (null: prev_views' to_world)
    const MeshRecord* prev_meshes;    // the previous launch's mesh records, for motion (null: the scene's)
    const float4* world_offsets;      // per world, where its cell sits in the instance structure (xyz)
    const unsigned int* mesh_materials;  // per scene mesh, its material's index (the material ids)
    float3 cell_lo;                   // a world's cell relative to its offset: rays never leave it
    float3 cell_hi;
    unsigned int num_views;
    unsigned int lanes;               // threads per pixel and view, splitting its samples (sums added after)
    unsigned int pose_stride;         // 12 or 16
    unsigned int meshes_per_world;    // scene meshes: record (and instance id) = world * meshes_per_world + mesh
    unsigned int jitter;              // 1: samples at uniform points of the pixel, 0: at its centre
};

// Where the outputs beyond the first four go (null: not written). Per view, (height, width, channels) arrays in a
// (views, height, width, channels) block; rays holds 3 counters per view.
struct OutputRecord {
    float* depth;
    float* distance;
    float* position;            // 3 floats a pixel
    float* geometric_normal;    // 3 floats a pixel
    unsigned int* mesh_id;
    unsigned int* primitive_id;
    unsigned int* material_id;
    float* uv;                  // 2 floats a pixel
    float* motion;              // 2 floats a pixel
    float* coverage;
    unsigned int* spp;
    unsigned long long* rays;   // 3 per view
};
