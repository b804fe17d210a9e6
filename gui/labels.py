"""What a node is called on the canvas: inspector/model/titles.py's titles (an MNN BinaryOp by its operation, "ADD"),
short distinguishing names. The Properties panel and the tooltip keep the raw op type.
"""
from __future__ import annotations

import re

from mnnscope.gui.theme import category_index, category_of
from mnnscope.inspector.model.titles import OPERATION as _OPERATION
from mnnscope.inspector.model.titles import SEP, node_title

__all__ = ["SEP", "node_title", "node_titles", "title_category", "title_matches", "short_names"]


def node_titles(table) -> list[str]:
    """Titles of every op of a GraphTable (attributes are parsed only for the ops that need them)."""
    titles = list(table.op_types)
    if table.format != "mnn":
        return titles
    for i, op in enumerate(titles):
        if op in _OPERATION:
            titles[i] = node_title(op, table.attrs(i))
    return titles


def title_category(op_type: str, title: str) -> int:
    """Category index (gui.theme.CATEGORIES) of an op shown as `title`: an activation computed by a UnaryOp
    ("SILU") is coloured as an activation, everything else by its op type."""
    if title != op_type and category_of(title) != "other":
        return category_index(title)
    return category_index(op_type)


def title_matches(title: str, query: str) -> bool:
    """A type search: the whole title or its operation ("sum" finds "Reduction·SUM"), case-insensitive."""
    t = title.lower()
    return t == query or t.rsplit(SEP, 1)[-1] == query


_OUTPUT_SUFFIX = re.compile(r"_output_\d+$")
_OP_LIKE = re.compile(r"^[A-Z][A-Za-z]*$")  # a bare op type as the last name part ("LayerNormalization")


def short_names(table, titles, tree=None) -> list[str]:
    """For every op, the shortest tail of its name, below the scope frame that holds it (`tree`), that no other
    op with the same title shares: three MatMul boxes read "q_proj", "k_proj", "v_proj" (a last name part that
    only repeats an op type is left off, and so is an "_output_0" suffix), and "MatMul_1" stays itself.
    '' where that says nothing beyond the title."""
    n = table.node_count
    out = [""] * n
    groups: dict[str, list[int]] = {}
    for i in range(n):
        groups.setdefault(titles[i], []).append(i)
    for title, members in groups.items():
        parts = {}
        for i in members:
            name = table.names[i] or ""
            if tree is not None:
                scope = tree.path[tree.node_parent[i]]
                if scope and name.startswith(scope + "/"):  # the frame around it already says the rest
                    name = name[len(scope) + 1:]
            p = [x for x in name.split("/") if x]
            if p and _OUTPUT_SUFFIX.search(p[-1]) and _OUTPUT_SUFFIX.sub("", p[-1]):
                p[-1] = _OUTPUT_SUFFIX.sub("", p[-1])  # "Slice_1_output_0" (MNN names ops by their outputs)
            if len(p) > 1 and (p[-1].lower() in (table.op_types[i].lower(), title.lower()) or _OP_LIKE.match(p[-1])):
                p = p[:-1]  # "q_proj/MatMul" says "q_proj"
            parts[i] = p
        todo = [i for i in members if parts[i]]
        k = 1
        while todo:
            tail = {i: "/".join(parts[i][-k:]) for i in todo}
            seen: dict[str, int] = {}
            for v in tail.values():
                seen[v] = seen.get(v, 0) + 1
            left = []
            for i in todo:
                if seen[tail[i]] == 1 or k >= len(parts[i]):
                    out[i] = tail[i]
                else:
                    left.append(i)
            todo, k = left, k + 1
        for i in members:  # "Softmax" under "Softmax" says nothing
            if out[i].lower() in (title.lower(), table.op_types[i].lower()):
                out[i] = ""
    return out
