#!/usr/bin/env python3
"""Compares the results of old and new tandem binaries run interleaved on one machine
(scripts/gpu-check.sh ab): the same rows, 0 wrong elements, the same best policy per case where the
old run's spread separates it from the next and the new run's separates another from it, and each row's
times, new against old.

  scripts/ab-compare.py LABEL OLD.json NEW.json [LABEL OLD.json NEW.json ...]
  scripts/ab-compare.py --record FILE LABEL OLD.json NEW.json ...   # also one file of every pair
  scripts/ab-compare.py RECORD.json                                 # the comparison of such a file

Prints one table per pair and a verdict line. Exit status 1 when the rows or skipped policies differ,
an element is wrong, or a best policy reversed: the old run's spread separates it from the next, and
the new run's separates another policy ahead of it. A new best within the new run's spread of the old
one is a tie, reported and not fatal (a few samples of the shared-GPU runs' socket transport move by
more than such policies differ). Differences of time alone are reported (a new median outside the old
run's min..max is marked '*'), never fatal: they are what to look at.
"""
import json
import sys
from collections import defaultdict

from tandem_results import times


def key(r):
    return (r["workload"], r["collective"], r["bytes"], r["ranks"], r["policy"])


def case(k):
    return k[:4]


def skipped(notes):
    """(policy, workload) of each policy skipped in the default suite; the reason's words may change."""
    out = set()
    for n in notes:
        if " skipped for " in n:
            policy, rest = n.split(" skipped for ", 1)
            out.add((policy, rest.split(":", 1)[0]))
    return out


def best(rows):
    """The fastest row of a case, and whether the old run's spread separates it from the next: its
    slowest step is faster than the next policy's fastest."""
    ranked = sorted(rows, key=lambda r: r["t_overlap_ms"])
    if len(ranked) < 2:
        return ranked[0], True
    return ranked[0], ranked[0]["t_overlap_max_ms"] < ranked[1]["t_overlap_min_ms"]


def ratio(new, old):
    return f"{new / old:.3f}" if old else "-"


def compare(label, old_doc, new_doc, out):
    problems = []
    old = {key(r): r for r in old_doc["rows"]}
    new = {key(r): r for r in new_doc["rows"]}
    for k in sorted(old.keys() - new.keys()):
        problems.append(f"{label}: row only in the old run: {k}")
    for k in sorted(new.keys() - old.keys()):
        problems.append(f"{label}: row only in the new run: {k}")
    old_skips, new_skips = skipped(old_doc.get("notes", [])), skipped(new_doc.get("notes", []))
    if old_skips != new_skips:
        problems.append(f"{label}: skipped policies differ: old only {sorted(old_skips - new_skips)}, "
                        f"new only {sorted(new_skips - old_skips)}")
    for name, doc in (("old", old_doc), ("new", new_doc)):
        wrong = sum(r["wrong"] for r in doc["rows"])
        if wrong:
            problems.append(f"{label}: the {name} run has {wrong} wrong elements")

    out.append(f"\n## {label}: {len(old)} old rows, {len(new)} new rows")
    out.append("| workload | collective | bytes | ranks | policy | count old/new | t_overlap old ms (min..max) | "
               "new ms | new/old | t_seq new/old | t_compute new/old | t_comm new/old | c_slow old/new | "
               "m_slow old/new | wrong old/new |")
    out.append("|" + "---|" * 15)
    outside = 0
    for k in sorted(old.keys() & new.keys()):
        o, n = old[k], new[k]
        mark = ""
        if not o["t_overlap_min_ms"] <= n["t_overlap_ms"] <= o["t_overlap_max_ms"]:
            mark, outside = "*", outside + 1
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {o['count']}/{n['count']} | "
                   f"{o['t_overlap_ms']:.3f} ({o['t_overlap_min_ms']:.3f}..{o['t_overlap_max_ms']:.3f}) | "
                   f"{n['t_overlap_ms']:.3f}{mark} | {ratio(n['t_overlap_ms'], o['t_overlap_ms'])} | "
                   f"{ratio(n['t_seq_ms'], o['t_seq_ms'])} | {ratio(n['t_compute_ms'], o['t_compute_ms'])} | "
                   f"{ratio(n['t_comm_ms'], o['t_comm_ms'])} | {times(o['compute_slowdown'])}/{times(n['compute_slowdown'])} | "
                   f"{times(o['comm_slowdown'])}/{times(n['comm_slowdown'])} | {o['wrong']}/{n['wrong']} |")
        if o["count"] != n["count"]:
            out.append(f"  (count differs: the balance chose {o['count']} before, {n['count']} now)")

    old_cases, new_cases = defaultdict(list), defaultdict(list)
    for k, r in old.items():
        old_cases[case(k)].append(r)
    for k, r in new.items():
        new_cases[case(k)].append(r)
    out.append("\n| case | old best (separated?) | new best | same |")
    out.append("|---|---|---|---|")
    for c in sorted(old_cases.keys() & new_cases.keys()):
        old_best, separated = best(old_cases[c])
        new_best, _ = best(new_cases[c])
        same = old_best["policy"] == new_best["policy"]
        # The old best's row in the new run (a missing one is already a row problem above).
        old_best_now = next((r for r in new_cases[c] if r["policy"] == old_best["policy"]), None)
        overtaken = (not same and old_best_now is not None
                     and new_best["t_overlap_max_ms"] < old_best_now["t_overlap_min_ms"])
        verdict = "yes" if same else ("NO" if overtaken else "no (a tie in the new run)")
        out.append(f"| {' '.join(map(str, c))} | {old_best['policy']} ({'yes' if separated else 'no'}) | "
                   f"{new_best['policy']} | {verdict} |")
        if separated and overtaken:
            problems.append(f"{label}: {' '.join(map(str, c))}: the best policy was {old_best['policy']} "
                            f"(separated by the old run's spread), now {new_best['policy']} (separated by the "
                            "new run's)")
    out.append(f"\n{label}: {outside} of {len(old.keys() & new.keys())} new medians outside the old run's "
               "min..max (*)")
    return problems


def read_pairs(argv):
    """[(label, old doc, new doc)] from LABEL OLD NEW triples or one record; problems reading them."""
    if len(argv) == 1:
        with open(argv[0]) as f:
            record = json.load(f)
        return [(p["label"], p["old"], p["new"]) for p in record["pairs"]], []
    pairs, problems = [], []
    for i in range(0, len(argv), 3):
        label, old_path, new_path = argv[i:i + 3]
        try:
            with open(old_path) as f:
                old_doc = json.load(f)
            with open(new_path) as f:
                new_doc = json.load(f)
        except (OSError, ValueError) as e:
            problems.append(f"{label}: cannot read the results: {e}")
            continue
        pairs.append((label, old_doc, new_doc))
    return pairs, problems


def main(argv):
    record_path = None
    if argv[:1] == ["--record"] and len(argv) > 1:
        record_path, argv = argv[1], argv[2:]
    if not (len(argv) == 1 and not record_path) and (len(argv) < 3 or len(argv) % 3):
        sys.exit(__doc__)
    pairs, problems = read_pairs(argv)
    if record_path:
        with open(record_path, "w") as f:
            json.dump({"kind": "ab-record", "pairs": [{"label": label, "old": old, "new": new}
                                                      for label, old, new in pairs]}, f, indent=1)
    out = []
    for label, old_doc, new_doc in pairs:
        problems += compare(label, old_doc, new_doc, out)
    print("\n".join(out))
    for p in problems:
        print("DIFFERS:", p)
    print("ab:", "FAILED" if problems else "OK (same rows, 0 wrong elements, no separated best policy reversed)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
