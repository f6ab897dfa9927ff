#!/usr/bin/env bash
# Puts Megatron-LM's training entry point (pretrain_gpt.py with the megatron/ package it runs from) into
# .whl/megatron-lm/, at one pinned commit, for `scripts/gpu-check.sh megatron-lm` (docs/FRAMEWORKS.md).
# Megatron-LM's users run its scripts from a checkout; the megatron-core wheel holds megatron/core and
# megatron/training but not pretrain_gpt.py and its two helper modules, nor the Makefile with which the
# first run builds the dataset helpers. The GPU machine cannot reach GitHub, so the tree travels with the
# working tree (`carry: [".whl"]`, about 3 MiB of its 11 MiB compress into the carry's budget).
#
#   scripts/megatron-lm-source.sh                     # clones the pinned commit from GitHub
#   MEGATRON_LM_GIT=/path/to/Megatron-LM/.git scripts/megatron-lm-source.sh   # from a local clone
#
# Pinned: commit f8837c04ef6c (branch core_r0.19.0, Megatron Core 0.19.1's release branch). Its
# megatron/core differs from the megatron-core 0.19.2 wheel's (docs/FRAMEWORKS.md's other rows) in five
# files (an inference endpoint, the MoE schedule plan, multi-token prediction, a transformer-layer fix,
# the version); its megatron/training is the wheel's. Nothing of it is committed here (.whl/ is ignored).
#
# The dataset helpers: the first run's `make -C megatron/core/datasets` compiles helpers.cpp with
# pybind11 and python3-config. Where that cannot run, the helper the megatron-core wheel ships (the same
# helpers.cpp, compared byte for byte) is put beside it and made newer, so that make finds it built.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
commit=f8837c04ef6cbef6cdefb8de001aad63178aebbf
dest=$root/.whl/megatron-lm
files=(megatron pretrain_gpt.py gpt_builders.py model_provider.py LICENSE)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${MEGATRON_LM_GIT:-}" ]; then
  git_dir=$MEGATRON_LM_GIT
else
  git clone -q --filter=blob:none --no-checkout https://github.com/NVIDIA/Megatron-LM.git "$work/clone"
  git_dir=$work/clone/.git
fi
git --git-dir "$git_dir" cat-file -e "$commit^{commit}" 2> /dev/null ||
  { echo "megatron-lm-source: $git_dir has no commit $commit" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$dest"
git --git-dir "$git_dir" archive "$commit" "${files[@]}" | tar -x -C "$dest"
echo "$commit" > "$dest/COMMIT"

# The wheel's compiled helper, where the wheel is in .whl/ (scripts/framework-wheels.sh).
wheel=$(ls "$root"/.whl/megatron_core-*-cp312-*.whl 2> /dev/null | head -n 1 || true)
if [ -n "$wheel" ]; then
  python3 - "$wheel" "$dest/megatron/core/datasets" << 'PY'
import os, sys, time, zipfile
wheel, datasets = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    source = z.read("megatron/core/datasets/helpers.cpp")
    if source != open(os.path.join(datasets, "helpers.cpp"), "rb").read():
        sys.exit("megatron-lm-source: the wheel's helpers.cpp is not this commit's; the helper is left to make")
    for name in names:
        if name.startswith("megatron/core/datasets/helpers_cpp.") and name.endswith(".so"):
            path = os.path.join(datasets, os.path.basename(name))
            with open(path, "wb") as f:
                f.write(z.read(name))
            later = time.time() + 60
            os.utime(path, (later, later))
            print("megatron-lm-source: the dataset helper from", os.path.basename(wheel))
PY
fi
size=$(du -sk "$dest" | cut -f1)
echo "megatron-lm-source: Megatron-LM $commit in $dest (${size} KiB)"
