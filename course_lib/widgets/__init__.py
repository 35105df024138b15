"""Widgets: thin ipywidgets views over the pure functions of course_lib (no JavaScript from a CDN)."""
from .attention_explorer import AttentionExplorer
from .embedding_widgets import AnisotropyExplorer, NearestSenseExplorer, SenseClusters
from .mlm_widgets import FillMaskExplorer, LanguageSampler, MaskSampler

__all__ = ["AttentionExplorer", "MaskSampler", "FillMaskExplorer", "LanguageSampler", "SenseClusters",
           "NearestSenseExplorer", "AnisotropyExplorer"]
