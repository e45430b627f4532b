#!/usr/bin/env bash
# Dev benchmark on the GraphRAG-Bench medical corpus (703 dev questions), all with library defaults:
#   1. hcg build (offline pipeline, default embedder, 200/40 chunks), timed, peak RSS recorded;
#   2. hcg eval against vector top-k (same embedder) and BM25 (same chunks; 1,200/200 top 5);
#   3. LlamaIndex VectorStoreIndex.from_documents with the same embedder, timed, peak RSS.
# Usage: benchmarks/dev_medical.sh DATA_DIR [OUT_DIR]   (env: LIMIT=N: only the first N questions)
#   DATA_DIR: the GraphRAG-Bench medical folder, holding corpus.json and dev_questions.json.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
DATA="${1:?usage: benchmarks/dev_medical.sh DATA_DIR [OUT_DIR]}"
OUT="${2:-$REPO/benchmarks/out/dev_medical}"
LIMIT_ARGS=()
if [[ -n "${LIMIT:-}" ]]; then LIMIT_ARGS=(--limit "$LIMIT"); fi
export ORT_DISABLE_TELEMETRY=1
mkdir -p "$OUT"

# GNU time gives peak RSS; fall back to the shell's own timer where it is missing.
timed() {
  local log="$1"; shift
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -v "$@" 2> >(tee "$log" >&2)
  else
    local t0=$SECONDS; "$@"; echo "Elapsed (wall clock) seconds: $((SECONDS - t0))" | tee "$log"
  fi
}

echo "== 1. hcg build (defaults) -> $OUT/graph"
timed "$OUT/build.time.txt" hcg build "$DATA/corpus.json" --out "$OUT/graph" --quiet

echo "== 2. hcg eval (hybrid, paper, ablation; vector top-k, BM25) at 2,000 words"
hcg eval "$OUT/graph" --questions "$DATA/dev_questions.json" --budget 2000 \
  --baseline-chunk-words 1200 --baseline-chunk-overlap 200 "${LIMIT_ARGS[@]}" \
  --out "$OUT/eval.json" | tee "$OUT/eval.txt"

echo "== 3. LlamaIndex VectorStoreIndex.from_documents, same embedder"
timed "$OUT/vector_index.time.txt" python "$HERE/vector_index_build_time.py" \
  "$DATA/corpus.json" --json "$OUT/vector_index.json"

echo "== summary"
for f in build vector_index; do
  grep -E "Elapsed|Maximum resident" "$OUT/$f.time.txt" | sed "s/^/$f: /" || true
done
echo "tables: $OUT/eval.txt; JSON: $OUT/eval.json, $OUT/vector_index.json"
