// The OptiX stand-in's intersection of spheres and round curves (pathtracer_host.cpp includes it after the kernel,
// whose shape records and curve bases it reads): what OptiX's built-in intersection modules report, computed on
// the CPU in double precision.
//
// * Spheres: the ray's first root at or after tmin (the far one from inside, as OptiX reports back faces too).
// * Custom primitives: the kernel's own intersection program (__intersection__custom) run on each candidate, with
//   the ray as its object ray, reporting through the stand-in's report_intersection.
// * Round curves: the surface swept by a sphere whose centre and radius follow the segment's basis. A linear
//   segment is intersected exactly: the spheres at its ends and the cone tangent to both (the envelope of the
//   swept spheres: |p - c(u)| = r(u) where d/du of it vanishes, which makes u linear in t and leaves a quadratic
//   in t). Other kinds are cut into CURVE_PIECES linear pieces at points of the kernel's own basis, each
//   intersected so, and the hit's parameter mapped back to the segment. The stand-in thus puts round caps on
//   every segment's ends, where OptiX leaves the two ends of a quadratic or cubic strand open: a difference at
//   strand tips only.
// Each shape's primitives are found through a bounding volume hierarchy over their boxes (spheres: centre and
// radius; curve segments: their control points grown by the largest radius), built once per launch.
#pragma once

#include <algorithm>
#include <vector>

#include "median_split.h"

#ifdef OA_SHAPES

namespace {

constexpr unsigned CURVE_PIECES = 16u;

using Box = host_split::Box;
using host_split::empty_box;

void grow(Box& box, const float* p, double r) {
    for (int k = 0; k < 3; ++k) {
        box.low[k] = std::min(box.low[k], static_cast<double>(p[k]) - r);
        box.high[k] = std::max(box.high[k], static_cast<double>(p[k]) + r);
    }
}


double shape_radius(const ShapeRecord& shape, unsigned i) {
    return shape.radii[(shape.flags & SHAPE_ONE_RADIUS) ? 0u : i];
}

// Whether the ray o + t d meets the box for some t in [tmin, tmax].
bool meets(const Box& box, const double o[3], const double d[3], double tmin, double tmax) {
    for (int k = 0; k < 3; ++k) {
        const double inv = 1.0 / d[k];
        double t0 = (box.low[k] - o[k]) * inv, t1 = (box.high[k] - o[k]) * inv;
        if (t0 > t1) std::swap(t0, t1);
        if (!(t0 <= t1)) {  // NaN: the ray is parallel to the slab (0 * inf)
            if (o[k] < box.low[k] || o[k] > box.high[k]) return false;
            continue;
        }
        tmin = std::max(tmin, t0);
        tmax = std::min(tmax, t1);
        if (tmin > tmax) return false;
    }
    return true;
}

// The first root t in [tmin, best] of |o + t d - c|^2 = r^2, if any.
bool sphere_root(const double o[3], const double d[3], const double c[3], double r, double tmin, double best,
                 double& t) {
    const double ox = o[0] - c[0], oy = o[1] - c[1], oz = o[2] - c[2];
    const double a = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    const double b = ox * d[0] + oy * d[1] + oz * d[2];
    const double cc = ox * ox + oy * oy + oz * oz - r * r;
    const double disc = b * b - a * cc;
    if (!(r > 0.0) || disc < 0.0) return false;
    const double q = std::sqrt(disc);
    for (const double root : {(-b - q) / a, (-b + q) / a}) {
        if (root >= tmin && root <= best) {
            t = root;
            return true;
        }
    }
    return false;
}

// The first hit in [tmin, best] of the surface swept by the sphere from (a, ra) to (b, rb), with its parameter u.
bool round_cone(const double o[3], const double d[3], float4 a4, float4 b4, double tmin, double best, double& t,
                double& u) {
    const double a[3] = {a4.x, a4.y, a4.z}, b[3] = {b4.x, b4.y, b4.z}, ra = a4.w, rb = b4.w;
    bool found = false;
    double root;
    if (sphere_root(o, d, a, ra, tmin, best, root)) best = t = root, u = 0.0, found = true;
    if (sphere_root(o, d, b, rb, tmin, best, root)) best = t = root, u = 1.0, found = true;
    const double e[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, dr = rb - ra;
    const double ee = e[0] * e[0] + e[1] * e[1] + e[2] * e[2], k = ee - dr * dr;
    if (!(k > 1e-12 * ee)) return found;  // one end's sphere holds the other: no cone between them
    const double w0[3] = {o[0] - a[0], o[1] - a[1], o[2] - a[2]};
    const double de = d[0] * e[0] + d[1] * e[1] + d[2] * e[2];
    const double m0 = w0[0] * e[0] + w0[1] * e[1] + w0[2] * e[2] + ra * dr;
    const double dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    const double wd = w0[0] * d[0] + w0[1] * d[1] + w0[2] * d[2];
    const double ww = w0[0] * w0[0] + w0[1] * w0[1] + w0[2] * w0[2];
    const double qa = k * dd - de * de, qb = k * wd - m0 * de, qc = k * (ww - ra * ra) - m0 * m0;
    const double disc = qb * qb - qa * qc;
    if (qa == 0.0 || disc < 0.0) return found;
    const double q = std::sqrt(disc);
    double roots[2] = {(-qb - q) / qa, (-qb + q) / qa};
    if (roots[0] > roots[1]) std::swap(roots[0], roots[1]);
    for (const double r : roots) {
        const double uu = (m0 + r * de) / k;
        if (r >= tmin && r <= best && uu >= 0.0 && uu <= 1.0) {
            t = r, u = uu;
            return true;
        }
    }
    return found;
}

bool intersect_curve_segment(const ShapeRecord& shape, unsigned prim, const double o[3], const double d[3],
                             double tmin, double best, double& t, double& u) {
    float4 cp[4];
    pt::load_curve_segment(shape, prim, cp);
    const unsigned pieces = shape.kind == SHAPE_LINEAR ? 1u : CURVE_PIECES;
    bool found = false;
    float4 a = pt::curve_point(shape.kind, cp, 0.0f);
    for (unsigned j = 0; j < pieces; ++j) {
        const float4 b = pt::curve_point(shape.kind, cp, static_cast<float>(j + 1u) / pieces);
        double tt, uu;
        if (round_cone(o, d, a, b, tmin, best, tt, uu)) {
            best = t = tt;
            u = (j + uu) / pieces;
            found = true;
        }
        a = b;
    }
    return found;
}

// A bounding volume hierarchy over one shape's primitives (built once per launch): nodes hold their box and either
// two children (at `child` and `child + 1`) or `count` primitives from `first` in `order`.
struct Node {
    Box box;
    unsigned child = 0u, first = 0u, count = 0u;
    int axis = 0;
};
struct Hierarchy {
    std::vector<Node> nodes;
    std::vector<unsigned> order;
};
std::vector<Hierarchy> g_shape_trees;

Box primitive_box(const ShapeRecord& shape, unsigned i) {
    Box box = empty_box();
    if (shape.kind == SHAPE_CUSTOM) {
        for (int k = 0; k < 3; ++k) box.low[k] = shape.boxes[6u * i + k], box.high[k] = shape.boxes[6u * i + 3u + k];
        return box;
    }
    if (shape.kind == SHAPE_SPHERES) {
        grow(box, shape.points + 3u * i, shape_radius(shape, i));
        return box;
    }
    float4 cp[4];
    pt::load_curve_segment(shape, i, cp);
    for (const float4& c : cp) {
        const float p[3] = {c.x, c.y, c.z};
        grow(box, p, c.w);
    }
    if (shape.kind == SHAPE_CATMULL_ROM) {  // its curve leaves the control points' hull: grow the box
        const double margin = 0.25 * std::max({box.high[0] - box.low[0], box.high[1] - box.low[1],
                                               box.high[2] - box.low[2]});
        for (int k = 0; k < 3; ++k) box.low[k] -= margin, box.high[k] += margin;
    }
    return box;
}

using host_split::build_node;  // median_split.h

// Runs the kernel's intersection program on custom primitive `i` of shape `s`, as OptiX would on a candidate.
bool custom_candidate(unsigned s, unsigned i, double tmin, double best, double& t) {
#ifdef OA_CUSTOM
    oa::ThreadState saved = oa::state;
    oa::state.gas_index = s;  // instance_id() + sbt_gas_index(): the shape's index (see oa::instance_id)
    oa::state.prim = i;
    oa::state.tmin = static_cast<float>(tmin);
    oa::state.tmax = static_cast<float>(best);
    oa::state.reported = -1.0f;
    __intersection__custom();
    const float reported = oa::state.reported;
    oa::state = saved;
    if (!(reported >= 0.0f)) return false;
    t = reported;
    return true;
#else
    (void)s, (void)i, (void)tmin, (void)best, (void)t;
    return false;
#endif
}

bool intersect_primitive(const ShapeRecord& shape, unsigned s, unsigned i, const double o[3], const double d[3],
                         double tmin, double best, double& t, double& u) {
    if (shape.kind == SHAPE_CUSTOM) return custom_candidate(s, i, tmin, best, t);
    if (shape.kind == SHAPE_SPHERES) {
        const double c[3] = {shape.points[3u * i], shape.points[3u * i + 1u], shape.points[3u * i + 2u]};
        return sphere_root(o, d, c, shape_radius(shape, i), tmin, best, t);
    }
    return intersect_curve_segment(shape, i, o, d, tmin, best, t, u);
}

}  // namespace

// Every shape's hierarchy, once per launch.
inline void prepare_shapes() {
    g_shape_trees.assign(params.scene.num_shapes, Hierarchy{});
    for (unsigned s = 0; s < params.scene.num_shapes; ++s) {
        const ShapeRecord& shape = params.scene.shapes[s];
        Hierarchy& tree = g_shape_trees[s];
        std::vector<Box> boxes(shape.count);
        tree.order.resize(shape.count);
        for (unsigned i = 0; i < shape.count; ++i) boxes[i] = primitive_box(shape, i), tree.order[i] = i;
        tree.nodes.reserve(2u * shape.count + 1u);
        tree.nodes.resize(1u);
        if (shape.count) build_node(tree, boxes, 0u, 0u, shape.count);
    }
}

// The closest hit (any hit with `any`) on the shapes in [tmin, best]; lowers best and fills hit when found.
inline bool intersect_shapes(float3 of, float3 df, float tmin, bool any, double& best, oa::HostHit& hit) {
    const double o[3] = {of.x, of.y, of.z}, d[3] = {df.x, df.y, df.z};
    bool found = false;
    for (unsigned s = 0; s < params.scene.num_shapes; ++s) {
        const ShapeRecord& shape = params.scene.shapes[s];
        const Hierarchy& tree = g_shape_trees[s];
        if (!shape.count) continue;
        unsigned stack[64], depth = 0u;
        stack[depth++] = 0u;
        while (depth) {
            const Node& node = tree.nodes[stack[--depth]];
            if (!meets(node.box, o, d, tmin, best)) continue;
            if (!node.count) {
                stack[depth++] = node.child;
                stack[depth++] = node.child + 1u;
                continue;
            }
            for (unsigned k = node.first; k < node.first + node.count; ++k) {
                const unsigned i = tree.order[k];
                double t, u = 0.0;
                if (!intersect_primitive(shape, s, i, o, d, tmin, best, t, u)) continue;
                best = t;
                hit.kind = shape.kind == SHAPE_SPHERES ? oa::HIT_SPHERE
                           : shape.kind == SHAPE_CUSTOM ? oa::HIT_CUSTOM : oa::HIT_CURVE;
                hit.prim = i;
                hit.index = s;
                hit.u = static_cast<float>(u);
                found = true;
                if (any) return true;
            }
        }
    }
    return found;
}

#else

inline void prepare_shapes() {}
inline bool intersect_shapes(float3, float3, float, bool, double&, oa::HostHit&) { return false; }

#endif
