// What the program was compiled for: the scene features whose code it keeps.
//
// optixasync/render/_features.py writes `#define OA_HAS_<FEATURE> 0` in front of the kernel for each feature the
// scene has none of (a program specialized per scene); a generic program defines none and keeps them all. The
// headers test the constexpr switches below before the run-time test they guard (a null attribute pointer, an
// empty texture slot, a mesh flag), so a feature compiled out takes the branch the run-time test would have taken
// for every record of that scene: the same expressions, the same bits.
#pragma once

#ifndef OA_HAS_TEXTURES
#define OA_HAS_TEXTURES 1     // material textures (colour, normal, emission, roughness maps)
#endif
#ifndef OA_HAS_ENVIRONMENT
#define OA_HAS_ENVIRONMENT 1  // light from the environment on a miss
#endif
#ifndef OA_HAS_ANYHIT
#define OA_HAS_ANYHIT 1       // cut-out and culled surfaces (their any-hit program); else rays disable any-hit
#endif
#ifndef OA_HAS_NORMALS
#define OA_HAS_NORMALS 1      // per-vertex shading normals
#endif
#ifndef OA_HAS_UVS
#define OA_HAS_UVS 1          // per-vertex texture coordinates
#endif
#ifndef OA_HAS_COLORS
#define OA_HAS_COLORS 1       // per-vertex colours
#endif
#ifndef OA_HAS_TANGENTS
#define OA_HAS_TANGENTS 1     // per-vertex tangents
#endif
#ifndef OA_HAS_INSTANCES
#define OA_HAS_INSTANCES 1    // meshes placed by an instance transform (instances, moving meshes, worlds)
#endif

namespace pt {

constexpr bool kTextures = OA_HAS_TEXTURES != 0;
constexpr bool kEnvironment = OA_HAS_ENVIRONMENT != 0;
constexpr bool kAnyHit = OA_HAS_ANYHIT != 0;
constexpr bool kNormals = OA_HAS_NORMALS != 0;
constexpr bool kUvs = OA_HAS_UVS != 0;
constexpr bool kColors = OA_HAS_COLORS != 0;
constexpr bool kTangents = OA_HAS_TANGENTS != 0;
constexpr bool kInstances = OA_HAS_INSTANCES != 0;

}  // namespace pt
