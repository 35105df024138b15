"""Widgets: thin ipywidgets views over the pure functions of course_lib (no JavaScript from a CDN)."""
from .attention_explorer import AttentionExplorer

__all__ = ["AttentionExplorer"]
