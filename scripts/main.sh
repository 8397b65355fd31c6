#!/usr/bin/env bash
# The main job: report what this machine has, emit every example kernel for every backend,
# regenerate and run the go generate example (embedded kernels checked against the oracle), and
# run the conformance suite (every cell of the matrix on every available backend at five
# schedules each, bit for bit against the oracle, and the same bytes at every schedule and on
# every backend). Results go to build/ (the matrix on stdout, build/conform.json).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build}
mkdir -p "$out"
go build -o "$out/onesource" ./cmd/onesource
"$out/onesource" doctor
"$out/onesource" gen -backends all -o "$out/kernels" ./examples/...
if command -v spirv-val >/dev/null; then
  for f in "$out"/kernels/*.spv; do spirv-val --target-env vulkan1.3 "$f" && echo "spirv-val ok: $f"; done
fi
(cd examples/generate && go generate ./... && go run .)
ONESOURCE_FULL=1 go test -count=1 -run TestKernelsAllTargets ./conformance
"$out/onesource" conform -schedules sample -json "$out/conform.json"
