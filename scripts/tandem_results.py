"""What scripts/results-table.py and scripts/plot-results.py share about tandem bench/tune JSON
(docs/BENCH_JSON.md): sizes as text, rows grouped by measured case, the naive, paper and tuned rows
of a tuned case, the geometric mean of the tuned reductions, and figures that may be undefined (null)."""
import math


def size(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


UNDEFINED = "\u2014"  # a figure the run could not define (null in the JSON, docs/BENCH_JSON.md)


def percent(v):
    """A fraction as a percentage, or the undefined mark for null."""
    return UNDEFINED if v is None else f"{100 * v:.1f}"


def times(v):
    """A ratio (a slowdown), or the undefined mark for null."""
    return UNDEFINED if v is None else f"{v:.2f}"


def geometric_mean(values):
    """The geometric mean of positive values (None when any is undefined or not positive)."""
    if not values or any(v is None for v in values) or min(values) <= 0:
        return None
    return math.exp(sum(map(math.log, values)) / len(values))


def measured_cases(rows):
    """Rows grouped by measured case, in file order: one (workload, collective, size) with its own
    baselines, so that a merged file holding one case from two runs or two configurations keeps them
    apart. A case's search rows (and a bench run's rows) share its baselines. tandem tune's final-round
    rows (tune_role) carry each round's own baselines and come right after their case's search rows:
    they join the case before them, unless it is another (workload, collective, size) or already has
    that role (a file cut down to final rounds)."""
    cases = {}
    last = None
    for r in rows:
        identity = (r["workload"], r["collective"], r["bytes"])
        role = r.get("tune_role")
        joins_last = (role and last is not None and last[:3] == identity and
                      all(x.get("tune_role") != role for x in cases[last]))
        if not joins_last:
            last = identity + (r["t_seq_ms"], r["t_compute_ms"])
        cases.setdefault(last, []).append(r)
    return list(cases.values())


def is_paper_policy(policy):
    """The paper's controls: priority alone, or occupancy shaping with priority."""
    return policy == "priority" or (policy.startswith("shape:") and policy.endswith("+priority"))


def final_round(rs):
    """The naive, paper and tuned rows of one case: tandem tune's final round (tune_role), or, in files
    written before tune_role existed, the search's own rows."""
    roles = {r.get("tune_role"): r for r in rs if r.get("tune_role")}
    if {"naive", "paper", "tuned"} <= roles.keys():
        return roles["naive"], roles["paper"], roles["tuned"]
    tuned = next(r for r in rs if r["tuned"])
    candidates = [r for r in rs if not r["tuned"]]
    naive = next(r for r in candidates if r["policy"] == "concurrent")
    paper_rows = [r for r in candidates if is_paper_policy(r["policy"])]
    return naive, min(paper_rows, key=lambda r: r["t_overlap_ms"]), tuned
