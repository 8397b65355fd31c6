#!/usr/bin/env bash
# The main job: report what this machine has, emit every example kernel for every backend,
# regenerate and run the go generate example (embedded kernels checked against the oracle), and
# run the conformance suite (every cell of the matrix on every available backend at five
# schedules each, webgpu at the default ones, bit for bit against the oracle, and the same bytes
# at every schedule and on every backend). Results go to build/ (the matrices on stdout,
# build/conform.json, build/conform-webgpu.json).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build}
mkdir -p "$out"
go build -o "$out/onesource" ./cmd/onesource
"$out/onesource" doctor
"$out/onesource" gen -backends all -o "$out/kernels" ./examples/...
if command -v spirv-val >/dev/null; then
  # gen writes SPIR-V for Vulkan 1.1 (SPIR-V 1.3): valid there and on every later version.
  for f in "$out"/kernels/*.spv; do
    for env in vulkan1.1 vulkan1.2 vulkan1.3; do spirv-val --target-env "$env" "$f"; done && echo "spirv-val ok (vulkan1.1, 1.2, 1.3): $f"
  done
fi
(cd examples/generate && go generate ./... && go run .)
ONESOURCE_FULL=1 go test -count=1 -run TestKernelsAllTargets ./conformance
"$out/onesource" conform -backend vulkan,cuda,hip,metal,cpu -schedules sample -json "$out/conform.json"
# WebGPU (WGSL through naga's SPIR-V on the Vulkan device) next to Vulkan at the default schedules:
# at the sample schedules naga's SPIR-V roughly doubles lavapipe's time.
"$out/onesource" conform -backend vulkan,webgpu -json "$out/conform-webgpu.json"
