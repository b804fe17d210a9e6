"""Help > Getting Started: the daily loops of the window in eight steps (a new-user try found only Keyboard
Shortcuts and About under Help). The menu commands it names are read from the menus themselves, with their
shortcuts, so a renamed or moved action breaks the guide's test rather than leaving it wrong."""
from __future__ import annotations

import html

from PySide6.QtGui import QKeySequence

from mnnscope.gui.shortcuts import TextDialog, _plain, menu_actions, show_dialog

# (title, text); {Name} is the menu command registered under that name (window.actions_by_name), written as
# "Menu › Command (keys)"
STEPS = (
    ("Look at a model",
     "Open an .onnx or .mnn file: {Open}, or drop it on the window. Frames are the model's scopes: double-click one to "
     "open or close it. Click a node: Properties shows its attributes, shapes and weights, and with nothing selected "
     "the model's summary (inputs, outputs, parameters, FLOPs). {Find} searches op types and names."),
    ("Set the inputs",
     "View \u203a Panels \u203a Inputs: the sizes of the free dimensions (batch, sequence, height, width) and the "
     "data: random, or your own (an image, .npy, .npz, or text with a tokenizer). Real data matters: random inputs "
     "can make precision errors look far larger than they are."),
    ("See where the time goes",
     "{Profile} runs the model on MNN (an .onnx is converted first) or on ONNX Runtime and colours the graph by "
     "time; the slowest nodes carry callouts #1 to #5, and the Profile dock lists every op (click a row to find it "
     "on the graph). Right-click a node for Profile from Here."),
    ("Check a precision mode",
     "{Compare with ONNX Runtime} runs the modes ticked in the Compare dock (fp16 or int8/int4 weights, full int8, "
     "runtime fp16, ...) against ONNX Runtime, tensor by tensor. Each mode gets a verdict; the first operator whose "
     "error goes over the tolerance is outlined on the graph, and \u201cKeep these operators in float and "
     "reconvert\u201d tries the fix."),
    ("Change the conversion",
     "{Convert to MNN} opens the Convert dock: fp16, int8 or int4 weights, optimize level, fusions. A failed "
     "conversion names the operator and what to do; a finished one opens side by side, where clicking an op "
     "selects its counterpart. {Reconvert and Re-run} repeats the last profile or comparison with the new settings "
     "and shows what changed."),
    ("Check a language model",
     "For a decoder LM (token ids in, logits out), {Generate Text} runs a prompt through the tokenizer.json beside "
     "the model, token by token, on MNN, and with Compare with ONNX Runtime ticked on both: each token with its "
     "agreement and KL, the first step where they disagree (click it: its first diverging op is selected on the graph) and, for a mixture of "
     "experts, each router's expert load."),
    ("Look back",
     "View \u203a Panels \u203a Runs lists every profile and comparison: select two to see the change per op on "
     "the graph. {Run Statistics} reads every tensor once: its range, histogram, and the first op that writes NaN "
     "or Inf."),
    ("Script it",
     "Every workflow of the window is a command with --json output for scripts and CI: mnnscope inspect, profile, "
     "compare, convert and view MODEL (mnnscope --help)."),
)


def menu_paths(menubar) -> dict[int, str]:
    """{id(action): "Menu \u203a Command"} for every action under `menubar` (shortcuts.menu_actions)."""
    return {id(a): f"{path} \u203a {_plain(a.text()).replace(chr(0x2026), '')}" for path, a in menu_actions(menubar)}


def command(window, name: str, paths: dict[int, str]) -> str:
    """How the guide names action `name`: its menu path and shortcut (KeyError: no such action in the menus)."""
    a = window.actions_by_name[name]
    keys = a.shortcut().toString(QKeySequence.NativeText)
    return paths[id(a)] + (f" ({keys})" if keys else "")


def guide_html(window) -> str:
    paths = menu_paths(window.menuBar())
    out = ["<h3>Getting started</h3><ol>"]
    for title, text in STEPS:
        body = html.escape(text)
        while "{" in body:
            start = body.index("{")
            end = body.index("}", start)
            body = body[:start] + f"<b>{html.escape(command(window, body[start + 1:end], paths))}</b>" + body[end + 1:]
        out.append(f"<li><p><b>{html.escape(title)}.</b> {body}</p></li>")
    out.append("</ol><p>Help \u203a Keyboard Shortcuts lists every key.</p>")
    return "".join(out)


class GuideDialog(TextDialog):
    def __init__(self, window):
        super().__init__(window, "Getting Started", 600, 640)

    def refresh(self) -> None:
        self.text.setHtml(guide_html(self.window_))


def show_guide(window) -> GuideDialog:
    """The window's one guide, rebuilt from its menus as they are now, shown and raised."""
    return show_dialog(window, "guide_dialog", GuideDialog)
