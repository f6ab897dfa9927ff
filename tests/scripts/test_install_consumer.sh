#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, builds tests/consumer against it the way a user's
# project would (find_package(tandem)), runs what it built, and checks the installed tree's run
# paths and the planted-library case (test_security.py).
#   test_install_consumer.sh BUILD_DIR SOURCE_DIR PLANTED_LIB
set -euo pipefail
build=$1 source=$2 planted=$3
scratch=$(mktemp -d /tmp/tandem-consumer-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
# The installed headers are the public API (include/tandem), none of the build's own (src/include).
for internal in "$source"/src/include/tandem/*.h; do
  if [ -e "$scratch/prefix/include/tandem/$(basename "$internal")" ]; then
    echo "internal header installed: tandem/$(basename "$internal")"
    exit 1
  fi
done
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$source/tests/consumer" -B "$scratch/build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$scratch/prefix" \
  >"$scratch/configure.log" 2>&1 || { cat "$scratch/configure.log"; exit 1; }
cmake --build "$scratch/build" >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log"; exit 1; }
"$scratch/build/plan_h200"
"$scratch/build/count_gpus"
python3 "$source/tests/scripts/test_security.py" --tree "$scratch/prefix" --planted "$planted" \
  --tandem "$scratch/prefix/bin/tandem" --preload "$scratch/prefix/lib/libtandem_preload.so"
test -f "$scratch/prefix/share/doc/tandem/RUN.md"
test -x "$scratch/prefix/share/tandem/scripts/plot-results.py"
echo "consumer built and ran against the installed tree"
