"""The window's docks, one module each. `PANELS` names each dock's module and class; a dock whose module is not
built yet shows its placeholder from `coming.py`.

A panel class is built as `Panel(window)` (window = gui.window.MainWindow). It may define:
- `add_actions(menu)`: put its actions (with shortcuts) into the window's Run menu;
- `model_changed(path, table, tree)`: the main pane shows another model (path None: none);
- `shutdown()`: stop its worker threads (window close, test teardown).
Long work goes through `window.runner.run_job` (gui/runnerhost.py), never on the UI thread.
"""
from __future__ import annotations

import importlib
import importlib.util

# dock name -> "module:Class", in the order the docks are tabbed
PANELS = {
    "Inputs": "mnnscope.gui.panels.inputs:InputsPanel",
    "Profile": "mnnscope.gui.panels.profile:ProfilePanel",
    "Statistics": "mnnscope.gui.panels.stats:StatsPanel",
    "Compare": "mnnscope.gui.panels.compare:ComparePanel",
    "Convert": "mnnscope.gui.panels.convert:ConvertPanel",
    "Runs": "mnnscope.gui.panels.runs:RunsPanel",
    "Text": "mnnscope.gui.panels.text:TextPanel",
    "Log": "mnnscope.gui.panels.log:LogPanel",
}


def panel_class(name: str):
    """The dock's class, or None while its module does not exist (an import error in one that does is a bug
    and is raised)."""
    module, cls = PANELS[name].split(":")
    if importlib.util.find_spec(module) is None:
        return None
    return getattr(importlib.import_module(module), cls)
