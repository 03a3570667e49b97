#!/usr/bin/env bash
# The bad-input probe's heavy campaign case, outside `cargo test`: a 4,000-run campaign killed
# with -9 twice and resumed to the end must keep every finished run and end with every
# (scenario, seed) exactly once. Takes several minutes on 2 cores.
#
#   cargo build --release && L=target/release/leasesim bash benches/bad-input/kill-resume.sh
set -euo pipefail
L=${L:-target/release/leasesim}
OUT=$(mktemp -d)/campaign
run() { "$L" campaign --seeds 0..200 --jobs 2 --no-progress --out "$OUT" "$@" >/dev/null 2>&1; }
for round in 1 2; do
  if [ "$round" = 1 ]; then run & else run --resume & fi
  pid=$!
  sleep 45
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  kept=$(wc -l < "$OUT/results.jsonl")
  echo "round $round: killed with $kept records"
  cp "$OUT/results.jsonl" "$OUT/before-$round.jsonl"
done
run --resume || true
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
records = [json.loads(line) for line in open(f"{out}/results.jsonl")]
keys = [(r["scenario"], r["seed"]) for r in records]
print(f"{len(records)} records, {len(set(keys))} distinct, {len(keys) - len(set(keys))} duplicates")
final = open(f"{out}/results.jsonl").read()
for round in (1, 2):
    before = open(f"{out}/before-{round}.jsonl").read().splitlines(keepends=True)
    complete = [line for line in before if line.endswith("\n")]
    assert all(line in final for line in complete), f"round {round}: a finished run was lost"
print("every run finished before each kill was kept byte for byte")
PY
