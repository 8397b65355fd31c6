#!/usr/bin/env bash
# Installs what onesource's tests and main job need on Debian 12 (run as root): the Vulkan
# loader and headers, Mesa's lavapipe (a real Vulkan 1.3 driver on the CPU), SPIR-V tools,
# glslc, C/C++ compilers (struct-layout test, host execution), clang-16 (CUDA to PTX) and
# Debian's ROCm 5.2 (hipcc, libamdhip64, device libraries: HIP to AMDGPU), chromium (the reports
# are rendered and screenshotted headless in the tests), Xvfb and the X11/GL headers GLFW builds
# against (examples/window's headless test), and the Go modules.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
pkgs=(mesa-vulkan-drivers libvulkan1 libvulkan-dev vulkan-tools spirv-tools glslc gcc g++ clang-16 hipcc libamdhip64-dev rocm-device-libs chromium xvfb libxrandr-dev libxinerama-dev libxcursor-dev libxi-dev libxxf86vm-dev libgl-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
cd "$(dirname "$0")/.."
# A spirv-val that knows SPV_KHR_cooperative_matrix, for the mma island's Vulkan body (bookworm's
# does not): built once into /opt/onesource/spirv-tools. Without it (no network to Debian's
# sources, say) the cooperative-matrix modules are not validated and their tests skip saying so.
bash scripts/install-spirv-val.sh || echo "install-deps: no spirv-val for SPV_KHR_cooperative_matrix; its checks will skip" >&2
go mod download
(cd examples/generate && go mod download)
(cd examples/window && go mod download)
