"""What every view shares: the message shown for bad input, a note, and a figure rendered for an ipywidgets Image."""
from __future__ import annotations

from matplotlib.figure import Figure


def error_html(text: str) -> str:
    """A widget's message for bad input: a warning sign and the text, in a red readable on white."""
    import html

    return f"<b style='color:#b2182b'>⚠ {html.escape(text)}</b>"


def note_html(text: str) -> str:
    """A widget's note beside a result it still shows (the input is read otherwise than typed): dark grey, italic."""
    import html

    return f"<span style='color:#404040'><b>note:</b> <i>{html.escape(text)}</i></span>"  # (ⓘ has no glyph in many fonts)


def figure_png(fig: Figure) -> bytes:
    """Render a Figure to PNG bytes (for an ipywidgets Image)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
