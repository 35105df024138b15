"""Widgets: thin ipywidgets wiring over the pure functions and the views (no JavaScript from a CDN).

One module per notebook topic; each widget builds its controls, calls a pure function and a view when a
control changes, and shows bad input as a message inside the widget.
"""
from .attention import AttentionExplorer
from .embeddings import AnisotropyExplorer, NearestSenseExplorer, SenseClusters
from .labelling import AlignmentViewer, QASpanViewer
from .masking import FillMaskExplorer, LanguageSampler, MaskSampler
from .spans import SpanEnumerator, SpanMaskSampler
from .tokenization import SubwordExplorer

__all__ = ["AlignmentViewer", "QASpanViewer", "AttentionExplorer", "MaskSampler", "FillMaskExplorer", "LanguageSampler", "SenseClusters",
           "NearestSenseExplorer", "AnisotropyExplorer", "SubwordExplorer", "SpanMaskSampler", "SpanEnumerator"]
