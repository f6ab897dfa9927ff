#!/usr/bin/env bash
# Every hooked name looked up through ctypes and libc's dlsym/dlvsym/dlerror, with every handle
# kind, before and after cuBLAS is loaded locally and globally (tests/gpu/programs/ctypes_lookups.py;
# no GPU needed): the output must be byte-identical with and without `tandem run`.
#   test_ctypes_lookups.sh TANDEM HOOK_NAMES_FILE SOURCE_DIR
set -euo pipefail
tandem=$1 names=$2 source=$3
program="$source/tests/gpu/programs/ctypes_lookups.py"
scratch=$(mktemp -d /tmp/tandem-ctypes-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
python3 "$program" "$names" > "$scratch/plain" 2> "$scratch/plain.err" || { cat "$scratch/plain.err"; exit 1; }
status=0
"$tandem" run --policy shape:3+priority -- python3 "$program" "$names" > "$scratch/tandem" 2> "$scratch/tandem.err" || status=$?
if [ "$status" != 0 ]; then
  echo "under tandem run the program exited with $status (without: 0)"; tail -n 20 "$scratch/tandem.err"; exit 1
fi
if ! cmp -s "$scratch/plain" "$scratch/tandem"; then
  echo "lookups differ under tandem run:"
  python3 - "$scratch/plain" "$scratch/tandem" <<'PY'
import json, sys
a, b = (json.loads(open(f).read().splitlines()[-1]) for f in sys.argv[1:])
def walk(x, y, path):
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y)):
            walk(x.get(k), y.get(k), path + [k])
    elif x != y:
        print("  " + " / ".join(path) + ": without " + json.dumps(x) + ", with " + json.dumps(y))
walk(a, b, [])
PY
  exit 1
fi
echo "$(grep -o '"dlsym' "$scratch/plain" | wc -l) dlsym answers identical with and without tandem run"
