"""One model on screen: a tab per graph (the main one, then any opened If/Loop bodies)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QLabel, QStyle, QStyleOption, QTabWidget, QToolTip, QVBoxLayout, QWidget

from mnnscope.inspector.model.scopes import ScopeTree
from mnnscope.inspector.model.table import GraphTable

from mnnscope.gui.graphview import GraphView
from mnnscope.gui.notify import ERROR
from mnnscope.gui.theme import palette

if TYPE_CHECKING:
    from mnnscope.gui.window import MainWindow


def resolve_expand(tree: ScopeTree, spec):
    """Scopes to open from --expand: None (the default overview), "all", "none", a scope path, or a set."""
    if spec is None or isinstance(spec, (set, frozenset)):
        return spec
    if spec == "all":
        return set(range(tree.n_scopes))
    if spec == "none":
        return {0}
    path = "/" + spec.strip("/")
    s = tree.index.get(path)
    if s is None:  # folded scopes keep their names in labels: try the displayed paths
        s = next((i for i in range(tree.n_scopes) if tree.display_path(i) == path), None)
    if s is None:
        tops = ", ".join(tree.display_path(c) for c in tree.scope_children[0][:5])
        raise ValueError(f"no scope '{path}' in this model (top-level scopes: {tops or 'none'})")
    return tree.default_expanded() | set(tree.ancestors(s))


BANNER_MIN = 80  # the narrowest the side-by-side banner gets ("linked with ..." still reads)


class _Banner(QLabel):
    """One line beside a pane's tabs, cut with an ellipsis where the pane is narrow (the whole line in its
    tooltip); text() keeps the whole line."""

    def sizeHint(self) -> QSize:
        m = self.contentsMargins()  # the tab widget lays out its corner by this: never past the maximum width
        width = self.fontMetrics().horizontalAdvance(self.text()) + m.left() + m.right() + 2
        return QSize(min(self.maximumWidth(), width), self.fontMetrics().height() + m.top() + m.bottom())

    def minimumSizeHint(self) -> QSize:
        return QSize(40, self.sizeHint().height())

    def paintEvent(self, e) -> None:
        p = QPainter(self)
        r = self.contentsRect()
        opt = QStyleOption()
        opt.initFrom(self)
        self.style().drawPrimitive(QStyle.PE_Widget, opt, p, self)  # the style sheet's background (amber: a warning)
        p.setPen(self.palette().windowText().color())
        p.drawText(r, Qt.AlignVCenter | Qt.AlignLeft,
                   self.fontMetrics().elidedText(self.text(), Qt.ElideRight, r.width()))

    def event(self, e) -> bool:
        if e.type() == QEvent.ToolTip:
            tip = "\n".join(t for t in (self.text(), self.toolTip()) if t)
            QToolTip.showText(e.globalPos(), tip, self)
            return True
        return super().event(e)


class Pane(QWidget):
    """One model: a tab per graph (the main one, then any opened If/Loop bodies)."""

    def __init__(self, window: "MainWindow"):
        super().__init__(window)
        self.window_ = window
        self.path: str | None = None
        self.table: GraphTable | None = None
        self.tree: ScopeTree | None = None
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.tabs.setTabsClosable(True)
        # squeezed (the banner beside them, a narrow pane), titles shorten with an ellipsis: by default the tab bar
        # cut a title mid-word behind scroll arrows (1024x700 side by side, tryout 8)
        self.tabs.setElideMode(Qt.ElideMiddle)
        self.tabs.tabCloseRequested.connect(self._close_tab)
        self.tabs.currentChanged.connect(lambda _: window._selection_changed(self.view))
        # side by side: whether this pane's selection is linked to the other one, and why not
        # beside the tabs, not above them: above, it put this pane's tab and graph 20 px below the other pane's
        self.link_label = _Banner(self)
        self.link_label.setObjectName("link_label")
        self.link_label.setContentsMargins(8, 2, 8, 2)
        self.link_label.hide()
        self.tabs.setCornerWidget(self.link_label, Qt.TopRightCorner)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.tabs)
        self.main_view = self._new_view()
        self.tabs.addTab(self.main_view, "Graph")
        self.tabs.tabBar().setTabButton(0, self.tabs.tabBar().ButtonPosition.RightSide, None)

    def _new_view(self) -> GraphView:
        v = GraphView(palette(self.window_.theme), self)
        v.selection_changed.connect(lambda item, v=v: self.window_._selection_changed(v))
        v.subgraph_requested.connect(lambda node, attr, v=v: self.open_subgraph(v, node, attr))
        v.bodies_requested.connect(lambda node, v=v: self.open_bodies(v, node))
        v.counterparts = lambda item, v=v: self.window_.counterparts(v, item)
        v.counterpart_requested.connect(lambda item, v=v: self.window_.show_counterpart(v, item))
        v.profile_why = lambda item, v=v: self.window_.profile_from_why(self, v, item)
        v.profile_requested.connect(lambda item, v=v: self.window_.profile_from(self, v, item))
        v.busy.connect(self.window_._busy)
        v.problem.connect(lambda msg: self.window_.notify(msg, ERROR, self.path or ""))
        v.said.connect(lambda msg: self.window_.statusBar().showMessage(msg, 5000))
        return v

    @property
    def view(self) -> GraphView:
        return self.tabs.currentWidget()

    def views(self) -> list[GraphView]:
        return [self.tabs.widget(i) for i in range(self.tabs.count())]

    def set_model(self, path: str, table: GraphTable, tree: ScopeTree, expanded=None) -> None:
        for i in range(self.tabs.count() - 1, 0, -1):
            self._close_tab(i)
        self.path, self.table, self.tree = path, table, tree
        self.tabs.setTabText(0, self.window_.title_of(path))
        self.tabs.setTabToolTip(0, path)
        self._refit_banner()  # a longer title wants more of the row
        self.main_view.set_table(table, tree, expanded)

    def clear_model(self) -> None:
        """No model in the pane (File > Close Model): its body tabs closed, its graph emptied."""
        for i in range(self.tabs.count() - 1, 0, -1):
            self._close_tab(i)
        self.path, self.table, self.tree = None, None, None
        self.tabs.setTabText(0, "Graph")
        self.tabs.setTabToolTip(0, "")
        self.main_view.clear()

    def open_subgraph(self, view: GraphView, node: int, attr: str) -> GraphView | None:
        subs = view.table.subgraphs.get(node, {})
        if attr not in subs:
            return None
        title = f"{view.table.names[node] or view.table.ids[node]} \u25b8 {attr}"
        for i in range(self.tabs.count()):
            if self.tabs.tabText(i) == title:
                self.tabs.setCurrentIndex(i)
                return self.tabs.widget(i)
        v = self._new_view()
        v.set_table(subs[attr])
        self.tabs.addTab(v, title)
        self.tabs.setCurrentWidget(v)
        self._refit_banner()
        return v

    def open_bodies(self, view: GraphView, node: int) -> list[GraphView]:
        """Every body of a control-flow op (If: then_branch and else_branch), a tab each; the first is shown."""
        attrs = sorted(view.table.subgraphs.get(node, {}), key=lambda a: not a.startswith("then"))  # then, else
        opened = [v for v in (self.open_subgraph(view, node, a) for a in attrs) if v]
        if opened:
            self.tabs.setCurrentWidget(opened[0])
        return opened

    def set_link_state(self, text: str, warn: bool = False) -> None:
        """The banner over a side-by-side pane ('' hides it)."""
        pal = palette(self.window_.theme)
        warn_bg = "#f6d7a7" if pal.name == "light" else "#5a4325"
        self.link_label.setText(text)
        self.link_label.setStyleSheet(f"background: {warn_bg if warn else pal.box_fill}; color: {pal.text};")
        self.link_label.setVisible(bool(text))
        self._fit_banner()

    def _fit_banner(self) -> None:
        """The tabs first: the banner takes the room their whole titles leave (at most 60% of the pane, at least
        BANNER_MIN px, then the titles are elided), never space under the tabs. With the banner given 60% of a
        405 px pane, the title was cut behind scroll arrows beside it (1024x700 side by side, tryout 8)."""
        room = self.width() - self.tabs.tabBar().sizeHint().width() - 4
        self.link_label.setMaximumWidth(max(BANNER_MIN, min(room, int(self.width() * 0.6))))
        self.tabs.setCornerWidget(self.link_label, Qt.TopRightCorner)  # the tab bar makes room for it again
        self.link_label.setVisible(bool(self.link_label.text()))  # (setting a corner widget hides the old one)

    def _refit_banner(self) -> None:
        if self.link_label.isVisible():
            self._fit_banner()

    def resizeEvent(self, e) -> None:
        super().resizeEvent(e)
        self._refit_banner()

    def _close_tab(self, i: int) -> None:
        if i == 0:
            return
        w = self.tabs.widget(i)
        self.tabs.removeTab(i)
        self._refit_banner()
        w.shutdown()
        w.deleteLater()

    def shutdown(self) -> None:
        for v in self.views():
            v.shutdown()
