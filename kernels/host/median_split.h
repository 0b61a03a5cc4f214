// The host stand-in's hierarchies (the triangles' in triangle_bvh.h, each shape's in shape_intersect.h) are built
// the same way: node `n` over order[first, first + count) is a leaf of at most 4 primitives, else it is split at
// the median of the primitives' box centres along its box's longest axis (ties by primitive index, so that the
// tree does not depend on the sort's implementation).
#pragma once

#include <algorithm>
#include <vector>

namespace host_split {

struct Box {
    double low[3], high[3];
};

inline Box empty_box() { return Box{{1e300, 1e300, 1e300}, {-1e300, -1e300, -1e300}}; }

// `Tree` has `nodes` (each with box, child, first, count and axis) and `order` (primitive slots in leaf order).
template <class Tree>
inline void build_node(Tree& tree, const std::vector<Box>& boxes, unsigned n, unsigned first, unsigned count) {
    Box box = empty_box();
    for (unsigned k = first; k < first + count; ++k) {
        const Box& b = boxes[tree.order[k]];
        for (int a = 0; a < 3; ++a) box.low[a] = std::min(box.low[a], b.low[a]), box.high[a] = std::max(box.high[a], b.high[a]);
    }
    tree.nodes[n].box = box;
    if (count <= 4u) {
        tree.nodes[n].first = first, tree.nodes[n].count = count;
        return;
    }
    int axis = 0;
    for (int a = 1; a < 3; ++a) {
        if (box.high[a] - box.low[a] > box.high[axis] - box.low[axis]) axis = a;
    }
    auto centre = [&](unsigned i) { return boxes[i].low[axis] + boxes[i].high[axis]; };
    const unsigned half = count / 2u;
    std::nth_element(tree.order.begin() + first, tree.order.begin() + first + half, tree.order.begin() + first + count,
                     [&](unsigned a, unsigned b) { return centre(a) < centre(b) || (centre(a) == centre(b) && a < b); });
    const unsigned child = static_cast<unsigned>(tree.nodes.size());
    tree.nodes.resize(tree.nodes.size() + 2u);
    tree.nodes[n].child = child;
    tree.nodes[n].axis = axis;
    build_node(tree, boxes, child, first, half);
    build_node(tree, boxes, child + 1u, first + half, count - half);
}

}  // namespace host_split
