#!/usr/bin/env python3
"""Prints Markdown tables from tandem bench/tune JSON results (for docs/PERFORMANCE.md).

  scripts/results-table.py FILE.json [--tuned | --scenario-targets] [--policies p1,p2,...]
"""
import argparse
import json

from tandem_results import final_round, geometric_mean, measured_cases, percent as pct, size, times


def scenario_targets(rows):
    """Issue targets for training scenarios: the tuned policy against one stream, against naive
    two-stream overlap, and against the ideal bound."""
    print("| workload | collective | count | t_compute ms | t_comm ms | t_chain ms | t_seq ms | naive ms | tuned policy "
          "| tuned ms | t_bound ms | × one stream | × naive | tuned / bound |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    # A merged file may tune one scenario at several configurations, which share workload,
    # collective and bytes but not their baselines.
    for rs in measured_cases(rows):
        naive, _, tuned = final_round(rs)
        w, c = tuned["workload"], tuned["collective"]
        # Results from before the chain was measured (t_chain_ms absent) bound by the larger side alone.
        chain = tuned.get("t_chain_ms")
        chain_text = f"{chain:.2f}" if chain else "–"
        print(f"| {w} | {c} | {tuned['count']} | {tuned['t_compute_ms']:.2f} | {tuned['t_comm_ms']:.2f} | {chain_text} | {tuned['t_seq_ms']:.2f} | "
              f"{naive['t_overlap_ms']:.2f} | `{tuned['policy']}` | {tuned['t_overlap_ms']:.2f} | {tuned['t_bound_ms']:.2f} | "
              f"{tuned['t_seq_ms'] / tuned['t_overlap_ms']:.3f} | {naive['t_overlap_ms'] / tuned['t_overlap_ms']:.3f} | "
              f"{tuned['t_overlap_ms'] / tuned['t_bound_ms']:.3f} |")


def one_gpu_table(rows):
    """A one-GPU run: each policy's compute tax against the workload alone in the default configuration."""
    print("| workload | count | policy | t_compute ms | t_policy ms (min..max) | compute tax % | wrong |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['workload']} | {r['count']} | `{r['policy']}` | {r['t_compute_ms']:.3f} | "
              f"{r['t_compute_policy_ms']:.3f} ({r['t_compute_policy_min_ms']:.3f}..{r['t_compute_policy_max_ms']:.3f}) | "
              f"{pct(r['compute_tax'])} | {r['wrong']} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--tuned", action="store_true", help="tune results: naive / paper / tuned per case")
    ap.add_argument("--policies", help="only these policies (comma-separated)")
    ap.add_argument("--scenario-targets", action="store_true",
                    help="tune results of training scenarios: tuned against one stream, naive and the bound")
    args = ap.parse_args()
    doc = json.load(open(args.file))
    print(f"<!-- {args.file}: {doc['gpus']} x {doc['gpu']}, NCCL {doc['nccl']}, CUDA {doc['cuda']}, "
          f"commit {doc['commit']}, {doc['date']} -->")
    for command in doc.get("commands") or [doc["command"]]:  # merged files list every run's command
        print(f"`{command}`  ")
    print()
    rows = doc["rows"]
    if args.policies:
        keep = set(args.policies.split(","))
        rows = [r for r in rows if r["policy"] in keep]
    if args.scenario_targets:
        scenario_targets(rows)
        return
    if doc.get("one_gpu"):
        one_gpu_table(rows)
        return
    if args.tuned:
        print("| workload | collective | size | count | naive eff. % | paper policy | paper eff. % | tuned policy | tuned eff. % | tuned reduction % | t_seq ms | t_overlap ms | t_bound ms |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        cases = measured_cases(rows)
        for rs in cases:
            naive, paper, tuned = final_round(rs)
            w, c, b = tuned["workload"], tuned["collective"], tuned["bytes"]
            print(f"| {w} | {c} | {size(b)} | {tuned['count']} | {pct(naive['efficiency'])} | `{paper['policy']}` | "
                  f"{pct(paper['efficiency'])} | `{tuned['policy']}` | {pct(tuned['efficiency'])} | "
                  f"{pct(tuned['reduction'])} | {tuned['t_seq_ms']:.3f} | {tuned['t_overlap_ms']:.3f} | {tuned['t_bound_ms']:.3f} |")
        reductions = [final_round(rs)[2]["reduction"] for rs in cases]
        print(f"\ngeometric-mean tuned reduction over {len(reductions)} cases: {pct(geometric_mean(reductions))} %")
        return
    print("| workload | collective | size | count | policy | t_compute ms | t_comm ms | t_seq ms | t_overlap ms | t_bound ms | reduction % | efficiency % | compute slowdown | comm slowdown | spread % | wrong |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        spread = (r["t_overlap_max_ms"] - r["t_overlap_min_ms"]) / r["t_overlap_ms"] * 100
        print(f"| {r['workload']} | {r['collective']} | {size(r['bytes'])} | {r['count']} | `{r['policy']}` | "
              f"{r['t_compute_ms']:.3f} | {r['t_comm_ms']:.3f} | {r['t_seq_ms']:.3f} | {r['t_overlap_ms']:.3f} | "
              f"{r['t_bound_ms']:.3f} | {pct(r['reduction'])} | {pct(r['efficiency'])} | {times(r['compute_slowdown'])} | "
              f"{times(r['comm_slowdown'])} | {spread:.1f} | {r['wrong']} |")


if __name__ == "__main__":
    main()
