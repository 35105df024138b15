"""Views: pure drawing functions -- each takes numbers and returns a matplotlib Figure, SVG or HTML.

No ipywidgets here: the widgets (:mod:`course_lib.widgets`) wire controls to these functions, and the
tests check the drawings without a browser. One module per notebook topic: attention maps (§11.1),
masking and fill-mask (§11.2), embeddings and senses (§11.3), …; ``common`` holds what they share.
"""
