"""Data files shipped with mnnscope: sample models, icons, style sheets (`mnnscope.resources`)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SAMPLES = ROOT / "samples"
ICONS = ROOT / "icons"
STYLES = ROOT / "styles"
