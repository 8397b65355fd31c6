#!/usr/bin/env bash
# scripts/gpu-check.sh OUTDIR
#
# The CUDA checks for a machine with an NVIDIA GPU (level X of docs/contracts.md): prints nvidia-smi and
# nvcc --version, runs the tests of the CUDA runtime, the one driver, the engine, the llama
# decoder, prebuilt and the examples (the engine and llama tests run their CUDA cases on the GPU)
#     go test -count=1 -v ./backends/cuda/... ./internal/gpudrv/... ./engine/... ./llama/... ./prebuilt/... ./examples/...
# and the CUDA benchmarks (the runtime's, and the engine's matvec twins at 4096x4096 on the GPU)
#     go test -run '^$' -bench . -benchtime 50x ./backends/cuda/... ./engine/...
# (the CUDA tests include TestIslandDevice: the mma island natively, mma.sync on the tensor cores,
# and as its portable body, each bit-exact against the oracle; the benchmarks BenchmarkIslandGPU:
# both bodies timed by the device's events, the same bytes, results.json's benchmarks giving each
# one's ns/launch and GOPS and the native body's speed over the portable one, x_native_speedup)
# then the GPU day's commands, each under its own time limit:
#     onesource conform -op OP -backend cuda,vulkan -json OUTDIR/conform-OP.json   (per op; X on the GPU, NVIDIA's Vulkan driver beside CUDA)
#     onesource tune -op matvec -type T -shape 4096x4096 -cache OUTDIR/tuning.json
#     onesource bench -op matvec -type T -shape 4096x4096 -tuning OUTDIR/tuning.json -json OUTDIR/bench-matvec.json
#     llama -model synthetic.gguf -backend cuda | vulkan -logits OUTDIR/llama-BACKEND.f32   (the logits compared byte for byte)
# within a 10-minute budget (GPU_CHECK_BUDGET seconds, default 600: tests 35%, benchmarks 10%,
# conform 25%, tune 15%, bench 5%, each llama run 4%), and writes
#     OUTDIR/results.json   {"date","gpu","driver","nvcc","tests":[...],"benchmarks":[...],"steps":[...],
#                            "conform":{...},"tuning":{...},"matvec_bench":[...],"llama":{...},"llama_logits_equal":...}
#     OUTDIR/log.txt        everything printed, the tests' output included
#     OUTDIR/tests.jsonl, OUTDIR/bench.jsonl   the raw `go test -json` streams
#     OUTDIR/conform-OP.json, tuning.json, bench-matvec.json, llama-*.txt|f32, steps.txt   the commands' own outputs
# The summary is made by scripts/gpucheck from these. Exit status 0 when every test passed or
# skipped and every command succeeded with the same logits on every backend, 1 otherwise, 2 on bad
# usage.
#
# Knobs (environment): GPU_CHECK_MATVEC_TYPES (default f32,q4_0,q8_0,q4_K,q6_K; "all" for every
# matvec cell), GPU_CHECK_MATVEC_SHAPE (default 4096x4096), GPU_CHECK_CONFORM_OPS and
# GPU_CHECK_CONFORM_TYPES (comma-separated; default every cell), GPU_CHECK_TUNE_ROUNDS (default
# 3), and GPU_CHECK_EMULATED=1,
# which runs the llama model's cuda step on the emulated CUDA device (host execution, level H):
# how the script is tested end to end on a machine without a GPU (conform's cuda column is level
# H there by itself).
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
patterns=(./backends/cuda/... ./internal/gpudrv/... ./engine/... ./llama/... ./prebuilt/... ./examples/...)
bench_patterns=(./backends/cuda/... ./engine/...)

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
	GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -ldflags='-s -w' -o "$dir/onesource" ./cmd/onesource || return 1
	GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -ldflags='-s -w' -o "$dir/llama" ./examples/llama || return 1
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

budget=${GPU_CHECK_BUDGET:-600}
start=$SECONDS
left() { echo $((budget - (SECONDS - start))); }
# share PERCENT: a step's time limit, that share of the budget, no more than what is left (less 10
# s for the summary) and at least 20 s.
share() {
	local s=$((budget * $1 / 100)) l=$(($(left) - 10))
	[ "$s" -le "$l" ] || s=$l
	[ "$s" -ge 20 ] || s=20
	echo "$s"
}
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
	onesource=$tmp/onesource llama=$tmp/llama
	if ! run_logged go build -o "$onesource" ./cmd/onesource || ! run_logged go build -o "$llama" ./examples/llama; then
		say "gpu-check: cannot build cmd/onesource or examples/llama"
		exit 1
	fi
	# go test's own -timeout fires before the limit, so a hung test still prints where it hung.
	t=$(share 35)
	say "== go test -count=1 -v ${patterns[*]} (limit ${t}s)"
	timeout -k 10 "$t" go test -count=1 -json -v -timeout "$((t - 10))s" "${patterns[@]}" >"$out/tests.jsonl" 2>&1 || status=1
	"$gc" -text "$out/tests.jsonl" | tee -a "$log"
	t=$(share 10)
	say "== go test -run '^\$' -bench . -benchtime 50x ${bench_patterns[*]} (limit ${t}s)"
	timeout -k 10 "$t" go test -count=1 -json -run '^$' -bench . -benchtime 50x -timeout "$((t - 5))s" "${bench_patterns[@]}" >"$out/bench.jsonl" 2>&1 || status=1
	"$gc" -text "$out/bench.jsonl" | tee -a "$log"
elif [ -f "$bindir/manifest.txt" ]; then
	goversion="prebuilt test binaries in $bindir"
	say "go: not found; running $goversion"
	gc=$bindir/gpucheck onesource=$bindir/onesource llama=$bindir/llama
	: >"$out/tests.jsonl"
	: >"$out/bench.jsonl"
	tests_end=$((SECONDS + $(share 35)))
	while read -r pkg rel bin bench; do
		t=$((tests_end - SECONDS))
		[ "$t" -ge 20 ] || t=20
		say "== $bin -test.v (limit ${t}s)"
		(cd "$repo/$rel" && timeout -k 10 "$t" "$bindir/$bin" -test.v=test2json -test.count=1 -test.timeout="$((t - 5))s" 2>&1 |
			"$bindir/test2json" -t -p "$pkg") >>"$out/tests.jsonl" || status=1
	done <"$bindir/manifest.txt"
	"$gc" -text "$out/tests.jsonl" | tee -a "$log"
	while read -r pkg rel bin bench; do
		[ "$bench" = 1 ] || continue
		t=$(share 10)
		say "== $bin -test.bench . -test.benchtime 50x (limit ${t}s)"
		(cd "$repo/$rel" && timeout -k 10 "$t" "$bindir/$bin" -test.v=test2json -test.run '^$' -test.bench . -test.benchtime 50x -test.timeout="$((t - 5))s" 2>&1 |
			"$bindir/test2json" -t -p "$pkg") >>"$out/bench.jsonl" || status=1
	done <"$bindir/manifest.txt"
	"$gc" -text "$out/bench.jsonl" | tee -a "$log"
else
	say "gpu-check: no go on PATH and no prebuilt binaries in $bindir (make them with: scripts/gpu-check.sh --prebuild)"
	exit 1
fi

# The GPU day's commands. step NAME LIMIT CMD...: runs CMD under a time limit, logged, and records
# "NAME RC SECONDS" in steps.txt (RC 124: it ran out of time).
steps=$out/steps.txt
: >"$steps"
step() {
	local name=$1 limit=$2 t0=$SECONDS rc
	shift 2
	say "== $name: $* (limit ${limit}s)"
	timeout -k 10 "$limit" "$@" 2>&1 | tee -a "$log"
	rc=${PIPESTATUS[0]}
	echo "$name $rc $((SECONDS - t0))" >>"$steps"
	[ "$rc" -eq 0 ] || status=1
	return "$rc"
}
types=${GPU_CHECK_MATVEC_TYPES:-f32,q4_0,q8_0,q4_K,q6_K}
[ "$types" != all ] || types=
shape=${GPU_CHECK_MATVEC_SHAPE:-4096x4096}
conform_types=${GPU_CHECK_CONFORM_TYPES:-}
# conform runs one op at a time, each writing its own JSON, so a budget that runs out keeps the
# ops done; the ops it did not reach are steps with RC 124 and no time.
conform_end=$((SECONDS + $(share 25)))
conform_files=
for op in $("$gc" -ops -op "${GPU_CHECK_CONFORM_OPS:-}" -type "$conform_types"); do
	t=$((conform_end - SECONDS))
	if [ "$t" -lt 10 ]; then
		echo "conform-$op 124 0" >>"$steps"
		say "== conform-$op: not run: the conform share of the budget is spent"
		status=1
		continue
	fi
	step "conform-$op" "$t" "$onesource" conform -op "$op" -type "$conform_types" -backend cuda,vulkan -json "$out/conform-$op.json"
	conform_files=${conform_files:+$conform_files,}$out/conform-$op.json
done
step tune "$(share 15)" "$onesource" tune -op matvec -type "$types" -shape "$shape" -rounds "${GPU_CHECK_TUNE_ROUNDS:-3}" -cache "$out/tuning.json"
tuned=()
[ -f "$out/tuning.json" ] && tuned=(-tuning "$out/tuning.json")
step bench "$(share 5)" "$onesource" bench -op matvec -type "$types" -shape "$shape" "${tuned[@]}" -json "$out/bench-matvec.json"
llama_files=()
if step llama-synthetic 20 "$llama" -write-synthetic "$tmp/synthetic.gguf"; then
	emulated=()
	[ "${GPU_CHECK_EMULATED:-0}" = 1 ] && emulated=(-emulated)
	for b in cuda vulkan; do
		flags=()
		[ "$b" = cuda ] && flags=("${emulated[@]}")
		step "llama-$b" "$(share 4)" sh -c '"$@" >"$0" 2>&1; rc=$?; cat "$0"; exit $rc' "$out/llama-$b.txt" \
			"$llama" -model "$tmp/synthetic.gguf" -backend "$b" "${flags[@]}" -tokens 1,7,300 -steps 8 -logits "$out/llama-$b.f32"
		llama_files+=(-llama "$b=$out/llama-$b.txt")
	done
fi

run_logged "$gc" -date "$date" -gpu "$gpu" -driver "$driver" -nvcc "$nvcc" -go "$goversion" -o "$out/results.json" \
	-steps "$steps" -conform "$conform_files" -tuning "$out/tuning.json" -bench "$out/bench-matvec.json" "${llama_files[@]}" \
	"$out/tests.jsonl" "$out/bench.jsonl"
if grep -q '"failed": [1-9]\|"incomplete": [1-9]\|"llama_logits_equal": false' "$out/results.json"; then
	status=1
fi
say "== gpu-check done in $((SECONDS - start))s, status $status: $out/results.json"
exit "$status"
