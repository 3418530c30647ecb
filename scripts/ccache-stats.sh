#!/usr/bin/env bash
# How many of the files a build compiled came from ccache (docs/TESTING.md).
#
#   before=$(scripts/ccache-stats.sh count)      # running totals: "HITS MISSES" (0 0 without ccache)
#   ... build ...
#   scripts/ccache-stats.sh since "$before" LABEL
#   -> "LABEL: ccache: 412 of 420 compiled files from the cache (98 %), 8 compiled"
set -euo pipefail
count() {
  if ! command -v ccache >/dev/null; then
    echo "0 0"
    return
  fi
  ccache --print-stats | awk -F'\t' '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { hits += $2 }
    $1 == "cache_miss" { misses += $2 }
    END { printf "%d %d\n", hits, misses }'
}
case "${1:-}" in
  count) count ;;
  since)
    read -r hits0 misses0 <<<"$2"
    read -r hits1 misses1 < <(count)
    hits=$((hits1 - hits0))
    misses=$((misses1 - misses0))
    total=$((hits + misses))
    if [ "$total" -eq 0 ]; then
      echo "$3: ccache: nothing compiled"
    else
      echo "$3: ccache: $hits of $total compiled files from the cache ($((100 * hits / total)) %)," \
           "$misses compiled"
    fi
    ;;
  *)
    echo "usage: scripts/ccache-stats.sh count | since 'HITS MISSES' LABEL" >&2
    exit 2
    ;;
esac
