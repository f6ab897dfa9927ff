#!/usr/bin/env bash
# Checks that every tracked C, C++ and CUDA source is formatted with the repository's .clang-format.
# `scripts/format-check.sh --fix` formats them in place instead. Vendored corpora and fixtures are
# not ours to format.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "format-check: clang-format is not installed (scripts/install-deps.sh installs it)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.c' '*.cc' '*.cpp' '*.cu' '*.h' '*.cuh' ':!:tests/fuzz/corpus/**')
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "format-check: ${#bad[@]} file(s) differ from .clang-format (run scripts/format-check.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format-check: ${#files[@]} files formatted"
