"""Colours: op categories, light and dark palettes, and the application style sheet."""
from __future__ import annotations

from dataclasses import dataclass

from mnnscope.resources import ICONS, STYLES  # noqa: F401  (the window takes ICONS from here)

# Op categories in the spirit of Netron's colours (users know them): layers blue, activations red,
# normalisation green, shape and data movement brown, control flow purple.
CATEGORIES = ("layer", "activation", "norm", "pool", "shape", "math", "reduce", "control", "quant", "io",
              "other", "scope")
_OPS = {
    "layer": "Conv ConvTranspose Gemm MatMul MatMulInteger QLinearConv QLinearMatMul Convolution "
             "ConvolutionDepthwise Deconvolution DeconvolutionDepthwise InnerProduct Einsum LSTM GRU RNN "
             "Attention MultiHeadAttention FusedAttention Conv2D Dense BatchMatMul".split(),
    "activation": "Relu LeakyRelu PRelu Sigmoid Tanh Softmax LogSoftmax Gelu FastGelu Elu Selu Celu Mish "
                  "HardSigmoid HardSwish Softplus Softsign ThresholdedRelu Erf ReLU ReLU6 Clip Swish SiLU "
                  "Hardmax GELU "
                  # MNN UnaryOp operations (gui.labels titles those ops by them)
                  "SIGMOID TANH GELU_STANDARD SILU HARDSWISH ERF".split(),
    "norm": "BatchNormalization LayerNormalization InstanceNormalization GroupNormalization "
            "SimplifiedLayerNormalization RMSNormalization LRN LpNormalization LayerNorm BatchNorm Normalize "
            "InstanceNorm Scale".split(),
    "pool": "MaxPool AveragePool GlobalAveragePool GlobalMaxPool LpPool Pooling Pooling3D MaxUnpool "
            "RoiAlign Resize Upsample Interp".split(),
    "shape": "Reshape Transpose Squeeze Unsqueeze Flatten Concat Split Slice Gather GatherND GatherElements "
             "Scatter ScatterND ScatterElements Shape Size Expand Tile Pad Identity Permute ConvertTensor "
             "SliceTf StridedSlice GatherV2 Rank Fill ConstantOfShape Range DepthToSpace SpaceToDepth "
             "Cast CastLike Trilu Where OneHot NonZero Compress Squeeze Unsqueeze Broadcast "
             "BroadcastTo Reverse TopK TopKV2 EyeLike".split(),
    "math": "Add Sub Mul Div Pow Sqrt Exp Log Abs Neg Reciprocal Floor Ceil Round Sin Cos Max Min Mean Sum "
            "Mod Sign Equal Greater Less GreaterOrEqual LessOrEqual And Or Not Xor BitShift BinaryOp "
            "UnaryOp Eltwise CumSum IsNaN IsInf".split(),
    "reduce": "ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum "
              "ReduceLogSumExp ReduceSumSquare ArgMax ArgMin Reduction".split(),
    "control": "If Loop Scan While".split(),
    "quant": "QuantizeLinear DequantizeLinear DynamicQuantizeLinear FloatToInt8 Int8ToFloat "
             "QuantizedFloatOp".split(),
    "io": "Input Output Constant Const TrainableParam".split(),
}
_CATEGORY_OF = {op: c for c, ops in _OPS.items() for op in ops}


def category_of(op_type: str) -> str:
    return _CATEGORY_OF.get(op_type, "other")


def category_index(op_type: str) -> int:
    return CATEGORIES.index(category_of(op_type))


@dataclass(frozen=True)
class Palette:
    name: str
    background: str
    grid: str
    text: str
    text_dim: str
    node_text: str
    edge: str
    edge_label: str
    selection: str
    match: str
    frame_fill: tuple      # by depth, cycling
    frame_border: str
    frame_text: str
    box_fill: str
    box_border: str
    box_text: str
    categories: dict       # category -> fill colour
    minimap_bg: str
    viewport: str


LIGHT = Palette(
    name="light", background="#fbfbfc", grid="#eceef2", text="#1d2430", text_dim="#6b7380", node_text="#ffffff",
    edge="#7d8694", edge_label="#4d5563", selection="#ff9f1a", match="#f5d000",
    frame_fill=("#eef2f8", "#e6ecf5", "#dfe7f2", "#d8e1ee"), frame_border="#b9c4d4", frame_text="#3a4a60",
    box_fill="#f3f5f9", box_border="#8a98ad", box_text="#1d2a3c",
    categories={"layer": "#33618f", "activation": "#8c2f39", "norm": "#3d6b47", "pool": "#4f7d3a",
                "shape": "#7a5a3a", "math": "#546178", "reduce": "#2f7479", "control": "#6a4c93",
                "quant": "#a14f7e", "io": "#6f7782", "other": "#4b5563", "scope": "#f3f5f9",
                "muted": "#d3d7de"},
    minimap_bg="#e6ffffff", viewport="#ff9f1a",
)

DARK = Palette(
    name="dark", background="#1b1e24", grid="#23272f", text="#dde3ec", text_dim="#8b95a5", node_text="#f4f6fa",
    edge="#7b8696", edge_label="#aab3c2", selection="#ffb347", match="#e6c619",
    frame_fill=("#22272f", "#262c35", "#2a313b", "#2e3641"), frame_border="#3f4a5a", frame_text="#b8c4d6",
    box_fill="#2b323c", box_border="#66758c", box_text="#e2e8f0",
    categories={"layer": "#3f75ad", "activation": "#a8424e", "norm": "#4a8257", "pool": "#5f9346",
                "shape": "#8f6b47", "math": "#5d6b84", "reduce": "#38878d", "control": "#7c5aa9",
                "quant": "#b35d8f", "io": "#6b7380", "other": "#555f6e", "scope": "#2b323c",
                "muted": "#3a414c"},
    minimap_bg="#e615181d", viewport="#ffb347",
)

PALETTES = {"light": LIGHT, "dark": DARK}


def palette(name: str) -> Palette:
    return PALETTES.get(name, LIGHT)


# Qt palette roles per theme: every role, for the Active/Inactive groups and then what changes when Disabled
# (left unset, a disabled widget inherits the active colours and looks usable).
_WIDGET_COLOURS = {
    "light": {
        "WindowText": "#1d2430", "Button": "#f7f8fa", "Light": "#ffffff", "Midlight": "#eceef2", "Dark": "#7d8694",
        "Mid": "#8d96a3", "Text": "#1d2430", "BrightText": "#ffffff", "ButtonText": "#1d2430", "Base": "#ffffff",
        "Window": "#f3f4f6", "Shadow": "#3a4250", "Highlight": "#33618f", "HighlightedText": "#ffffff",
        "Link": "#2457a6", "LinkVisited": "#6a4c93", "AlternateBase": "#f6f7f9", "ToolTipBase": "#ffffff",
        "ToolTipText": "#1d2430", "PlaceholderText": "#6b7380", "Accent": "#33618f",
    },
    "dark": {
        "WindowText": "#dde3ec", "Button": "#2d333c", "Light": "#3d4450", "Midlight": "#343a45", "Dark": "#15181d",
        "Mid": "#8590a0", "Text": "#dde3ec", "BrightText": "#ffffff", "ButtonText": "#dde3ec", "Base": "#1f232a",
        "Window": "#262b33", "Shadow": "#0b0d10", "Highlight": "#3f75ad", "HighlightedText": "#ffffff",
        "Link": "#7fb2ff", "LinkVisited": "#b9a2e6", "AlternateBase": "#2a2f38", "ToolTipBase": "#1f232a",
        "ToolTipText": "#dde3ec", "PlaceholderText": "#8b95a5", "Accent": "#3f75ad",
    },
}
_DISABLED_COLOURS = {
    "light": {"WindowText": "#a0a7b1", "Text": "#a0a7b1", "ButtonText": "#a0a7b1", "Base": "#f3f4f6",
              "Button": "#eef0f3", "Mid": "#c3c9d1", "Highlight": "#c3c9d1", "HighlightedText": "#f3f4f6",
              "PlaceholderText": "#b9bec6", "Link": "#97a9c6", "LinkVisited": "#b3a5c8", "Accent": "#c3c9d1"},
    "dark": {"WindowText": "#666e7b", "Text": "#666e7b", "ButtonText": "#666e7b", "Base": "#262b33",
             "Button": "#292e36", "Mid": "#4a525f", "Highlight": "#3a414d", "HighlightedText": "#8b95a5",
             "PlaceholderText": "#525a66", "Link": "#4f6685", "LinkVisited": "#5e5672", "Accent": "#3a414d"},
}
# The dark style sheet gives some widgets fixed colours, which beat the palette's Disabled group: say the
# disabled ones too (the light sheet leaves those widgets to the palette).
_DISABLED_QSS = {
    "light": "",
    "dark": """
QLineEdit:disabled, QComboBox:disabled { color: #666e7b; background: #262b33; border-color: #343a45; }
QMenuBar::item:disabled, QMenu::item:disabled { color: #666e7b; }
QToolButton:disabled, QToolBar QToolButton:disabled, QTabBar::tab:disabled { color: #666e7b; }
QTextBrowser:disabled { color: #666e7b; background: #262b33; }
""",
}


def widget_colours(name: str, disabled: bool = False) -> dict[str, str]:
    """Qt palette role name -> colour for theme `name` (the Disabled group's when `disabled`)."""
    key = palette(name).name
    return {**_WIDGET_COLOURS[key], **(_DISABLED_COLOURS[key] if disabled else {})}


def style_sheet(name: str) -> str:
    p = STYLES / f"{palette(name).name}.qss"
    return (p.read_text(encoding="utf-8") if p.is_file() else "") + _DISABLED_QSS[palette(name).name]


def _indicator_style():
    """Fusion with check box and radio button outlines in the palette's Mid colour: Fusion derives them from the
    window colour (darker), which on a dark window leaves an unchecked box all but invisible; and sort arrows that
    point the way the column is sorted."""
    from PySide6.QtCore import QRectF, Qt
    from PySide6.QtGui import QPainter, QPalette, QPen
    from PySide6.QtWidgets import QProxyStyle, QStyle, QStyleFactory, QStyleOptionHeader

    class IndicatorStyle(QProxyStyle):
        def drawPrimitive(self, element, option, painter, widget=None):
            if element == QStyle.PE_IndicatorHeaderArrow and isinstance(option, QStyleOptionHeader) and \
                    option.sortIndicator != QStyleOptionHeader.None_:
                # Qt hands a column sorted in descending order to the style as "SortUp", and Fusion draws an up
                # arrow over the Profile dock's slowest-first table: read as ascending (tryouts). Drawn as most
                # desktops do: up for ascending, down for descending.
                flipped = QStyleOptionHeader(option)
                flipped.sortIndicator = (QStyleOptionHeader.SortDown if option.sortIndicator == QStyleOptionHeader.SortUp
                                         else QStyleOptionHeader.SortUp)
                return super().drawPrimitive(element, flipped, painter, widget)
            super().drawPrimitive(element, option, painter, widget)
            if element not in (QStyle.PE_IndicatorCheckBox, QStyle.PE_IndicatorRadioButton):
                return
            painter.save()
            painter.setRenderHint(QPainter.Antialiasing, True)
            painter.setBrush(Qt.NoBrush)
            painter.setPen(QPen(option.palette.color(QPalette.Mid), 1.0))
            r = QRectF(option.rect).adjusted(0.5, 0.5, -0.5, -0.5)
            if element == QStyle.PE_IndicatorCheckBox:
                painter.drawRect(r)
            else:
                painter.drawEllipse(r.adjusted(0.5, 0.5, -0.5, -0.5))
            painter.restore()

    return IndicatorStyle(QStyleFactory.create("Fusion"))


def apply_theme(app, name: str) -> None:
    """Style, Qt palette (every role, every colour group) and style sheet for the whole application."""
    from PySide6.QtGui import QColor, QPalette
    if getattr(app, "_mnnscope_style", None) is None:
        # Fusion everywhere: the native styles of Windows and macOS ignore much of a palette. Setting a style
        # resets the palette, so it comes first; the reference keeps the Python subclass alive.
        app._mnnscope_style = _indicator_style()
        app.setStyle(app._mnnscope_style)
    qp = QPalette()
    for group, disabled in ((QPalette.Active, False), (QPalette.Inactive, False), (QPalette.Disabled, True)):
        for role, colour in widget_colours(name, disabled).items():
            qp.setColor(group, getattr(QPalette, role), QColor(colour))
    app.setPalette(qp)
    app.setStyleSheet(style_sheet(name))
