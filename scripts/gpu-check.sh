#!/usr/bin/env bash
# scripts/gpu-check.sh OUTDIR
#
# The CUDA checks for a machine with an NVIDIA GPU (level X of docs/contracts.md): prints nvidia-smi and
# nvcc --version, runs the CUDA runtime tests and the examples' tests
#     go test -count=1 -v ./backends/cuda/... ./examples/...
# and the CUDA benchmarks
#     go test -run '^$' -bench . -benchtime 50x ./backends/cuda/...
# within a 5-minute budget (GPU_CHECK_BUDGET seconds, default 300), and writes
#     OUTDIR/results.json   {"date","gpu","driver","nvcc","tests":[...],"benchmarks":[...],...}
#     OUTDIR/log.txt        everything printed, the tests' output included
#     OUTDIR/tests.jsonl, OUTDIR/bench.jsonl   the raw `go test -json` streams
# The summary is made by scripts/gpucheck from the JSON streams. Exit status 0 when every test
# passed or skipped, 1 when one failed or did not finish, 2 on bad usage.
#
# With Go: needs Go and the NVIDIA driver (libcuda.so.1); NVRTC is found as libnvrtc.so* on the
# library path or in $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64 (or set
# ONESOURCE_NVRTC_LIBRARY). Offline, a module cache in .gomodcache/ (GOMODCACHE=$PWD/.gomodcache
# go mod download, here) is used with GOPROXY=off.
#
# Without Go (a GPU machine whose image has none): build everything here first,
#     scripts/gpu-check.sh --prebuild [DIR]      (default DIR: .gpucheck-bin, linux/amd64)
# which writes the test binaries (stripped, CGO_ENABLED=0), test2json and gpucheck to DIR, then
# carry DIR to the GPU machine and run scripts/gpu-check.sh OUTDIR there: with no `go` on PATH
# it runs DIR's binaries (GPU_CHECK_BIN names another DIR).
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bindir=${GPU_CHECK_BIN:-$repo/.gpucheck-bin}
patterns=(./backends/cuda/... ./examples/...)
bench_patterns=(./backends/cuda/...)

prebuild() {
	local dir=$1
	mkdir -p "$dir" && dir=$(cd "$dir" && pwd) || return 2
	cd "$repo" || return 2
	local mod
	mod=$(go list -m) || return 1
	: >"$dir/manifest.txt"
	local p rel name
	for p in $(go list "${patterns[@]}"); do
		rel=${p#"$mod"/}
		name=$(printf '%s' "$rel" | tr / _).test
		rm -f "$dir/$name"
		GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go test -c -ldflags='-s -w' -o "$dir/$name" "./$rel" || return 1
		[ -f "$dir/$name" ] || continue # no test files
		bench=0
		for b in "${bench_patterns[@]}"; do
			case "./$rel/" in "${b%...}"*) bench=1 ;; esac
		done
		printf '%s %s %s %s\n' "$p" "$rel" "$name" "$bench" >>"$dir/manifest.txt"
	done
	GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -ldflags='-s -w' -o "$dir/test2json" cmd/test2json || return 1
	GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -ldflags='-s -w' -o "$dir/gpucheck" ./scripts/gpucheck || return 1
	echo "prebuilt into $dir:"
	cat "$dir/manifest.txt"
	du -sh "$dir"
}

if [ "${1:-}" = "--prebuild" ]; then
	prebuild "${2:-$bindir}"
	exit $?
fi
if [ $# -ne 1 ] || [ "${1#-}" != "$1" ]; then
	echo "usage: scripts/gpu-check.sh OUTDIR | scripts/gpu-check.sh --prebuild [DIR]" >&2
	exit 2
fi
mkdir -p "$1" && out=$(cd "$1" && pwd) || exit 2
cd "$repo" || exit 2

budget=${GPU_CHECK_BUDGET:-300}
start=$SECONDS
left() { echo $((budget - (SECONDS - start))); }
log=$out/log.txt
: >"$log"
say() { printf '%s\n' "$*" | tee -a "$log"; }
run_logged() { "$@" 2>&1 | tee -a "$log"; }

# Toolkit and driver libraries where a CUDA image keeps them.
for d in /usr/local/cuda/bin; do
	[ -d "$d" ] && case ":$PATH:" in *":$d:"*) ;; *) PATH=$PATH:$d ;; esac
done
for d in /usr/local/nvidia/lib64 /usr/local/cuda/lib64; do
	[ -d "$d" ] && case ":${LD_LIBRARY_PATH:-}:" in *":$d:"*) ;; *) LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d ;; esac
done
export PATH LD_LIBRARY_PATH
if [ -d "$repo/.gomodcache" ]; then
	export GOMODCACHE=$repo/.gomodcache GOPROXY=off GOFLAGS=-mod=mod
fi

date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
say "== gpu-check $date in $repo (budget ${budget}s)"
gpu=unknown driver=unknown nvcc=unavailable
if command -v nvidia-smi >/dev/null; then
	run_logged timeout 30 nvidia-smi
	q=$(timeout 30 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)
	if [ -n "$q" ]; then
		gpu=$(printf '%s\n' "$q" | cut -d, -f1 | sed 's/^ *//; s/ *$//' | paste -sd ';' -)
		driver=$(printf '%s\n' "$q" | head -n 1 | cut -d, -f2 | sed 's/^ *//; s/ *$//')
	fi
else
	say "nvidia-smi: not found"
fi
if command -v nvcc >/dev/null; then
	run_logged nvcc --version
	nvcc=$(nvcc --version | grep -i 'release' | tail -n 1)
	[ -n "$nvcc" ] || nvcc=$(nvcc --version | tail -n 1)
else
	say "nvcc: not found"
fi

status=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

if command -v go >/dev/null; then
	goversion=$(go version)
	say "$goversion"
	gc=$tmp/gpucheck
	if ! run_logged go build -o "$gc" ./scripts/gpucheck; then
		say "gpu-check: cannot build scripts/gpucheck"
		exit 1
	fi
	# Tests get what the budget leaves after 90 s for the benchmarks; go test's own -timeout
	# fires first, so a hung test still prints where it hung.
	t=$(($(left) - 90))
	[ "$t" -ge 30 ] || t=30
	say "== go test -count=1 -v ${patterns[*]} (limit ${t}s)"
	timeout -k 10 "$t" go test -count=1 -json -v -timeout "$((t - 10))s" "${patterns[@]}" >"$out/tests.jsonl" 2>&1 || status=1
	"$gc" -text "$out/tests.jsonl" | tee -a "$log"
	t=$(($(left) - 10))
	[ "$t" -ge 20 ] || t=20
	say "== go test -run '^\$' -bench . -benchtime 50x ${bench_patterns[*]} (limit ${t}s)"
	timeout -k 10 "$t" go test -count=1 -json -run '^$' -bench . -benchtime 50x -timeout "$((t - 5))s" "${bench_patterns[@]}" >"$out/bench.jsonl" 2>&1 || status=1
	"$gc" -text "$out/bench.jsonl" | tee -a "$log"
elif [ -f "$bindir/manifest.txt" ]; then
	goversion="prebuilt test binaries in $bindir"
	say "go: not found; running $goversion"
	gc=$bindir/gpucheck
	: >"$out/tests.jsonl"
	: >"$out/bench.jsonl"
	while read -r pkg rel bin bench; do
		t=$(($(left) - 90))
		[ "$t" -ge 20 ] || t=20
		say "== $bin -test.v (limit ${t}s)"
		(cd "$repo/$rel" && timeout -k 10 "$t" "$bindir/$bin" -test.v=test2json -test.count=1 -test.timeout="$((t - 5))s" 2>&1 |
			"$bindir/test2json" -t -p "$pkg") >>"$out/tests.jsonl" || status=1
	done <"$bindir/manifest.txt"
	"$gc" -text "$out/tests.jsonl" | tee -a "$log"
	while read -r pkg rel bin bench; do
		[ "$bench" = 1 ] || continue
		t=$(($(left) - 10))
		[ "$t" -ge 20 ] || t=20
		say "== $bin -test.bench . -test.benchtime 50x (limit ${t}s)"
		(cd "$repo/$rel" && timeout -k 10 "$t" "$bindir/$bin" -test.v=test2json -test.run '^$' -test.bench . -test.benchtime 50x -test.timeout="$((t - 5))s" 2>&1 |
			"$bindir/test2json" -t -p "$pkg") >>"$out/bench.jsonl" || status=1
	done <"$bindir/manifest.txt"
	"$gc" -text "$out/bench.jsonl" | tee -a "$log"
else
	say "gpu-check: no go on PATH and no prebuilt binaries in $bindir (make them with: scripts/gpu-check.sh --prebuild)"
	exit 1
fi

run_logged "$gc" -date "$date" -gpu "$gpu" -driver "$driver" -nvcc "$nvcc" -go "$goversion" -o "$out/results.json" "$out/tests.jsonl" "$out/bench.jsonl"
if grep -q '"failed": [1-9]\|"incomplete": [1-9]' "$out/results.json"; then
	status=1
fi
say "== gpu-check done in $((SECONDS - start))s, status $status: $out/results.json"
exit "$status"
