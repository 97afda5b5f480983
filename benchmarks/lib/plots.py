"""The figures of the reports (matplotlib, Agg backend): file_sizes, the size of every file
and the file count per method (backfill.py); over_batches, a table's files and small files
after each batch per method (upsert.py)."""


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(plt, fig, path, dpi, title, **title_style):
    fig.suptitle(title, **title_style)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def file_sizes(rows, target, common_ideal, path, title, too_big):
    """Left: every file's size / target per method (scatter and box), with the target, the
    small-file line (target / 2) and `too_big` x target. Right: files written per method
    against the common ideal. rows: [{method, sizes, files}]."""
    import numpy as np

    plt = _pyplot()
    names = [r["method"] for r in rows]
    data = [np.array(r["sizes"]) / target for r in rows]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(14, 6.5), width_ratios=[2.2, 1],
                                  sharey=True, layout="constrained")
    ypos = np.arange(len(rows))[::-1]
    rng = np.random.default_rng(0)
    for y, d in zip(ypos, data):
        jitter = rng.uniform(-0.28, 0.28, size=len(d))
        ax.scatter(d, y + jitter, s=4, alpha=0.25 if len(d) > 2000 else 0.45,
                   color="tab:blue", linewidths=0, rasterized=True)
    ax.boxplot(data, positions=ypos, orientation="horizontal", widths=0.65, whis=(0, 100),
               medianprops={"color": "black", "linewidth": 2},
               boxprops={"linewidth": 1.3}, whiskerprops={"linewidth": 1.3})
    ax.set_xscale("log")
    ax.axvline(1.0, color="tab:green", lw=2, label="target")
    ax.axvline(0.5, color="tab:orange", ls="--", lw=1.5, label="target / 2 (small file)")
    ax.axvline(too_big, color="tab:red", ls="--", lw=1.5, label=f"{too_big} x target (too big)")
    ax.set_yticks(ypos, names, fontsize=11)
    ax.set_xlabel(f"file size / target ({target / 1e6:g} MB), log scale", fontsize=11)
    ax.set_title("size of every file written (box: quartiles and median, whiskers: min / max)",
                 fontsize=12)
    ax.legend(loc="lower left", fontsize=9, framealpha=0.9)
    ax.grid(axis="x", which="both", alpha=0.3)

    files = [r["files"] for r in rows]
    ax2.barh(ypos, files, color=["tab:green" if n.startswith("ours") else "tab:gray"
                                 for n in names], height=0.6)
    ax2.axvline(common_ideal, color="black", ls="--", lw=1.5,
                label=f"ideal = {common_ideal:,} files")
    for y, f in zip(ypos, files):
        ax2.text(f * 1.08, y, f"{f:,}", va="center", fontsize=10)
    ax2.set_xscale("log")
    ax2.set_xlim(min(files + [common_ideal]) * 0.5, max(files) * 4)
    ax2.set_xlabel("files written, log scale", fontsize=11)
    ax2.set_title("file count", fontsize=12)
    ax2.legend(loc="lower right", fontsize=9)
    ax2.grid(axis="x", which="both", alpha=0.3)
    _save(plt, fig, path, 120, title, fontsize=13)


def over_batches(history, styles, small_limit, path, title):
    """Left: the table's data files after each batch; right: those below the small-file
    limit; one line per method. history: [{batch, method: {files, small}}];
    styles: {method: (color, marker)}, in legend order."""
    plt = _pyplot()
    xs = [r["batch"] for r in history]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 5.5), layout="constrained")
    for meth, (color, marker) in styles.items():
        ax.plot(xs, [r[meth]["files"] for r in history], marker=marker, color=color, label=meth)
        ax2.plot(xs, [r[meth]["small"] for r in history], marker=marker, color=color, label=meth)
    ax.set_title("total data files of the table")
    ax2.set_title(f"files below the small-file limit ({small_limit / 1000:,.0f} kB)")
    for a in (ax, ax2):
        a.set_xlabel("batch (0 = the initial table, the same files for every method)")
        a.set_xticks(xs)
        a.grid(alpha=0.3)
        a.legend()
        a.set_ylim(bottom=0)
    ax.set_ylabel("files")
    _save(plt, fig, path, 110, title)

