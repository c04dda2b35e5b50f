"""Small inline charts for asset-check metadata: the series a signal was judged on, with its threshold."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence


def series_markdown(values: Sequence[float], threshold: float | None, title: str, xlabel: str = "step") -> str:
    """A Markdown image (an inline PNG) of `values` with `threshold` as a dashed line; '' without values."""
    if not values:
        return ""
    import matplotlib  # heavy: only a chart loads it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 2.2), dpi=90)
    ax.plot(range(1, len(values) + 1), list(values), marker="o", ms=3, lw=1.2)
    if threshold is not None:
        ax.axhline(threshold, color="crimson", ls="--", lw=1)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.grid(alpha=0.3)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return f"![{title}](data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()})"
