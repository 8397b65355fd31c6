#!/usr/bin/env bash
# Installs a spirv-val that knows SPV_KHR_cooperative_matrix at /opt/onesource/spirv-tools/bin
# (vulkan.DefaultCoopValidator), for the modules of the mma island's Vulkan body. Debian bookworm
# ships SPIRV-Tools 2023.1, which does not know the extension (it came in 2023.4), and
# bookworm-backports has no newer SPIRV-Tools; trixie's binary package needs glibc 2.38. So this
# builds spirv-val from Debian trixie's SPIRV-Tools and SPIRV-Headers sources (Debian's archive,
# read through a private apt configuration under a temporary directory: the system's sources and
# package lists are untouched), then removes the build. About 4 minutes on 2 cores. Run as root;
# does nothing when the validator is already there. The rest of onesource keeps bookworm's
# spirv-val on PATH.
set -euo pipefail
dest=/opt/onesource/spirv-tools
if [ -x "$dest/bin/spirv-val" ] && "$dest/bin/spirv-val" --version | grep -q 'v202[5-9]'; then
	exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! command -v cmake >/dev/null; then
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends cmake >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/src"
printf 'deb-src http://deb.debian.org/debian trixie main\n' >"$work/sources.list"
apt=(-o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts=/dev/null
	-o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache")
apt-get "${apt[@]}" update -qq
cd "$work/src"
# Only the upstream tarballs are needed; a missing Debian packaging file is not an error.
apt-get "${apt[@]}" source --download-only spirv-tools spirv-headers >/dev/null 2>&1 || true
tools=$(ls spirv-tools_*.orig.tar.* 2>/dev/null | head -1)
headers=$(ls spirv-headers_*.orig.tar.* 2>/dev/null | head -1)
if [ -z "$tools" ] || [ -z "$headers" ]; then
	echo "install-spirv-val: could not fetch the SPIRV-Tools and SPIRV-Headers sources from Debian trixie" >&2
	exit 1
fi
mkdir tools headers
tar xf "$tools" -C tools --strip-components=1
tar xf "$headers" -C headers --strip-components=1
cmake -S tools -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-O1 \
	-DSPIRV-Headers_SOURCE_DIR="$work/src/headers" -DSPIRV_SKIP_TESTS=ON -DSPIRV_WERROR=OFF >/dev/null
cmake --build build --target spirv-val -j "$(nproc)" >/dev/null
mkdir -p "$dest/bin"
install -m 0755 build/tools/spirv-val "$dest/bin/spirv-val"
"$dest/bin/spirv-val" --version | head -1
