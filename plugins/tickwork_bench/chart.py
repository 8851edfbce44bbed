"""The PNG chart: burst fires/s and steady p99 lag per store and claim strategy, one bar per
node count and membership (the raw ceiling is its own group)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .metrics import CellResult

PANELS = (
    ("burst", "fires_per_s", "burst: fires/s (log scale; higher is better)", True),
    ("steady", "lag_p99_ms", "steady (all due at each whole second): p99 lag, ms (lower is better)", False),
    ("spread", "lag_p99_ms", "spread (due times spread over each second): p99 lag, ms (lower is better)", False),
)


def _group(result: CellResult) -> str:
    return f"{result.cell.store}\n{result.cell.claim}"


def _series(result: CellResult) -> tuple[int, str]:
    """Raw workers and single nodes share a colour per K; memberships of several nodes get their own."""
    membership = result.cell.membership
    return (result.cell.nodes, "" if membership in ("-", "single") else membership)


def _series_label(series: tuple[int, str]) -> str:
    k, membership = series
    return f"K={k} {membership}".rstrip()


def write_chart(path: Path, results: Sequence[CellResult]) -> None:
    """Draw the chart; needs matplotlib (``pip install 'tickwork[bench]'``).

    :raises ImportError: naming the missing package
    """
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError("--chart needs matplotlib: pip install 'tickwork[bench]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [p for p in PANELS if any(r.cell.workload == p[0] and r.metrics.get(p[1]) for r in results)]
    if not panels:
        panels = [PANELS[0]]
    all_series = sorted({_series(r) for r in results}, key=lambda s: (s[0], s[1]))
    colors = {s: plt.get_cmap("tab10")(i % 10) for i, s in enumerate(all_series)}
    n_groups = max(len({_group(r) for r in results if r.cell.workload == p[0]}) for p in panels)
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(8.0, 1.6 * n_groups), 4.2 * len(panels)), squeeze=False)
    for ax, (workload, key, title, log) in zip((row[0] for row in axes), panels, strict=True):
        cells = [r for r in results if r.cell.workload == workload and r.metrics.get(key) is not None]
        groups = list(dict.fromkeys(_group(r) for r in cells))
        for gi, group in enumerate(groups):
            members = sorted((r for r in cells if _group(r) == group), key=lambda r: all_series.index(_series(r)))
            width = 0.8 / max(len(members), 1)
            for i, r in enumerate(members):
                x = gi + (i - (len(members) - 1) / 2) * width
                value = float(r.metrics[key])
                series = _series(r)
                ax.bar(x, value, width=width, color=colors[series], label=_series_label(series))
                ax.annotate(f"{value:,.0f}", (x, value), ha="center", va="bottom", fontsize=6)
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles, strict=True))
        ax.legend(unique.values(), unique.keys(), fontsize=7, ncol=2, loc="best")
        ax.set_xticks(range(len(groups)), groups, fontsize=8)
        if log:
            ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
