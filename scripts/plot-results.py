#!/usr/bin/env python3
"""Plots tandem bench/tune JSON results (docs/BENCH_JSON.md) as SVG or PNG figures.

  scripts/plot-results.py FILE.json [FILE2.json ...] --out DIR [--format svg|png]
                          [--metric efficiency|reduction|time] [--targets]

Writes, for each FILE (named after it, without .json), and prints the paths:
  FILE-WORKLOAD-COLLECTIVE-METRIC  microbenchmarks (gemm, tiled-gemm, stream): one bar per policy,
                                   sequential left out; where the file holds several sizes of the
                                   case (-b/-e), the metric against size, one line per policy
  FILE-summary-METRIC              every microbenchmark case: naive (concurrent), the paper's best
                                   (priority or shape:N+priority) and the tuned policy of tandem tune
                                   (tandem bench: the best measured), with the geometric-mean
                                   reduction of the tuned policies in the title
  FILE-scenarios                   training scenarios (rows with bound_fraction): speed-up over one
                                   stream (naive, tuned), over naive, and tuned time / bound; with
                                   --targets, the tandem project's own targets (1.15, 1.05, 1.10) too
Cases, policies and scenarios are drawn sorted by name. Every bar carries an error bar: the same
metric at the fastest and the slowest timed step of its row (t_overlap_min_ms, t_overlap_max_ms),
every other time at its median. A value far outside the others (a policy that made a case several
times slower) is clipped to the axis range, hatched, and its value printed on the bar, so that it
does not squash the range the other bars share. Every figure names the GPU, GPU count, NCCL version,
commit and date of its file. SVG text stays text and the output is deterministic, so regenerated
figures diff cleanly.
"""
import argparse
import json
import os
import shlex
import sys
from collections import Counter, defaultdict

from tandem_results import final_round, geometric_mean, is_paper_policy, measured_cases, size

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot-results: matplotlib is missing: install python3-matplotlib (scripts/install-deps.sh)")

plt.rcParams.update({"svg.hashsalt": "tandem", "svg.fonttype": "none", "font.size": 8,
                     "axes.spines.top": False, "axes.spines.right": False})

HEADER_FIELDS = ("gpu", "gpus", "nccl", "commit", "date")
ROW_FIELDS = ("workload", "collective", "bytes", "count", "policy", "tuned", "t_compute_ms", "t_seq_ms",
              "t_overlap_ms", "t_bound_ms", "reduction", "efficiency")
COLOURS = {"naive": "#e69f00", "paper": "#56b4e9", "tuned": "#009e73", "best": "#009e73", None: "#c8c8c8"}
ROLE_NAMES = {"naive": "naive (concurrent)", "paper": "paper (shaping + priority, its best)",
              "tuned": "tuned (tandem tune)", "best": "best measured"}
METRICS = {"efficiency": "efficiency, % of the ideal saving", "reduction": "reduction against one stream, %",
           "time": "t_overlap, ms (lower is better)"}
# The tandem project's goals for its training scenarios (docs/PERFORMANCE.md), drawn only with --targets:
# they say nothing about anyone else's run.
TARGETS = {"speedup": 1.15, "over_naive": 1.05, "of_bound": 1.10}


def load_results(path):
    """The JSON document of one result file, checked for what the figures read; exits with one line
    naming the file and what is wrong otherwise."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except FileNotFoundError:
        sys.exit(f"plot-results: {path}: no such file")
    except json.JSONDecodeError as e:
        sys.exit(f"plot-results: {path}: not JSON ({e.msg}, line {e.lineno})")
    except (OSError, ValueError) as e:
        sys.exit(f"plot-results: {path}: cannot read it ({e})")
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        sys.exit(f"plot-results: {path}: no `rows` list: not a tandem bench/tune result (docs/BENCH_JSON.md)")
    if not doc["rows"]:
        sys.exit(f"plot-results: {path}: `rows` is empty")
    missing = [k for k in HEADER_FIELDS if k not in doc]
    if missing:
        sys.exit(f"plot-results: {path}: the header lacks {', '.join(missing)} (docs/BENCH_JSON.md)")
    for i, r in enumerate(doc["rows"]):
        missing = [k for k in ROW_FIELDS if not isinstance(r, dict) or k not in r]
        if missing:
            sys.exit(f"plot-results: {path}: row {i} lacks {', '.join(missing)} (docs/BENCH_JSON.md)")
    return doc


def provenance(doc, path):
    merged = f", merged from {len(doc['commands'])} runs" if len(doc.get("commands") or []) > 1 else ""
    return (f"{doc['gpus']} × {doc['gpu']}, NCCL {doc['nccl']}, commit {doc['commit']}, {doc['date']} "
            f"({os.path.basename(path)}{merged})")


def picks(case):
    """Role -> row: tandem tune's final round (naive, paper, tuned), or in a bench result concurrent,
    the paper's best policy and the best measured policy (best)."""
    if any(r["tuned"] for r in case):
        try:
            return dict(zip(("naive", "paper", "tuned"), final_round(case)))
        except (StopIteration, ValueError):  # no final round, nor concurrent and the paper's policy: as bench
            pass
    overlapped = [r for r in case if r["policy"] != "sequential"]
    by_time = lambda r: r["t_overlap_ms"]
    found = {"naive": next((r for r in overlapped if r["policy"] == "concurrent"), None),
             "paper": min((r for r in overlapped if is_paper_policy(r["policy"])), key=by_time, default=None),
             "best": min(overlapped, key=by_time, default=None)}
    return {role: r for role, r in found.items() if r}


def policy_rows(case):
    """(policy, row, roles) per non-sequential policy, sorted by policy name; the final round's row
    replaces the search's where tandem tune measured a policy twice."""
    chosen = picks(case)
    rows = {r["policy"]: r for r in case if r["policy"] != "sequential" and not r.get("tune_role")}
    roles = defaultdict(list)
    for role, r in chosen.items():  # naive, paper, then tuned or best: the last role wins the colour
        rows[r["policy"]] = r
        roles[r["policy"]].append(role)
    return [(policy, rows[policy], roles[policy]) for policy in sorted(rows)]


def case_name(case):
    return (case[0]["workload"], case[0]["collective"], case[0]["bytes"])


def metric_of_time(r, metric):
    """The metric as a function of the overlapped time, every other time of the row at its median;
    None where the row has no such metric (efficiency when t_seq <= t_bound)."""
    if metric == "time":
        return lambda t: t
    if r[metric] is None:  # undefined in the run (docs/BENCH_JSON.md): nothing to draw
        return None
    if metric == "reduction":
        return lambda t: 100 * (1 - t / r["t_seq_ms"])
    if r["efficiency"] is None or r["t_seq_ms"] <= r["t_bound_ms"]:
        return None
    return lambda t: 100 * (r["t_seq_ms"] - t) / (r["t_seq_ms"] - r["t_bound_ms"])


def metric_value(r, metric):
    if metric == "time":
        return r["t_overlap_ms"]
    return None if r[metric] is None else 100 * r[metric]


def spread_interval(r, of_time):
    """(low, high) of a metric over the row's spread: of_time at its fastest and its slowest step;
    None for results written without the spread."""
    if of_time is None or "t_overlap_min_ms" not in r or "t_overlap_max_ms" not in r:
        return None
    ends = (of_time(r["t_overlap_min_ms"]), of_time(r["t_overlap_max_ms"]))
    return min(ends), max(ends)


def axis_limits(bars, anchors):
    """(low, high) of the range an axis shows, for bars given as (value, spread or None): every value,
    anchor (zero or one, the reference lines) and spread, except outliers. A value is an outlier when
    the gap between it and the rest is wider than the whole range of the rest: such a value would
    squash every other bar into a sliver. A spread reaching farther past the others than their whole
    range is cut off the same way."""
    values = [v for v, _ in bars]
    inside = sorted(values)
    fixed = list(anchors)

    def span(vs):
        return max(vs + fixed) - min(vs + fixed)

    while len(inside) > 2:
        low_gap = min(inside[1:] + fixed) - inside[0]
        high_gap = inside[-1] - max(inside[:-1] + fixed)
        if low_gap >= high_gap and low_gap > span(inside[1:]) > 0:
            inside = inside[1:]
        elif high_gap > low_gap and high_gap > span(inside[:-1]) > 0:
            inside = inside[:-1]
        else:
            break
    lo, hi = min(inside + fixed), max(inside + fixed)
    width = hi - lo
    for value, spread in bars:
        if spread is not None and lo <= value <= hi:
            lo = min(lo, max(spread[0], lo - width))
            hi = max(hi, min(spread[1], hi + width))
    pad = 0.05 * (hi - lo or 1)
    clipped_low, clipped_high = any(v < lo for v in values), any(v > hi for v in values)
    # A clipped bar ends a little past the others, so that it reads as longer than any of them.
    return lo - (3 if clipped_low else 1) * pad, hi + (3 if clipped_high else 1) * pad


def number_text(value, metric):
    return f"{value:.3f}" if metric == "time" else f"{value:.1f}"


def spread_bar(ax, y, value, interval, limits, gid, color, label=None, text="", metric="efficiency", base=0,
               height=0.7):
    """One horizontal bar from base to value with its spread as an error bar, both clipped to limits
    (an outlier's bar is hatched and ends at the limit, its value printed on it); the value and text
    beside the bar, past its error bar, on the side away from the labels."""
    lo, hi = limits
    shown = min(max(value, lo), hi)
    clipped = shown != value
    ax.barh(y, shown - base, left=base, height=height, color=color, gid=gid, label=label,
            hatch="///" if clipped else None, edgecolor="white" if clipped else None, linewidth=0)
    end = shown
    if interval is not None:
        elo, ehi = (min(max(v, lo), hi) for v in interval)
        bars = ax.errorbar(shown, y, xerr=[[max(shown - elo, 0)], [max(ehi - shown, 0)]], fmt="none",
                           ecolor="black", elinewidth=0.6, capsize=1.5)
        bars.lines[2][0].set_gid("err-" + gid)
        end = max(shown, ehi)
    number = number_text(value, metric)
    if clipped:  # on the bar, from its clipped end inwards: the axis does not reach the value
        low = value < lo
        ax.text(shown, y, f" {number}, clipped " if low else f" clipped, {number} ", va="center",
                ha="left" if low else "right", fontsize=6.5, gid="clipped-" + gid)
        number = ""
    if number or text.strip():
        ax.text(max(end, base), y, f" {number}{text}" if number else f" {text.strip()}", va="center", fontsize=6.5)


def reference_lines(r, metric):
    """(label, value) lines a row's metric is read against."""
    if metric == "efficiency":
        return [("100 %: fully hidden", 100.0)]
    if metric == "reduction":
        return [("bound: 1 − t_bound / t_seq", 100 * (1 - r["t_bound_ms"] / r["t_seq_ms"]))]
    return [("one stream: t_seq", r["t_seq_ms"]), ("bound: t_bound", r["t_bound_ms"])]


def marked_line(ax, x, label, style="--"):
    """A dashed vertical line labelled above the axes."""
    ax.axvline(x, color="black", lw=0.8, ls=style)
    ax.text(x, 1.0, label, transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=7)


def legend_beside(ax, handles=None):
    ax.legend(*(handles or ax.get_legend_handles_labels()), loc="upper left", bbox_to_anchor=(1.01, 1.0),
              fontsize=7, frameon=False)


def titled_figure(title, doc, path, width, height, **subplots):
    fig, axes = plt.subplots(figsize=(width, height), layout="constrained", **subplots)
    fig.suptitle(f"{title}\n{provenance(doc, path)}", fontsize=9)
    return fig, axes


def plot_policy_bars(case, metric, doc, path):
    """One horizontal bar per policy of one measured case, sorted by name, the naive, paper and tuned
    ones coloured."""
    bars, r0 = policy_rows(case), case[0]
    title = f"{r0['workload']} × {r0['collective']}, {size(r0['bytes'])}, count {r0['count']}: {METRICS[metric]}"
    if any(r.get("tune_role") for r in case):
        title += "\ngrey: the search's candidates; coloured: its final round, measured again together"
    fig, ax = titled_figure(title, doc, path, 8, 1.5 + 0.24 * len(bars))
    references = reference_lines(r0, metric)
    drawn = [(metric_value(r, metric), spread_interval(r, metric_of_time(r, metric))) for _, r, _ in bars]
    limits = axis_limits([d for d in drawn if d[0] is not None], [0] + [v for _, v in references])
    for i, ((policy, r, roles), (value, spread)) in enumerate(zip(bars, drawn)):
        y = len(bars) - 1 - i
        if value is None:
            ax.text(0, y, " n/a", va="center")
            continue
        spread_bar(ax, y, value, spread, limits, f"bar-{'-'.join(roles) or 'other'}-{i}",
                   COLOURS[roles[-1] if roles else None], metric=metric)
    ax.set_yticks(range(len(bars)))
    ax.set_yticklabels([p + (f" ({', '.join(roles)})" if roles else "") for p, _, roles in reversed(bars)])
    for (label, value), style in zip(references, ("--", ":")):
        marked_line(ax, value, label, style)
    ax.axvline(0, color="black", lw=0.5)
    ax.set_xlim(*limits)
    ax.set_xlabel(METRICS[metric])
    return fig


def plot_size_sweep(cases, metric, doc, path):
    """The metric against size, one line per policy (sorted by name) with the spread as error bars;
    markers on the paper's and the tuned (or best) policy at each size. A point off the axis range
    sits on its edge, its value printed beside it."""
    cases = sorted(cases, key=lambda c: c[0]["bytes"])
    r0 = cases[0][0]
    title = f"{r0['workload']} × {r0['collective']}: {METRICS[metric]} against size"
    fig, ax = titled_figure(title, doc, path, 8, 4.5)
    lines = defaultdict(list)
    for case in cases:
        for policy, r, _ in policy_rows(case):
            if metric_value(r, metric) is not None:
                lines[policy].append((r["bytes"], metric_value(r, metric),
                                      spread_interval(r, metric_of_time(r, metric))))
    references = [(label, [dict(reference_lines(c[0], metric))[label] for c in cases])
                  for label, _ in reference_lines(r0, metric)]
    lo, hi = axis_limits([(v, spread) for points in lines.values() for _, v, spread in points],
                         [0] + [v for _, vs in references for v in vs])
    clip = lambda v: min(max(v, lo), hi)
    for i, policy in enumerate(sorted(lines)):
        points, naive = lines[policy], policy == "concurrent"
        xs, ys = [b for b, _, _ in points], [clip(v) for _, v, _ in points]
        errors = [[y - clip(s[0]) if s else 0 for y, (_, _, s) in zip(ys, points)],
                  [clip(s[1]) - y if s else 0 for y, (_, _, s) in zip(ys, points)]]
        colour = COLOURS["naive"] if naive else plt.cm.tab10(i % 10)
        ax.plot(xs, ys, marker="o", ms=3, lw=2.2 if naive else 1.2, gid=f"line-{i}", color=colour,
                label=policy + (" (naive)" if naive else ""))
        bars = ax.errorbar(xs, ys, yerr=[[max(e, 0) for e in errors[0]], [max(e, 0) for e in errors[1]]],
                           fmt="none", ecolor=colour, elinewidth=0.6, capsize=1.5)
        bars.lines[2][0].set_gid(f"err-line-{i}")
        for x, (_, v, _) in zip(xs, points):
            if clip(v) != v:
                ax.annotate(f"{number_text(v, metric)}, clipped", (x, clip(v)), fontsize=6.5, ha="center",
                            va="top" if v < lo else "bottom", gid=f"clipped-line-{i}")
    for role, marker in (("paper", "D"), ("tuned", "*"), ("best", "*")):
        points = [(c[0]["bytes"], metric_value(picks(c)[role], metric)) for c in cases if role in picks(c)]
        points = [(b, clip(v)) for b, v in points if v is not None]
        if points:
            ax.scatter(*zip(*points), marker=marker, s=90, facecolors="none", edgecolors=COLOURS[role], lw=1.5,
                       zorder=3, label=f"{ROLE_NAMES[role]} at each size")
    for (label, values), style in zip(references, ("--", ":")):
        ax.plot([c[0]["bytes"] for c in cases], values, color="black", lw=0.8, ls=style, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks([c[0]["bytes"] for c in cases], [size(c[0]["bytes"]) for c in cases])
    ax.minorticks_off()
    ax.set_ylim(lo, hi)
    ax.set_xlabel("collective size (nccl-tests convention)")
    ax.set_ylabel(METRICS[metric])
    legend_beside(ax)
    return fig


def geomean_reduction(cases):
    geomean = geometric_mean([picks(c)["tuned"]["reduction"] for c in cases])
    if geomean is None:
        return "geometric-mean reduction n/a (a tuned reduction ≤ 0)"
    return f"geometric-mean reduction of the tuned policies {100 * geomean:.1f} %"


def plot_summary(cases, metric, doc, path):
    """Every microbenchmark case, sorted by name: naive, paper and tuned (or best measured) side by side."""
    cases = sorted(cases, key=case_name)  # stable: one case from two merged runs keeps its file order
    tuned = all("tuned" in picks(c) for c in cases)
    roles = ("naive", "paper", "tuned" if tuned else "best")
    per_pair = Counter((c[0]["workload"], c[0]["collective"]) for c in cases)
    title = f"naive vs paper vs {'tuned' if tuned else 'best measured'}: {METRICS[metric]}"
    title += f"; {geomean_reduction(cases)}" if tuned else ""
    fig, ax = titled_figure(title, doc, path, 9, 1.2 + 0.62 * len(cases))
    drawn = [(metric_value(r, metric), spread_interval(r, metric_of_time(r, metric)))
             for c in cases for role, r in picks(c).items() if role in roles]
    references = [v for c in cases for _, v in reference_lines(c[0], metric)]
    limits = axis_limits([d for d in drawn if d[0] is not None], [0] + references)
    for j, case in enumerate(cases):
        chosen, y, r0 = picks(case), len(cases) - 1 - j, case[0]
        for k, role in enumerate(roles):
            r = chosen.get(role)
            value = metric_value(r, metric) if r else None
            if value is None:
                continue
            spread_bar(ax, y + 0.27 * (1 - k), value, spread_interval(r, metric_of_time(r, metric)), limits,
                       f"bar-{role}-{j}", COLOURS[role], label=ROLE_NAMES[role] if j == 0 else None,
                       text="" if role == "naive" else f"  {r['policy']}", metric=metric, height=0.26)
        for (label, value), style in zip(reference_lines(r0, metric), ("--", ":")):
            ax.vlines(value, y - 0.45, y + 0.45, color="black", lw=0.8, ls=style, label=label if j == 0 else None)
    ax.set_yticks(range(len(cases)))
    ax.set_yticklabels([f"{c[0]['workload']} × {c[0]['collective']}" +
                        (f", {size(c[0]['bytes'])}" if per_pair[(c[0]['workload'], c[0]['collective'])] > 1 else "")
                        for c in reversed(cases)])
    ax.axvline(0, color="black", lw=0.5)
    ax.set_xlabel(METRICS[metric])
    lo, hi = limits
    ax.set_xlim(lo, hi + 0.3 * (hi - lo))  # room for the policies' names
    legend_beside(ax)
    return fig


# Options that say where a run wrote or how long it measured, not what it ran.
NOT_CONFIGURATION = {"--json", "--out", "--workload", "-n", "--iters", "--warmup", "--timeout", "-q"}


def command_options(command):
    """The configuration options of one tandem command line, each with its value: {"--in-place",
    "--micro-batches 4", ...}."""
    words, options = shlex.split(command), set()
    for i, word in enumerate(words):
        if not word.startswith("-") or word in NOT_CONFIGURATION:
            continue
        value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("-") else None
        options.add(word if value is None else f"{word} {value}")
    return options


def scenario_labels(cases, commands=None):
    """One label per scenario case: the workload, and where one workload appears more than once, what
    tells its runs apart: the options of its run's command that its other runs lack (a merged file
    from scripts/gpu-check.sh scenario-tune holds one command per case), else its count."""
    workloads = [c[0]["workload"] for c in cases]
    repeated = {w for w in workloads if workloads.count(w) > 1}
    options = [command_options(c) for c in commands] if commands and len(commands) == len(cases) else None
    counts = defaultdict(set)
    for c in cases:
        counts[c[0]["workload"]].add(c[0]["count"])
    labels, seen = [], defaultdict(int)
    for i, c in enumerate(cases):
        w = c[0]["workload"]
        label = w
        if w in repeated and options:
            common = set.intersection(*(options[j] for j, x in enumerate(workloads) if x == w))
            own = sorted(options[i] - common)
            label += f" ({', '.join(own)})" if own else ""
        elif len(counts[w]) > 1:
            label += f" (count {c[0]['count']})"
        seen[label] += 1
        labels.append(label + (f" #{seen[label]}" if seen[label] > 1 else ""))
    return labels


def plot_scenarios(cases, doc, path, targets=False):
    """Training scenarios, sorted by label: × one stream for naive and tuned, tuned × naive, and tuned
    time over the bound; with targets, the tandem project's own targets as dashed lines."""
    labels = scenario_labels(cases, doc.get("commands"))
    order = sorted(range(len(cases)), key=lambda i: labels[i])  # stable: equal labels keep file order
    labels, chosen = [labels[i] for i in order], [picks(cases[i]) for i in order]
    best = "tuned" if all("tuned" in p for p in chosen) else "best"
    title = f"training scenarios: naive and {ROLE_NAMES[best]} against one stream, naive and the dependency-chain bound"
    fig, axes = titled_figure(title, doc, path, 11, 1.3 + 0.55 * len(cases), ncols=3, sharey=True)

    # (x label, target, series); a series: (role, roles it needs, the ratio at an overlapped time t of
    # the role's row, every other time at its median).
    panels = (("× one stream (t_seq / t_overlap)", TARGETS["speedup"],
               [("naive", ("naive",), lambda p, t: p["naive"]["t_seq_ms"] / t),
                (best, (best,), lambda p, t: p[best]["t_seq_ms"] / t)]),
              ("× naive (t_naive / t_overlap)", TARGETS["over_naive"],
               [(best, ("naive", best), lambda p, t: p["naive"]["t_overlap_ms"] / t)]),
              ("of bound (t_overlap / t_bound), lower is better", TARGETS["of_bound"],
               [(best, (best,), lambda p, t: t / p[best]["t_bound_ms"])]))
    for n, (ax, (xlabel, target, series)) in enumerate(zip(axes, panels)):
        drawn = [(j, k, role, p[role], (lambda t, p=p, ratio=ratio: ratio(p, t)))
                 for j, p in enumerate(chosen) for k, (role, needs, ratio) in enumerate(series)
                 if all(need in p for need in needs)]
        limits = axis_limits([(of_time(r["t_overlap_ms"]), spread_interval(r, of_time)) for *_, r, of_time in drawn],
                             [1] + ([target] if targets else []))
        for j, k, role, r, of_time in drawn:
            y = len(chosen) - 1 - j + (0.2 * (1 - 2 * k) if len(series) > 1 else 0)
            spread_bar(ax, y, of_time(r["t_overlap_ms"]), spread_interval(r, of_time), limits,
                       f"bar-{role}-{n}-{j}", COLOURS[role], label=ROLE_NAMES[role] if j == 0 else None,
                       metric="time", base=1, height=0.36)
        ax.axvline(1, color="black", lw=0.5)
        if targets:
            marked_line(ax, target, f"target {target:.2f}")
        ax.set_xlim(*limits)
        ax.set_xlabel(xlabel)
    legend_beside(axes[-1], axes[0].get_legend_handles_labels())
    axes[0].set_yticks(range(len(cases)))
    axes[0].set_yticklabels([f"{label}\n{p[best]['policy'] if best in p else ''}"
                             for label, p in reversed(list(zip(labels, chosen)))])
    return fig


def figures(doc, path, metric, targets=False):
    """(name, figure) for every figure of one result file."""
    stem = os.path.splitext(os.path.basename(path))[0]
    micro = measured_cases([r for r in doc["rows"] if "bound_fraction" not in r])
    scenarios = measured_cases([r for r in doc["rows"] if "bound_fraction" in r])
    by_pair = defaultdict(list)  # (workload, collective) -> series of cases of distinct sizes
    for case in micro:
        series = by_pair[(case[0]["workload"], case[0]["collective"])]
        free = next((s for s in series if all(c[0]["bytes"] != case[0]["bytes"] for c in s)), None)
        series.append([case]) if free is None else free.append(case)
    for (workload, collective), series in by_pair.items():
        for k, cases in enumerate(series):
            # k > 0: the same case again, from another run merged into the file
            name = f"{stem}-{workload}-{collective}-{metric}" + (f"-{k + 1}" if k else "")
            yield name, (plot_policy_bars(cases[0], metric, doc, path) if len(cases) == 1
                         else plot_size_sweep(cases, metric, doc, path))
    if micro:
        yield f"{stem}-summary-{metric}", plot_summary(micro, metric, doc, path)
    if scenarios:
        yield f"{stem}-scenarios", plot_scenarios(scenarios, doc, path, targets)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", metavar="FILE.json")
    ap.add_argument("--out", required=True, help="folder for the figures (created if missing)")
    ap.add_argument("--format", choices=("svg", "png"), default="svg")
    ap.add_argument("--metric", choices=tuple(METRICS), default="efficiency", help="microbenchmark figures")
    ap.add_argument("--targets", action="store_true",
                    help="draw the tandem project's own targets on the scenario figure (1.15, 1.05, 1.10)")
    args = ap.parse_args()
    docs = [(path, load_results(path)) for path in args.files]  # every file checked before any is drawn
    os.makedirs(args.out, exist_ok=True)
    for path, doc in docs:
        for name, fig in figures(doc, path, args.metric, args.targets):
            out = os.path.join(args.out, f"{name}.{args.format}")
            fig.savefig(out, bbox_inches="tight", metadata={"Date": None} if args.format == "svg" else None)
            plt.close(fig)
            print(out)


if __name__ == "__main__":
    main()
