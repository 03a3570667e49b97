#!/usr/bin/env bash
# Runs every command of the README's `sh` blocks (the tour) against the release build, in the
# order written, and checks each one's exit code: 0, or the N of a trailing `# exit N`. The two
# set-up commands (`cargo …`) are .ci/run's own steps and are skipped here. Blocks that need a
# cluster, GitHub or a global install are fenced `console` and never run.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/target/release:$PATH"

failed=0
ran=0
while IFS= read -r command; do
  expected=0
  if [[ $command =~ \#\ exit\ ([0-9]+) ]]; then expected=${BASH_REMATCH[1]}; fi
  echo "\$ $command"
  bash -c "$command" >/tmp/readme-block.out 2>&1
  status=$?
  ran=$((ran + 1))
  if [[ $status != "$expected" ]]; then
    tail -20 /tmp/readme-block.out
    echo "README: exit $status, expected $expected: $command" >&2
    failed=$((failed + 1))
  fi
done < <(awk '
  /^```sh$/ { inblock = 1; next }
  /^```/    { inblock = 0; next }
  inblock && /^[^#[:space:]]/ {
    line = $0
    while (line ~ /\\$/ && (getline next_line) > 0) { sub(/\\$/, "", line); line = line next_line }
    if (line !~ /^cargo /) print line
  }' README.md)

echo "README blocks: $ran commands, $failed failed"
((ran > 0 && failed == 0))
