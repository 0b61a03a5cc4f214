// Records of the primitives beside triangle meshes: spheres, round curves and custom primitives (one ShapeRecord
// per shape of the scene: a Spheres, Curves or CustomPrimitives object), shared with the host.
//
// optixasync/render/_primitives.py mirrors these structs field for field, and its layout test compiles them with
// NVRTC to check every offset. The scene record points at the table (SceneRecord::shapes); a hit on a shape sets
// SHAPE_HIT in the mesh register of the radiance payload and the rest of it to the shape's index in that table.
#pragma once

#include "optixasync_device.h"

struct MaterialRecord;

// The kind of a shape: its primitive, and for curves the basis its segments use (optixasync_math.h).
enum ShapeKind : unsigned int {
    SHAPE_SPHERES = 0u,
    SHAPE_LINEAR = 1u,             // round linear segments: cones with round caps, 2 control points each
    SHAPE_QUADRATIC_BSPLINE = 2u,  // uniform quadratic B-spline, 3 control points
    SHAPE_CUBIC_BSPLINE = 3u,      // uniform cubic B-spline, 4 control points
    SHAPE_CATMULL_ROM = 4u,        // uniform Catmull-Rom, 4 control points (runs from the second to the third)
    SHAPE_BEZIER = 5u,             // cubic Bezier, 4 control points
    SHAPE_CUSTOM = 6u,             // custom primitives: `stride` floats each, of custom type `custom_type`
};

enum ShapeFlags : unsigned int {
    SHAPE_ONE_RADIUS = 1u << 0,  // radii holds one radius for every sphere
};

// One material of a shape: its record, and the MeshFlags its surfaces take (MESH_TWO_SIDED, MESH_EMISSIVE).
struct ShapeMaterial {
    const MaterialRecord* material;
    unsigned int flags;
    unsigned int pad;
};

struct ShapeRecord {
    const float* points;                // (N, 3) float32: sphere centres, curve control points; custom: (N, stride)
    const float* radii;                 // (N,) float32 radius per point (one with SHAPE_ONE_RADIUS)
    const unsigned int* indices;        // curves: (S,) the first control point of each segment; spheres: null
    const float* colors;                // (N, 3) linear RGB per point multiplying the reflectance, or null
    const unsigned int* material_ids;   // (primitives,) index into materials, or null (material 0)
    const ShapeMaterial* materials;     // num_materials entries
    unsigned int kind;                  // ShapeKind
    unsigned int count;                 // primitives: spheres or curve segments
    unsigned int flags;                 // ShapeFlags
    unsigned int num_materials;
    const float* boxes;                 // custom: (N, 6) float32 bounds, min xyz then max xyz; else null
    unsigned int custom_type;           // custom: the type's index (its registration order, custom_dispatch.h)
    unsigned int stride;                // custom: floats per primitive
};

// Set in the mesh register of the radiance payload (integrator.h) by the closest-hit programs of shapes: the hit
// is on shape (register & ~SHAPE_HIT). NO_HIT has it set too, and is tested first.
constexpr unsigned int SHAPE_HIT = 0x80000000u;
