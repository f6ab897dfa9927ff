#!/usr/bin/env bash
# scripts/install-deps.sh on a machine like the GPU machine, which has what the build needs without
# Debian's packages and cannot install anything: with every need present it must ask nothing of
# apt-get or PyPI and succeed; with a required one missing it must name it and fail, without
# trying forever. dpkg-query, apt-get, sudo and pip are fakes that record being called.
#   test_install_deps.sh SOURCE_DIR
set -uo pipefail
source=$1
scratch=$(mktemp -d /tmp/tandem-install-deps-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
bin="$scratch/bin"
mkdir -p "$bin" "$scratch/home"
# What the machine has: the real tools, one by one, so a test can leave one out.
link() { local t; t=$(command -v "$1") && ln -s "$t" "$bin/$1"; }
for tool in bash sed grep sort head id readlink dirname cat env g++ git cmake ninja clang++ clang-format mpicc; do
  link "$tool" || true
done
# python3 with the modules the build's Python needs is faked too: it answers every import (matplotlib,
# nanobind, pytest, nvidia.nccl's wheel) as present.
cat > "$bin/python3" <<'PY'
#!/bin/sh
exit 0
PY
for fake in dpkg-query apt-get sudo; do
  printf '#!/bin/sh\necho "%s $*" >> "%s/calls"\nexit 1\n' "$fake" "$scratch" > "$bin/$fake"
done
printf '#!/bin/sh\necho "Cuda compilation tools, release 13.0"\n' > "$bin/nvcc"
chmod +x "$bin"/*
run() { env -i HOME="$scratch/home" PATH="$bin" NCCL_ROOT="$scratch/nccl" bash "$source/scripts/install-deps.sh"; }
mkdir -p "$scratch/nccl/include" && touch "$scratch/nccl/include/nccl.h"

# Everything there: left alone.
if ! out=$(run 2>&1); then echo "FAIL: exit $? with everything present: $out"; exit 1; fi
if [ -s "$scratch/calls" ] && grep -qv '^dpkg-query' "$scratch/calls"; then
  echo "FAIL: asked to install with everything present:"; cat "$scratch/calls"; exit 1
fi
[ -z "$out" ] || { echo "FAIL: printed with everything present: $out"; exit 1; }

# ninja missing: named, and a failure, whatever apt-get says.
rm "$bin/ninja"
: > "$scratch/calls"
if out=$(run 2>&1); then echo "FAIL: succeeded without ninja: $out"; exit 1; fi
echo "$out" | grep -q "ninja-build: ninja, required" || { echo "FAIL: ninja not named: $out"; exit 1; }
echo "$out" | grep -q "cannot install" || { echo "FAIL: no plain reason: $out"; exit 1; }
echo "install-deps: left alone when complete, names what is missing otherwise"
