"""The scope tree of a graph, and the *visible graph* for a set of expanded scopes.

Scopes come from exporter names ("/model/layers.0/self_attn/q_proj/MatMul" lives in
"/model/layers.0/self_attn/q_proj"). Scopes that hold a single thing add nothing to look at, so they are
folded into their parent; a scope with more than `group_limit` children gets artificial groups of
consecutive children (as Model Explorer does), so no level ever shows thousands of boxes at once.

Visible items share one id space: op i is item i, scope s is item N + s (N = number of ops).

Graph inputs and outputs (`io_nodes=True`, what the viewer asks for) are pseudo-scopes of kind IO appended after
every real scope: children of the root that are never expanded, so they are drawn and laid out as collapsed
boxes are, without renumbering any op or real scope, and without counting as ops. An .mnn file's own `Input`
ops are replaced by them (`io_op`: not drawn; they still count as the ops they are). A control-flow body's values
read from its outer scope (by name, declared nowhere in the body) are drawn as inputs too (`io_outer`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from mnnscope.inspector.model.table import GraphTable

GROUP_LIMIT = 1000
# .mnn files store weights as Const ops; drawn, they would outnumber the real operators. They are left
# out of the view and shown as weights of the ops that read them (ONNX initializers are not nodes either).
CONSTANT_OPS = {"Const", "TrainableParam"}
ROOT = 0
SCOPE, GROUP, IO = 0, 1, 2


_MNN_PREFIX = re.compile(r"^/[^/]*___tr\d+(?=/|$)")


def _common(a: str, b: str) -> str:
    pa, pb = a.split("/"), b.split("/")
    k = 0
    while k < min(len(pa), len(pb)) and pa[k] == pb[k]:
        k += 1
    return "/".join(pa[:k])


def _infer_scopes(table: GraphTable, hidden: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Scopes for ops whose names have none (MNN's "BinaryOp17"): the common scope of their consumers,
    so they sit beside their neighbours instead of at the top level."""
    scopes = list(table.scopes)
    if table.format == "mnn":  # "Reshape17___tr4/model/..." : a layout op MNN inserted, named after its input
        scopes = [_MNN_PREFIX.sub("", s) if "___tr" in s else s for s in scopes]
    n = table.node_count
    inferred = np.zeros(n, bool)
    if not any(scopes):
        return scopes, inferred
    bare = [i for i in np.argsort(table.rank)[::-1].tolist()
            if not scopes[i] and not hidden[i] and table.op_types[i] != "Input"]
    for i in bare:  # consumers first: reverse topological order lets chains of bare ops inherit
        found = [scopes[j] for j in table.consumers_of(i) if scopes[j] and not hidden[j]]
        if found:
            common = found[0]
            for s in found[1:]:
                common = _common(common, s)
            if common.strip("/"):
                scopes[i] = common
                inferred[i] = True
    return scopes, inferred


class ScopeTree:
    """Scopes of one GraphTable: index 0 is the root; parents always precede their children."""

    def __init__(self, table: GraphTable, group_limit: int = GROUP_LIMIT, hide_constants: bool = True,
                 io_nodes: bool = False):
        self.table = table
        n = table.node_count
        self.n_ops = n
        self.hidden = np.zeros(n, bool)
        self.io_op = np.zeros(n, bool)  # ops an I/O node stands in for (an .mnn's Input ops): not drawn
        self.io_rep = np.full(n, -1, np.int64)  # for those ops, the I/O node's scope id
        if hide_constants and table.format == "mnn":
            no_inputs = np.diff(table.in_ptr) == 0
            consts = np.fromiter((o in CONSTANT_OPS for o in table.op_types), bool, n)
            self.hidden = no_inputs & consts
        scopes, self.inferred = _infer_scopes(table, self.hidden)
        uniq: dict[str, int] = {}
        node_scope = np.fromiter((uniq.setdefault(s, len(uniq)) for s in scopes), np.int64, n)
        # raw tree: every prefix of every scope path
        path, parent = [""], [-1]
        index = {"": 0}
        for s in uniq:
            parts = [p for p in s.split("/") if p]
            prev = 0
            for k in range(1, len(parts) + 1):
                p = "/" + "/".join(parts[:k])
                j = index.get(p)
                if j is None:
                    j = index[p] = len(path)
                    path.append(p)
                    parent.append(prev)
                prev = j
        raw_of_uniq = np.asarray([index[s] for s in uniq] or [0], np.int64)
        node_parent = raw_of_uniq[node_scope] if n else np.zeros(0, np.int64)
        label = [p.rsplit("/", 1)[-1] for p in path]
        self._build(path, parent, label, node_parent, table.rank, group_limit)
        self.n_real_scopes = self.n_scopes
        self.io_tensor = np.zeros(0, np.int64)   # per I/O node (scope n_real_scopes + k): its tensor
        self.io_input = np.zeros(0, bool)        # per I/O node: a graph input (else an output)
        self.io_outer = np.zeros(0, bool)        # per I/O node: an input from the enclosing graph (a body's)
        if io_nodes:
            self._add_io()

    def _add_io(self) -> None:
        """Append a pseudo-scope per graph input and output (see the module docstring)."""
        t = self.table
        ins = [ti for ti in (t.tensor_index(x) for x in t.inputs) if ti is not None and not t.is_init[ti]]
        # what is read here but neither made here, a weight, nor declared an input: in a control-flow body, the
        # enclosing graph's values (an If branch reads them by name; its Mul was drawn with no edge into it)
        outer = t.outer_inputs()  # (declared inputs and weights are left out there)
        n_declared, ins = len(ins), ins + outer
        outs = [ti for ti in (t.tensor_index(x) for x in t.outputs) if ti is not None]
        if not ins and not outs:
            return
        S, k = self.n_scopes, len(ins) + len(outs)
        for j, ti in enumerate(ins):  # an .mnn Input op that makes only graph inputs is shown by their nodes
            p = int(t.producer[ti])
            if p >= 0 and t.op_types[p] == "Input" and all(o in ins for o in t.node_outputs(p)):
                self.io_op[p] = True
                if self.io_rep[p] < 0:
                    self.io_rep[p] = S + j
        last = int(t.rank.max()) + 1 if self.n_ops else 0
        self.io_tensor = np.asarray(ins + outs, np.int64)
        self.io_input = np.r_[np.ones(len(ins), bool), np.zeros(len(outs), bool)]
        self.io_outer = np.r_[np.zeros(n_declared, bool), np.ones(len(outer), bool), np.zeros(len(outs), bool)]
        names = [t.tensor_names[ti] for ti in self.io_tensor.tolist()]
        self.path = self.path + [("input:" if i < len(ins) else "output:") + nm for i, nm in enumerate(names)]
        self.label = self.label + names
        self.parent = np.r_[self.parent, np.zeros(k, np.int64)]
        self.kind = np.r_[self.kind, np.full(k, IO, np.int8)]
        self.depth = np.r_[self.depth, np.ones(k, np.int64)]
        self.count = np.r_[self.count, np.zeros(k, np.int64)]
        # layout order: inputs before every op (in their declared order), outputs after
        self.first_rank = np.r_[self.first_rank, np.arange(-len(ins), 0, dtype=np.int64),
                                last + np.arange(len(outs), dtype=np.int64)]
        for j, p in enumerate(self.path[S:]):
            self.index[p] = S + j
        self.scope_children = self.scope_children + [[] for _ in range(k)]  # not in the root's: never expanded
        self.n_scopes = S + k
        self.max_depth = max(self.max_depth, 1)

    def is_io(self, s: int) -> bool:
        """Scope s is a graph input or output node."""
        return s >= self.n_real_scopes

    def io_index(self, s: int) -> int:
        return s - self.n_real_scopes

    # ----- construction -----------------------------------------------------------------------------
    def _build(self, path, parent, label, node_parent, rank, group_limit) -> None:
        S = len(path)
        parent = np.asarray(parent, np.int64)
        n_children = np.bincount(node_parent, weights=~self.hidden, minlength=S).astype(np.int64)
        if S > 1:
            n_children = n_children + np.bincount(parent[1:], minlength=S)
        # Fold scopes with a single child into their parent (parents come first, so chains fold fully);
        # a folded scope's name becomes a prefix of the scope below it ("q_proj" + "MatMul" stays findable).
        alive = n_children != 1
        alive[ROOT] = True
        owner = np.arange(S)  # the living scope that receives a scope's contents
        full = list(label)
        for s in range(1, S):
            p = parent[s]
            owner[s] = s if alive[s] else owner[p]
            if p != ROOT and not alive[p]:
                full[s] = full[p] + "/" + label[s]
            parent[s] = owner[p]
        keep = np.flatnonzero(alive)
        remap = np.full(S, -1, np.int64)
        remap[keep] = np.arange(len(keep))
        self.path = [path[s] for s in keep]
        self.label = [full[s] for s in keep]
        self.parent = np.where(keep > 0, remap[parent[keep]], -1)
        self.kind = np.zeros(len(keep), np.int8)
        self.node_parent = remap[owner[node_parent]]
        self._group(rank, group_limit)
        self._finish(rank)

    def _group(self, rank, limit: int) -> None:
        """Split scopes with more than `limit` children into groups of consecutive children."""
        S, n = len(self.path), self.n_ops
        first = np.full(S, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(first, self.node_parent, rank)
        for s in range(S - 1, 0, -1):  # children after parents: propagate minima upwards
            p = self.parent[s]
            if first[s] < first[p]:
                first[p] = first[s]
        child_count = np.bincount(self.node_parent, weights=~self.hidden, minlength=S).astype(np.int64) + \
            np.bincount(self.parent[1:], minlength=S)
        big = np.flatnonzero(child_count > limit)
        if len(big) == 0:
            return
        parent, path, label, kind = list(self.parent), self.path, self.label, list(self.kind)
        node_parent = self.node_parent.copy()
        scope_ids = np.arange(S)
        for s in big.tolist():
            ops = np.flatnonzero((self.node_parent == s) & ~self.hidden)
            subs = scope_ids[1:][self.parent[1:] == s]
            members = np.concatenate([ops, n + subs])
            key = np.concatenate([rank[ops], first[subs]])
            members = members[np.argsort(key, kind="stable")]
            k = -(-len(members) // limit)
            size = -(-len(members) // k)
            for g in range(k):
                chunk = members[g * size:(g + 1) * size]
                gid = len(path)
                names = [self._member_label(m, n, label) for m in (chunk[0], chunk[-1])]
                path.append(f"{self.path[s]}/\u2026{g}")
                label.append(f"{names[0]} \u2026 {names[-1]}")
                parent.append(s)
                kind.append(GROUP)
                node_parent[chunk[chunk < n]] = gid
                for c in (chunk[chunk >= n] - n).tolist():
                    parent[c] = gid
        # groups were appended after their own children: reorder so parents come first again
        parent = np.asarray(parent, np.int64)
        depth = np.zeros(len(parent), np.int64)
        order = self._parents_first(parent, depth)
        remap = np.empty(len(parent), np.int64)
        remap[order] = np.arange(len(order))
        self.path = [path[s] for s in order]
        self.label = [label[s] for s in order]
        self.kind = np.asarray(kind, np.int8)[order]
        self.parent = np.where(parent[order] >= 0, remap[np.maximum(parent[order], 0)], -1)
        self.node_parent = remap[node_parent]

    def _member_label(self, m: int, n: int, label) -> str:
        if m >= n:
            return label[m - n]
        t = self.table
        name = t.names[m] or t.ids[m]
        return name.rsplit("/", 1)[-1]

    @staticmethod
    def _parents_first(parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
        S = len(parent)
        children: list[list[int]] = [[] for _ in range(S)]
        for s in range(1, S):
            children[parent[s]].append(s)
        order, stack = [], [0]
        while stack:
            s = stack.pop()
            order.append(s)
            stack.extend(reversed(children[s]))
        return np.asarray(order, np.int64)

    def _finish(self, rank) -> None:
        S = len(self.path)
        self.depth = np.zeros(S, np.int64)
        for s in range(1, S):
            self.depth[s] = self.depth[self.parent[s]] + 1
        count = np.bincount(self.node_parent, weights=~self.hidden, minlength=S).astype(np.int64)
        first = np.full(S, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(first, self.node_parent, rank)
        for s in range(S - 1, 0, -1):
            p = self.parent[s]
            count[p] += count[s]
            first[p] = min(first[p], first[s])
        self.count = count  # ops inside, recursively
        self.first_rank = first
        self.index = {p: i for i, p in enumerate(self.path)}
        self.n_scopes = S
        kids: list[list[int]] = [[] for _ in range(S)]
        for s in range(1, S):
            kids[self.parent[s]].append(s)
        self.scope_children = kids
        self.max_depth = int(self.depth.max()) if S else 0

    # ----- queries -----------------------------------------------------------------------------------
    def item_of_scope(self, s: int) -> int:
        return self.n_ops + s

    def children(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        """(ops, scopes) directly inside scope s."""
        return np.flatnonzero(self.node_parent == s), np.flatnonzero(self.parent == s)

    def ops_under(self, s: int) -> np.ndarray:
        """The ops inside scope s, at any depth (hidden ones included), in index order."""
        inside = np.zeros(self.n_scopes, bool)
        inside[s] = True
        for c in range(s + 1, self.n_scopes):  # parents come first
            if inside[self.parent[c]]:
                inside[c] = True
        return np.flatnonzero(inside[self.node_parent])

    def ancestors(self, s: int) -> list[int]:
        """Scope s and its ancestors, root last."""
        out = []
        while s >= 0:
            out.append(int(s))
            s = int(self.parent[s])
        return out

    def node_ancestors(self, i: int) -> list[int]:
        return self.ancestors(int(self.node_parent[i]))

    def display_path(self, s: int) -> str:
        labels = [self.label[a] for a in reversed(self.ancestors(s)) if a != ROOT]
        return "/" + "/".join(labels)

    def default_expanded(self, budget: int = 40) -> set[int]:
        """What to open first: the root, then one whole level of scopes at a time while the view stays
        within `budget` items (a level at a time keeps sibling layers alike); a view of fewer than four
        items is opened further even past the budget, since one box says nothing."""
        expanded = {ROOT}
        n_items = np.bincount(self.node_parent, weights=~self.hidden, minlength=self.n_scopes).astype(np.int64) + \
            np.bincount(self.parent[1:self.n_real_scopes], minlength=self.n_scopes)  # I/O nodes aside
        visible = int(n_items[ROOT])
        level = [int(s) for s in self.scope_children[ROOT]]
        while level:
            extra = int(n_items[level].sum()) - len(level)
            if visible + extra > budget and visible >= 4:
                break
            expanded.update(level)
            visible += extra
            level = [int(c) for s in level for c in self.scope_children[s]]
        return expanded

    def reveal(self, expanded: set[int], i: int) -> set[int]:
        """`expanded` plus every ancestor of op i, so that op i is drawn."""
        return set(expanded) | set(self.node_ancestors(i))


@dataclass
class VisibleGraph:
    """What is drawn for one set of expanded scopes.

    leaves: visible item ids (ops < N, collapsed scopes N + s); frames: expanded scopes other than the
    root (drawn as frames around their contents); parent_of_leaf / parent_of_frame: the expanded scope
    that holds each; rep: for every op, the leaf that shows it; edges between leaves, aggregated, with
    the first tensor (index into the table) and how many op-level edges each stands for.
    """

    tree: ScopeTree
    expanded: frozenset
    leaves: np.ndarray
    frames: np.ndarray
    parent_of_leaf: np.ndarray
    parent_of_frame: np.ndarray
    rep: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_tensor: np.ndarray
    edge_count: np.ndarray

    @property
    def n_ops(self) -> int:
        return self.tree.n_ops

    def is_scope(self, item: int) -> bool:
        return self.tree.n_ops <= item < self.tree.n_ops + self.tree.n_real_scopes

    def is_io(self, item: int) -> bool:
        """Item is a graph input or output node."""
        return item >= self.tree.n_ops + self.tree.n_real_scopes


def visible_graph(tree: ScopeTree, expanded) -> VisibleGraph:
    """The leaves, frames and aggregated edges shown when exactly `expanded` scopes are open."""
    S, n = tree.n_scopes, tree.n_ops
    exp = np.zeros(S, bool)
    for s in expanded:
        if 0 <= s < S:
            exp[s] = True
    exp[ROOT] = True
    exp[tree.n_real_scopes:] = False  # I/O nodes are never opened
    vis = np.zeros(S, bool)   # drawn, as a box or a frame
    rep = np.arange(S)        # the scope item that stands for each scope
    vis[ROOT] = True
    par = tree.parent
    for s in range(1, S):
        p = par[s]
        if vis[p] and exp[p]:
            vis[s] = True
        else:
            rep[s] = rep[p]
    open_ = vis & exp
    np_ = tree.node_parent
    op_rep = np.where(open_[np_], np.arange(n), n + rep[np_]) if n else np.zeros(0, np.int64)
    op_rep[tree.hidden] = -1
    op_rep[tree.io_op] = n + tree.io_rep[tree.io_op]  # an .mnn Input op is shown by its input's node
    boxes = np.flatnonzero(vis & ~exp)
    frames = np.flatnonzero(open_)
    frames = frames[frames != ROOT]
    op_leaves = np.flatnonzero(open_[np_] & ~tree.hidden & ~tree.io_op) if n else np.zeros(0, np.int64)
    leaves = np.concatenate([op_leaves, n + boxes])
    parent_of_leaf = np.concatenate([np_[op_leaves], par[boxes]])
    t = tree.table
    s_, d_ = op_rep[t.edge_src], op_rep[t.edge_dst]
    tt = t.edge_tensor
    if len(tree.io_tensor):
        s_, d_, tt = _io_edges(tree, op_rep, s_, d_, tt)
    keep = (s_ != d_) & (s_ >= 0) & (d_ >= 0)
    s_, d_, tt = s_[keep], d_[keep], tt[keep]
    if len(s_):
        key = s_ * (n + S) + d_
        uniq, first, count = np.unique(key, return_index=True, return_counts=True)
        s_, d_, tt = s_[first], d_[first], tt[first]
    else:
        count = np.zeros(0, np.int64)
    return VisibleGraph(tree, frozenset(int(s) for s in np.flatnonzero(exp)), leaves, frames, parent_of_leaf,
                        par[frames], op_rep, s_, d_, tt, count)


def _io_edges(tree: ScopeTree, op_rep, s_, d_, tt):
    """Edges of the I/O nodes appended to the op edges (as items): input node -> every reader of its tensor,
    the tensor's producer -> output node."""
    t, n, base = tree.table, tree.n_ops, tree.n_ops + tree.n_real_scopes
    slot_node = np.repeat(np.arange(n, dtype=np.int64), np.diff(t.in_ptr))
    src, dst, ten = [s_], [d_], [tt]
    for k, (ti, is_in) in enumerate(zip(tree.io_tensor.tolist(), tree.io_input.tolist())):
        if is_in:
            readers = np.unique(slot_node[t.in_idx == ti])
            src.append(np.full(len(readers), base + k, np.int64))
            dst.append(op_rep[readers] if len(readers) else np.zeros(0, np.int64))
            ten.append(np.full(len(readers), ti, np.int64))
        else:
            p = int(t.producer[ti])
            if p < 0 or op_rep[p] < 0:
                continue
            src.append(np.asarray([op_rep[p]], np.int64))
            dst.append(np.asarray([base + k], np.int64))
            ten.append(np.asarray([ti], np.int64))
    return np.concatenate(src), np.concatenate(dst), np.concatenate(ten)
