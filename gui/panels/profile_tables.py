"""The Profile dock's tables: per op and per op type, as table models over plain rows (sortable by number,
filterable), and their CSV."""
from __future__ import annotations

import csv
import math

from PySide6.QtCore import QAbstractTableModel, QEvent, QModelIndex, QObject, QSortFilterProxyModel, Qt

from mnnscope.gui.wraplabel import wrap_tip
from mnnscope.inspector.profile.placement import by_type, throughput, timed_ops

SORT_ROLE = Qt.UserRole + 1


def _ms(v) -> str:
    return "" if v is None else f"{v:.4f}"


def _count(v) -> str:
    if v is None:
        return ""
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= div:
            return f"{v / div:.2f}{unit}"
    return f"{v:.0f}"


def _lead(nodes: list[str], op_type: str, node_types: dict[str, str] | None) -> list[str]:
    """The nodes an op's time landed on, the one of its own type first: ONNX Runtime names a fused Conv+Relu
    after the Relu's output ("/relu/Relu_output_0_nchwc", type Conv), and the row and its bar said "/relu/Relu
    +1" for the time of a convolution."""
    if not node_types or len(nodes) < 2:
        return nodes
    t = str(op_type or "").lower()
    same = [n for n in nodes if t and (node_types.get(n, "").lower().startswith(t)
                                      or t.startswith(node_types.get(n, "").lower() or "\0"))]
    if not same and op_type:
        # MNN names its types its own way (a "Pooling" op on ONNX MaxPool): the node of the op's category, where
        # that is not the first's (tryout 15's bar called int8 det's 12 ms MaxPool "Relu.0", its region's first)
        from mnnscope.gui.theme import category_of
        cat = category_of(str(op_type))
        same = [n for n in nodes if cat != "other" and category_of(node_types.get(n, "")) == cat]
    return same[:1] + [n for n in nodes if n not in same[:1]] if same else nodes


def op_rows(result: dict, placed: dict[str, list[str]] | None = None,
            node_types: dict[str, str] | None = None) -> list[dict]:
    """One row per op with a time: op, type, median, spread (max-min), share, FLOPs, GFLOP/s, node (the one of
    the op's own type first, where `node_types` gives the graph's: node name -> op type)."""
    ops = timed_ops(result)
    total = sum(op["ms"] for op in ops)
    rows = []
    for op in ops:
        lo, hi = op.get("ms_min"), op.get("ms_max")
        nodes = _lead((placed or {}).get(str(op.get("name")), []), op.get("type"), node_types)
        # the op's tooltip says what it ran: MNN names a converted op after a tensor ("Add.149", a Convolution), and
        # its tooltip only repeated the name (a new-user try)
        tip = f"{op.get('name')} ({op.get('type')})" + (f": runs {', '.join(nodes)} of the graph" if nodes else "")
        if op.get("runtime_type"):
            tip += f"; MNN's kernel: {op['runtime_type']}"
        rows.append({"index": op.get("index"), "op": op.get("name"), "op_tip": tip, "type": op.get("type"),
                     "ms": op["ms"],
                     "spread": (hi - lo) if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) else None,
                     "share": op["ms"] / total if total > 0 else 0.0, "flops": op.get("flops"),
                     "gflops": throughput(op), "node": nodes[0] if len(nodes) == 1 else
                     (f"{nodes[0]} +{len(nodes) - 1}" if nodes else "")})
    return rows


def node_rows(placement, table) -> list[dict]:
    """One row per graph node that carries time, as the graph colours it and its #1-#5 callouts rank it: an MNN op's
    time spread over the ONNX nodes it fused (by their FLOPs), an inserted op's charged to the nodes it serves. Two
    new-user tries read the Ops table's first row (one MNN op, "Add.209__matmul_converted 1.829 ms") against the
    graph's "#1 1.75 ms" on MatMul.12 and could not tell which was the slowest: this table ranks what the graph
    ranks, and names the ops that put the time there."""
    if placement is None or not placement.values:
        return []
    ops_of: dict[str, list[str]] = {}
    for op, nodes in placement.op_nodes.items():
        for n in nodes:
            ops_of.setdefault(n, []).append(op)
    total = placement.measured_ms
    rows = []
    for nid, ms in placement.values.items():
        if not ms or ms <= 0:
            continue
        i = table.index_of(nid) if table is not None else None
        rows.append((-ms, i if i is not None else 1 << 62, nid,
                     {"node": nid, "type": table.op_types[i] if i is not None else "", "ms": ms,
                      "share": ms / total if total > 0 else 0.0, "ops": ", ".join(ops_of.get(nid, []))}))
    # equal times in graph order, as the callouts rank them (the view's sort is stable: it keeps this order for ties)
    return [r[-1] for r in sorted(rows, key=lambda r: r[:3])]


NAME_KEYS = ("op", "node")  # columns of scoped names (Ops: MNN op names, By node: ONNX node names)
FILTER_ROLE = Qt.UserRole + 2


def common_path(rows: list[dict], key: str) -> str:
    """The leading path ("/encoder/layer.0/") that every path-like name of the column starts with, "" if none or one
    row: left out of the names shown, what tells them apart gets the room (a new-user try read
    "/encoder/layer.0/…_matmul_converted" five times in the Ops table, the middle elided)."""
    names = [str(r.get(key) or "") for r in rows]
    paths = [n for n in names if n.startswith("/")]
    if len(paths) < 2:
        return ""
    cut = paths[0].rsplit("/", 1)[0] + "/"
    for n in paths[1:]:
        while cut and not n.startswith(cut):
            cut = cut[:-1].rsplit("/", 1)[0] + "/" if cut.count("/") > 1 else ""
    return cut if cut.count("/") > 1 else ""


class RowsModel(QAbstractTableModel):
    """Rows of dicts shown through `columns` [(title, key, formatter)]; SORT_ROLE gives the raw value."""

    def __init__(self, columns, parent=None):
        super().__init__(parent)
        self.columns = columns
        self.rows: list[dict] = []
        self.prefix: dict[str, str] = {}  # per name column: the path all its names start with, shown as "…/"

    def set_rows(self, rows: list[dict]) -> None:
        self.beginResetModel()
        self.rows = rows
        self.prefix = {key: common_path(rows, key) for _, key, fmt in self.columns if key in NAME_KEYS}
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation == Qt.Horizontal and role == Qt.DisplayRole:
            return self.columns[section][0]
        if orientation == Qt.Horizontal and role == Qt.ToolTipRole:
            tip = HEADER_TIPS.get(self.columns[section][1])
            return wrap_tip(tip) if tip else None  # (a model's tooltips are not setToolTip's: wrapped here)
        if orientation == Qt.Horizontal and role == Qt.TextAlignmentRole and not self.columns[section][2]:
            # a name column's title at its start, over its names: centred in the last column, wider than the view,
            # "Timed ops" read "T..." at the view's edge (1024 px, a new-user try)
            return int(Qt.AlignLeft | Qt.AlignVCenter)
        return None

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        title, key, fmt = self.columns[index.column()]
        v = row.get(key)
        if role == Qt.DisplayRole:
            if fmt:
                return fmt(v)
            text = "" if v is None else str(v)
            cut = self.prefix.get(key)
            return "\u2026" + text[len(cut) - 1:] if cut and text.startswith(cut) else text
        if role == FILTER_ROLE:  # the whole name: a filter by the path the column leaves out still finds it
            return "" if v is None else str(v)
        if role == SORT_ROLE:
            if v is None:
                return -math.inf if fmt else ""
            return v
        if role == Qt.TextAlignmentRole and fmt:
            return int(Qt.AlignRight | Qt.AlignVCenter)
        if role == Qt.ToolTipRole and key in ("op", "node", "ops"):
            # a node's timed ops run to a thousand pixels in one line (helper 110): in lines that fit a screen
            return wrap_tip(str(row.get(f"{key}_tip") or v or ""))
        return None

    def to_csv(self, path: str) -> str:
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow([c[1] for c in self.columns])
            for row in self.rows:
                w.writerow(["" if row.get(k) is None else row.get(k) for _, k, _ in self.columns])
        return path


# MNN's per-op count (Interpreter getFlops) is not Properties' FLOPs: a Convolution (a MatMul MNN runs as one too)
# counts one per multiply-add where `inspect` counts two, and most other ops about one per element (measured on the
# samples: cnn.mnn's first Convolution 442,368, its ONNX Conv 884,736 in Properties)
HEADER_TIPS = {
    "ops": "the MNN ops timed for this node (the conversion's node map gives each MNN op its ONNX node; a fused op "
           "goes to the node it came from): their times summed are the node's 'ms on the graph'",
    "flops": "MNN's own count per op (its getFlops): one per multiply-add on a Convolution or MatMul, where Properties "
             "and `mnnscope inspect` count two, and about one per element elsewhere; empty where the engine counts "
             "none (ONNX Runtime)",
    "gflops": "MNN's count (see FLOPs) over the median time: on a Convolution or MatMul, multiply-adds per second, "
              "half the FLOP/s that two per multiply-add would give",
}

OP_COLUMNS = [("Op", "op", None), ("Type", "type", None), ("Median ms", "ms", _ms), ("Spread ms", "spread", _ms),
              ("Share", "share", lambda v: f"{v * 100:.1f}%"), ("FLOPs", "flops", _count),
              ("GFLOP/s", "gflops", lambda v: "" if v is None else f"{v:.2f}"), ("Node", "node", None)]
NODE_COLUMNS = [("Node", "node", None), ("Type", "type", None), ("ms on the graph", "ms", _ms),
                ("Share", "share", lambda v: f"{v * 100:.1f}%"), ("Timed ops", "ops", None)]
TYPE_COLUMNS = [("Type", "type", None), ("Ops", "count", lambda v: str(v)), ("Total ms", "ms", _ms),
                ("Share", "share", lambda v: f"{v * 100:.1f}%"), ("FLOPs", "flops", _count),
                ("GFLOP/s", "gflops", lambda v: "" if v is None else f"{v:.2f}")]


def type_rows(result: dict) -> list[dict]:
    return by_type(timed_ops(result))


def fit_to_headers(view) -> None:
    """Widens the columns narrower than their title (bold, and the sort arrow's room: QHeaderView's own hint): at
    1024 px the By node table's "ms on the graph" read "ns on the grap..." (a new-user try). Never narrows one."""
    header = view.horizontalHeader()
    for col in range(1, header.count()):  # (the name column has its own fit, NameColumnFit)
        hint = header.sectionSizeHint(col)
        if header.sectionSize(col) < hint:
            header.resizeSection(col, hint)


class NameColumnFit(QObject):
    """Keeps a table's first column (op names) between `lo` and `hi` px, narrow enough that the `keep` columns
    after it stay in view: at 1024x700 the Profile dock showed only Op and Type, Median ms past the right edge
    (tryout 8). Long names are elided in the middle (the view's elide mode), whole in their tooltip. A width the
    user drags stays theirs."""

    def __init__(self, view, lo: int = 120, hi: int = 250, keep: int = 3):
        super().__init__(view)
        self.view, self.lo, self.hi, self.keep = view, lo, hi, keep
        self.user_sized = False
        self._setting = False
        view.horizontalHeader().sectionResized.connect(self._resized)
        view.viewport().installEventFilter(self)

    def fit(self) -> None:
        if self.user_sized:
            return
        header = self.view.horizontalHeader()
        others = sum(header.sectionSize(c) for c in range(1, min(header.count(), 1 + self.keep)))
        width = max(self.lo, min(self.hi, self.view.viewport().width() - others))
        if header.count() and header.sectionSize(0) != width:
            self._setting = True
            try:
                header.resizeSection(0, width)
            finally:
                self._setting = False

    def eventFilter(self, obj, e) -> bool:
        if e.type() == QEvent.Resize:
            self.fit()
        return False

    def _resized(self, index: int, _old: int, _new: int) -> None:
        if index == 0 and not self._setting and self.view.isVisible():
            self.user_sized = True


class FilterProxy(QSortFilterProxyModel):
    """Sorts by the raw values; filters rows whose text (op, type, node) holds the needle, any case."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setSortRole(SORT_ROLE)
        self.setFilterRole(FILTER_ROLE)
        self.setFilterCaseSensitivity(Qt.CaseInsensitive)
        self.setFilterKeyColumn(-1)

    def set_needle(self, text: str) -> None:
        self.setFilterFixedString(text.strip())
