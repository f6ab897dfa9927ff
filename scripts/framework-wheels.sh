#!/usr/bin/env bash
# Fetches into .whl/ the wheels that Megatron-core and DeepSpeed need on the GPU machine and that its
# image lacks (docs/FRAMEWORKS.md): the GPU machine cannot install from the network, so they travel
# with the working tree (`carry: [".whl"]`, 64 MiB in all) and `scripts/gpu-check.sh frameworks`
# installs them with `pip install --no-index --no-deps --target`.
#
#   scripts/framework-wheels.sh            # run here, where PyPI is reachable; prints the total size
#
# Pinned, one version each (two versions of one package stop the whole install there):
#   megatron-core 0.19.2   cp312 manylinux wheel (its C++ dataset helpers are compiled); needs torch,
#                          numpy, packaging, which the image has
#   deepspeed 0.19.8       PyPI has only the sdist: built here into a pure py3-none-any wheel with
#                          DS_BUILD_OPS=0 (no op compiled; the example programs use torch's AdamW, so
#                          nothing is JIT-compiled there either); needs einops, hjson, msgpack, ninja,
#                          numpy, packaging, psutil, py-cpuinfo, pydantic>=2, torch, tqdm
#   pydantic 2.11.10       with pydantic-core 2.33.2 (cp312 manylinux), annotated-types 0.7.0 and
#                          typing-inspection 0.4.2; 2.11 needs typing-extensions >= 4.12.2, which any
#                          image with PyTorch 2.11 has (2.14 would need >= 4.16)
#   hjson 3.1.0            DeepSpeed's configuration parser
# The image already has einops, msgpack, ninja, numpy, packaging, psutil, py-cpuinfo, tqdm, torch,
# typing-extensions (/work/.library/device/KINDS.md's package list): they are not fetched.
#
# Other wheels already in .whl/ (the timeline section's HTA wheels) are left alone, except older
# versions of the packages above, which are removed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/.whl
mkdir -p "$dest"
# The folder must not be committed (it is in .gitignore; .git/info/exclude as the device notes ask).
exclude=$(git -C "$root" rev-parse --git-path info/exclude 2> /dev/null || true)
if [ -n "$exclude" ]; then
  case $exclude in /*) ;; *) exclude=$root/$exclude ;; esac
  mkdir -p "$(dirname "$exclude")"
  grep -qx '/.whl/' "$exclude" 2> /dev/null || echo '/.whl/' >> "$exclude"
fi

MEGATRON_CORE=0.19.2
DEEPSPEED=0.19.8
binary=(
  "megatron_core megatron-core==$MEGATRON_CORE"
  "pydantic pydantic==2.11.10"
  "pydantic_core pydantic-core==2.33.2"
  "annotated_types annotated-types==0.7.0"
  "typing_inspection typing-inspection==0.4.2"
  "hjson hjson==3.1.0"
)
python=${PYTHON:-python3}
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64)

# keep_only NAME VERSION: removes NAME's wheels of any other version (wheel names use '_' for '-').
keep_only() {
  local name=$1 version=$2 f
  for f in "$dest/$name"-*.whl; do
    [ -e "$f" ] || continue
    case $(basename "$f") in "$name-$version-"*) ;; *) echo "removing $(basename "$f") (another version)"; rm -f "$f" ;; esac
  done
}

for entry in "${binary[@]}"; do
  read -r name spec <<< "$entry"
  keep_only "$name" "${spec#*==}"
  "$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d "$dest" "$spec"
done

# DeepSpeed: an sdist only. Built in pip's isolated build environment (setuptools and wheel, no torch):
# setup.py then pre-compiles nothing and records no torch or CUDA version, and the wheel is pure.
keep_only deepspeed "$DEEPSPEED"
if ! ls "$dest/deepspeed-$DEEPSPEED-py3-none-any.whl" > /dev/null 2>&1; then
  build=$(mktemp -d)
  trap 'rm -rf "$build"' EXIT
  DS_BUILD_OPS=0 "$python" -m pip wheel -q --no-deps --no-binary deepspeed -w "$build" "deepspeed==$DEEPSPEED" \
    > "$build/build.log" 2>&1 || { tail -n 20 "$build/build.log"; echo "deepspeed: the wheel did not build" >&2; exit 1; }
  wheel=$(ls "$build"/deepspeed-*.whl)
  case $(basename "$wheel") in
    deepspeed-$DEEPSPEED-py3-none-any.whl) cp "$wheel" "$dest/" ;;
    *) echo "deepspeed: built $(basename "$wheel"), not a pure py3-none-any wheel" >&2; exit 1 ;;
  esac
  # No op may be marked installed: an installed op's shared object would be looked for at run time.
  if unzip -p "$dest/deepspeed-$DEEPSPEED-py3-none-any.whl" deepspeed/git_version_info_installed.py | grep -q ': True'; then
    echo "deepspeed: the wheel marks an op as pre-built (DS_BUILD_OPS=0 not honoured)" >&2
    exit 1
  fi
fi

echo "wheels in .whl/:"
(cd "$dest" && ls -l -- *.whl | awk '{printf "  %9d B  %s\n", $5, $9}')
total=$(du -cb "$dest"/*.whl | tail -n 1 | cut -f1)
echo "total: $total B ($(awk -v b="$total" 'BEGIN { printf "%.1f MiB", b / 1048576 }'))"
