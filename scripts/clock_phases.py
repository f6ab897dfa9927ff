#!/usr/bin/env python3
"""SM clock, power and clock-event reasons during phases of a run: measures whether a case is
limited by the GPU's power budget rather than by SMs, HBM or links.

  nvidia-smi --query-gpu=index,clocks.sm,power.draw,clocks_event_reasons.active \
      --format=csv,noheader,nounits -lms 20 | clock_phases.py stamp > samples.txt &
  some_command 2>&1 | clock_phases.py stamp --prefix "policy-x " > marks.txt
  clock_phases.py summarize samples.txt marks.txt [--after "[1/1]"]

`stamp` prefixes every stdin line with the wall time. `summarize` takes, for each mark line (or each
that contains --after; "end of run" lines only close a phase), the samples from that mark to the
next mark and prints the median SM clock (MHz), power (W) and the share of samples with the SW power
cap reason set, per GPU, and the GPU-idle samples as the floor.
"""
import argparse
import json
import re
import statistics
import sys
import time

GPU_IDLE = 0x1  # nvmlClocksEventReasonGpuIdle
SW_POWER_CAP = 0x4  # nvmlClocksEventReasonSwPowerCap
HW_SLOWDOWN = 0x8


def stamp(prefix):
    for line in sys.stdin:
        sys.stdout.write(f"{time.time():.3f} {prefix}{line}")
        sys.stdout.flush()


def read_samples(path):
    samples = []
    with open(path) as f:
        for line in f:
            t, rest = line.split(" ", 1)
            fields = [x.strip() for x in rest.split(",")]
            if len(fields) < 4:
                continue
            try:
                reasons = int(fields[3], 16) if fields[3].startswith("0x") else 0
                samples.append((float(t), int(fields[0]), float(fields[1]), float(fields[2]), reasons))
            except ValueError:
                continue
    return samples


def bench_provenance(bench_log_path, commands):
    """What the JSON needs to stand on its own: the build, GPUs and date from the runs' headers
    (`# tandem bench 0.1.0 (commit)`, `# gpus ...`, `# date ...`), the commands, and their rows."""
    lines = open(bench_log_path).read().splitlines()
    first = lambda prefix: next((l[len(prefix):].strip() for l in lines if l.startswith(prefix)), "")
    version = first("# tandem bench")
    gpus = first("# gpus")
    match = re.match(r"(\d+) x (.+?), driver CUDA ([\d.]+).*NCCL ([\d.]+)", gpus)
    out = {
        "commit": version[version.find("(") + 1:version.find(")")] if "(" in version else "",
        "date": first("# date"),
        "command": ["tandem bench " + c for c in commands],
        "bench_rows": [l for l in lines if l.startswith("#workload") or (l.startswith(" ") and l[1:2].isalpha())],
    }
    if match:
        out.update(gpus=int(match.group(1)), gpu=match.group(2), driver=match.group(3), nccl=match.group(4))
    return out


def summarize(samples_path, marks_path, after, json_path=None, provenance=None):
    samples = read_samples(samples_path)
    marks = []
    with open(marks_path) as f:
        for line in f:
            t, text = line.rstrip("\n").split(" ", 1)
            marks.append((float(t), text))
    print(f"{'phase':64s} gpu    n  sm_MHz  power_W  power_capped%  hw_slowdown%")
    phases = []
    # The floor the power model subtracts: samples the driver flags GPU idle (before the first run).
    windows = [("idle (GPU idle clock-event reason)", None, None)]
    for i, (start, text) in enumerate(marks):
        if after not in text or text.endswith("end of run"):
            continue
        label = " ".join(text.replace("tandem bench:", " ").split())
        if after:
            label = " ".join(label.replace(after, " ").split())
        end = marks[i + 1][0] if i + 1 < len(marks) else float("inf")
        windows.append((label, start, end))
    for label, start, end in windows:
        for gpu in sorted({s[1] for s in samples}):
            if start is None:
                window = [s for s in samples if s[1] == gpu and s[4] & GPU_IDLE]
            else:
                window = [s for s in samples if s[1] == gpu and start <= s[0] < end]
            if not window:
                continue
            phase = {
                "phase": label,
                "gpu": gpu,
                "samples": len(window),
                "sm_clock_mhz": statistics.median(s[2] for s in window),
                "power_w": statistics.median(s[3] for s in window),
                "sw_power_cap_share": sum(1 for s in window if s[4] & SW_POWER_CAP) / len(window),
                "hw_slowdown_share": sum(1 for s in window if s[4] & HW_SLOWDOWN) / len(window),
            }
            phases.append(phase)
            print(f"{label[:64]:64s} {gpu:3d} {len(window):4d} {phase['sm_clock_mhz']:7.0f} {phase['power_w']:8.0f} "
                  f"{100 * phase['sw_power_cap_share']:13.0f} {100 * phase['hw_slowdown_share']:13.0f}")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"phases": phases, **(provenance or {})}, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("stamp")
    s.add_argument("--prefix", default="")
    m = sub.add_parser("summarize")
    m.add_argument("samples")
    m.add_argument("marks")
    m.add_argument("--after", default="", help="only the marks containing this text start a phase")
    m.add_argument("--json", help="also write the phases as JSON")
    m.add_argument("--bench-log", help="the runs' tandem bench output: commit, GPUs, date and rows go into the JSON")
    m.add_argument("--run", action="append", default=[], help="a run's tandem bench arguments (repeat per run)")
    args = parser.parse_args()
    if args.command == "stamp":
        stamp(args.prefix)
    else:
        provenance = bench_provenance(args.bench_log, args.run) if args.bench_log else None
        summarize(args.samples, args.marks, args.after, args.json, provenance)


if __name__ == "__main__":
    main()
