#!/usr/bin/env bash
# The main job: report what this machine has, emit every example kernel for every backend, and
# run the examples on every available device, bit-exact against their plain-Go references.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/kernels}
go run ./cmd/onesource doctor
go run ./cmd/onesource gen -backends vulkan -o "$out" ./examples/...
if command -v spirv-val >/dev/null; then
  for f in "$out"/*.spv; do spirv-val --target-env vulkan1.3 "$f" && echo "spirv-val ok: $f"; done
fi
go test -count=1 -v -run 'Lavapipe|Device' ./examples/... 2>&1 | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|skip' || true
go test -count=1 ./examples/...
