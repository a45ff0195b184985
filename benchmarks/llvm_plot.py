"""The llvm benchmark's results (from bench_llvm.py) as one figure: a panel per
table, a horizontal bar per candidate giving its speed against the table's
baseline (log scale, baseline = 1), the llvm backend's bar highlighted and
the bandwidth floor drawn hatched (it is computed, not measured); the
call-cost panel in microseconds per call instead."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt      # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter     # noqa: E402


def plot(results, path):
    sections = results["sections"]
    fig, axes = plt.subplots(len(sections), 1, figsize=(8.5, 2.0 + 1.15 * sum(len(s["rows"]) for s in sections) / 2.4))
    axes = axes if len(sections) > 1 else [axes]
    for ax, sec in zip(axes, sections):
        rows = sec["rows"]
        ref = next(best for name, best, _ in rows if name == sec["base"])
        names = [name for name, _, _ in rows]
        speed = [ref / best for _, best, _ in rows]
        colors = ["#d95f02" if name.startswith("llvm") else "#7570b3" if name.startswith("torch")
                  else "#999999" if "floor" in name else "#1b9e77" for name in names]
        absolute = sec["title"].startswith("call cost")       # microseconds per call
        values = [best * 1e6 for _, best, _ in rows] if absolute else speed
        bars = ax.barh(range(len(rows)), values, color=colors, height=0.7)
        for bar, name, v in zip(bars, names, values):
            if "floor" in name:
                bar.set_hatch("//")
                bar.set_alpha(0.6)
            label = f"{v:.1f} us" if absolute else f"{v:.2f}x"
            ax.text(bar.get_width() * 1.03, bar.get_y() + bar.get_height() / 2, label, va="center", fontsize=7)
        ax.set_yticks(range(len(rows)), names, fontsize=7)
        ax.invert_yaxis()
        if absolute:
            ax.set_xlim(0, max(values) * 1.25)
            ax.set_title(f"{sec['title']}: microseconds per call, lower is better", fontsize=8)
        else:
            ax.set_xscale("log")
            ax.axvline(1.0, color="black", linewidth=0.6)
            ax.set_xlim(min(speed) / 1.6, max(speed) * 2.2)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}x"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_title(f"{sec['title']}  (speed vs {sec['base']}, higher is better)", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
    h = results.get("header", {})
    fig.suptitle(f"dynjit llvm backend: {h.get('threads')} threads, numpy {h.get('numpy')}"
                 + (f", torch {h['torch']}" if h.get("torch") else ""), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    fig.savefig(path, dpi=130)
    plt.close(fig)
