#!/usr/bin/env bash
# GPU checks and benchmarks for qklab (issue: "Train on the GPU").
#
# On a machine with an NVIDIA GPU and PyTorch 2.x: builds core + qklab-cli + the bench tools
# + tests/gpu_test against that machine's own PyTorch (-DQKLAB_TORCH=its python3,
# -DQKLAB_GUI=OFF), then
#   0. the GPU-only GoogleTest suite (tests/core/engine/gpu_test.cpp; needs the libgtest-dev .deb);
#   (3., speed, runs next: results.jsonl fills in as it goes, so a cut-short lease keeps it)
#   1. fp32, same seed, 50 steps on CPU and GPU: loss curves and probes must agree;
#   2. bf16 blow-up preset: the raw max logit still blows up without QK-norm, stays bounded
#      with it; bf16-vs-fp32 logit relative error with and without QK-norm;
#   3. speed: tiny, ~10M and the 300M-class config, C++ engine vs the PyTorch Python peer in
#      eager mode and with torch.compile, tokens/s, MFU against the measured bf16 matmul rate,
#      peak memory; probe overhead.
# and prints a table last. Headers the machine lacks (SQLite, nlohmann-json, CLI11, GTest)
# come from Debian .debs in DEBS_DIR (fetch them elsewhere with device-debs.sh), unpacked
# with dpkg -x: no network needed.
#
# usage: scripts/gpu-check.sh [--debs DIR] [--out DIR] [--cpu] [--speed-only]
#   --cpu   run the same checks on the CPU at small sizes (tests this script without a GPU;
#           uses scripts/setup.sh's venv when python3 has no torch)
#   --speed-only  the build, tests/gpu_test and the speed table (a second, short device lease)
set -euo pipefail
cd "$(dirname "$0")/.."
debs=.debs out=gpu-check-out cpu=0 speed_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --debs) debs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cpu) cpu=1; shift ;;
    --speed-only) speed_only=1; shift ;;
    *) echo "gpu-check.sh: unknown argument $1 (see the header of this script)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
# Seconds since the start on every line: the next lease plans from where the last one spent its time.
log() { echo "[gpu-check +${SECONDS}s] $*" >&2; }

# The first Python that imports torch: the GPU machine's own, else the venv's.
python="" prefix=""
for p in "${QKLAB_PYTHON:-}" python3 /usr/bin/python3 "${QKLAB_VENV:-$HOME/.local/share/qklab/venv}/bin/python"; do
  [ -n "$p" ] && command -v "$p" >/dev/null 2>&1 || continue
  prefix=$("$p" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)
  if [ -n "$prefix" ]; then python=$(command -v "$p"); break; fi
done
if [ $cpu = 0 ]; then
  [ -n "$prefix" ] || { echo "gpu-check.sh: PyTorch not found (python3 -c 'import torch')" >&2; exit 2; }
  $python -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
    { echo "gpu-check.sh: torch.cuda.is_available() is False: no GPU here (use --cpu to test the script)" >&2; exit 2; }
  device=cuda dtype=bf16
else
  device=cpu dtype=fp32
fi

# Headers from Debian packages, unpacked locally.
extra_prefix=""
if compgen -G "$debs/*.deb" >/dev/null; then
  mkdir -p "$debs/root"
  for f in "$debs"/*.deb; do dpkg -x "$f" "$debs/root"; done
  extra_prefix="$PWD/$debs/root/usr"
  export CPATH="$extra_prefix/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$extra_prefix/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$extra_prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # Debian's libsqlite3-dev ships the .so link; the runtime library is the system's.
  [ -e /usr/lib/x86_64-linux-gnu/libsqlite3.so.0 ] || [ -e "$extra_prefix/lib/x86_64-linux-gnu/libsqlite3.so.0" ] ||
    log "warning: no libsqlite3.so.0 found; add libsqlite3-0 to $debs"
fi

[ -n "$python" ] || { echo "gpu-check.sh: no Python with torch found (python3 -c 'import torch')" >&2; exit 2; }
build=build-gpu
[ $cpu = 1 ] && build=build-gpucheck-cpu
# The GPU tests need GoogleTest (the libgtest-dev .deb); without it the rest still runs.
tests=OFF targets="qklab-cli bench_train bench_optim precision_check"
# They run with --speed-only too: a few seconds, and the only check of the CUDA paths added
# since the last lease.
if { [ -n "$extra_prefix" ] && compgen -G "$extra_prefix/lib/*/cmake/GTest" >/dev/null; } ||
   [ -d /usr/lib/x86_64-linux-gnu/cmake/GTest ]; then
  tests=ON targets="$targets gpu_test"
fi
log "configuring $build against $python ($prefix), tests $tests"
cmake -S . -B "$build" -DQKLAB_GUI=OFF -DQKLAB_TESTS=$tests -DCMAKE_BUILD_TYPE=Release \
  -DQKLAB_TORCH="$python" ${extra_prefix:+-DCMAKE_PREFIX_PATH="$extra_prefix"} >"$out/cmake.log" 2>&1 ||
  { tail -30 "$out/cmake.log" >&2; exit 1; }
# shellcheck disable=SC2086
cmake --build "$build" -j"$(nproc)" --target $targets >"$out/build.log" 2>&1 ||
  { grep -E "error|Error" "$out/build.log" | head -30 >&2; exit 1; }
cli=$build/app/cli/qklab-cli bench=$build/tests/bench/bench_train prec=$build/tests/bench/precision_check
optim=$build/tests/bench/bench_optim
db=$out/gpu-check.db
rm -f "$db"*

results=$out/results.jsonl
: >"$results"
record() { echo "$1" >>"$results"; }

# 0. The GPU-only GoogleTest suite (every test skips, saying why, without a GPU).
if [ $tests = ON ]; then
  log "check 0: tests/gpu_test"
  rm -f "$out/gpu_test.json"
  "$build/tests/gpu_test" --gtest_output=json:"$out/gpu_test.json" >"$out/gpu_test.log" 2>&1 || true
  record "$($python - "$out/gpu_test.json" <<'PY'
import json, os, sys
if not os.path.exists(sys.argv[1]):  # it crashed before writing its report
    print(json.dumps({"check": "gpu_test", "pass": False, "failed": "crashed: see gpu_test.log"}))
    sys.exit(0)
r = json.load(open(sys.argv[1]))
cases = [t for s in r["testsuites"] for t in s["testsuite"]]
failed = [t["name"] for t in cases if t.get("failures")]
skipped = [t["name"] for t in cases if t.get("result") == "SKIPPED"]
print(json.dumps({"check": "gpu_test", "tests": len(cases), "failed": ",".join(failed) or "none",
                  "skipped": len(skipped), "pass": not failed}))
PY
)"
else
  log "check 0 skipped: no GoogleTest (add libgtest-dev to $debs)"
fi

# Speed first: the table is what a short device lease is for; the checks follow.
# 3. Speed.
log "check 3: speed"
speed_rows() {
  local cfg=$1 warm steps pe
  log "speed: $cfg"
  warm=5
  # Enough measured steps that the start-up difference of two runs is noise (bench_train
  # times the warm-up alone and warm-up + steps, and takes the difference).
  steps=200
  [ $cfg = 300m ] && steps=30
  for pe in 10 0; do
    [ $cfg = 300m ] && [ $pe = 10 ] && pe=50
    record "$($bench --config $cfg --steps $steps --warmup $warm --probes-every $pe --set run.device=$device --set run.dtype=$dtype)"
  done
  # The explicit attention path on every step, against the fused kernel above.
  record "$($bench --config $cfg --steps $steps --warmup $warm --probes-every 0 --set run.device=$device --set run.dtype=$dtype --set run.fused_attention=false)"
  # Issue 27: without CUDA graphs (the default rows above replay them on cuda), and without
  # the fused AdamW as well (the engine before issue 27); the optimizer step alone, both
  # AdamW kinds interleaved.
  record "$($bench --config $cfg --steps $steps --warmup $warm --probes-every 0 --set run.device=$device --set run.dtype=$dtype --set run.cuda_graphs=off)"
  record "$($bench --config $cfg --steps $steps --warmup $warm --probes-every 0 --set run.device=$device --set run.dtype=$dtype --set run.cuda_graphs=off --set optim.fused=off)"
  $optim --config $cfg --steps 20 --rounds 5 --set run.device=$device >>"$results" || log "bench_optim failed on $cfg"
  # The PyTorch peer, eager and compiled, with and without probes (compiled code cannot trace
  # the probe capture, so its probe steps run eagerly).
  for pe in 10 0; do
    record "$($python tests/bench/peer_model.py --config $cfg --steps $steps --warmup $warm --probes-every $pe --device $device --dtype $dtype)"
    if [ $cpu = 0 ]; then
      record "$($python tests/bench/peer_model.py --config $cfg --steps $steps --warmup $warm --probes-every $pe --device $device --dtype $dtype --compile || echo '{"impl":"python-compile","error":"torch.compile failed"}')"
    fi
  done
}

# The 42-point Wortsman LR sweep (tiny config, 400 steps) as `sweep` runs it today, one point
# per worker process, 8 workers sharing the device: the baseline for `sweep --batched`. (Not
# with --cpu: 42 points take 15 minutes on 2 cores.) Capped at 150 s so that --speed-only
# stays one lease of under 10 minutes; a capped sweep reports exit 124.
sweep_row() {
sweep_file=experiments/sweeps/.gpu-check-lr_qknorm.json
$python - "$sweep_file" "$device" "$dtype" <<'PY'
import json, sys
s = json.load(open("experiments/sweeps/lr_qknorm.json"))
s["set"] = {"run.device": sys.argv[2], "run.dtype": sys.argv[3], "probes.every": 10}
json.dump(s, open(sys.argv[1], "w"))
PY
log "speed: the 42-point LR sweep, one point per worker"
rm -f "$out/sweep.db"*
t0=$(date +%s.%N)
sweep_rc=0
timeout 150 $cli sweep "$sweep_file" --db "$out/sweep.db" --jobs 8 --name lr-sweep >"$out/sweep.log" 2>&1 || sweep_rc=$?
t1=$(date +%s.%N)
rm -f "$sweep_file"
record "$($python -c "import json; print(json.dumps({'bench': 'sweep', 'points': 42, 'steps': 400, 'jobs': 8, 'wall_s': $t1 - $t0, 'rc': $sweep_rc}))")"
}

# The small configs, then the sweep, then the 300M class: the lease of 2026-12-04 ran out of its
# 600 s command inside the 300M rows, so what is cheapest and newest comes first.
if [ $cpu = 1 ]; then
  speed_rows tiny
else
  speed_rows tiny
  speed_rows 10m
  sweep_row
  speed_rows 300m
fi

if [ $speed_only = 0 ]; then
# 1. CPU vs GPU, fp32, same seed, 50 steps.
small=(--set schedule.steps=50 --set probes.every=10 --set eval.every=0 --set run.seed=7)
log "check 1: CPU vs $device fp32 loss curves"
$cli run experiments/default.json --db "$db" --name cpu-fp32 "${small[@]}" --set run.device=cpu >/dev/null
$cli run experiments/default.json --db "$db" --name dev-fp32 "${small[@]}" --set run.device=$device >/dev/null
$cli export cpu-fp32 --format json --db "$db" -o "$out/cpu.json"
$cli export dev-fp32 --format json --db "$db" -o "$out/dev.json"
record "$($python - "$out/cpu.json" "$out/dev.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
dl = max(abs(x["loss"] - y["loss"]) for x, y in zip(a["steps"], b["steps"]))
dp = max(abs(x["logit_max_raw"] - y["logit_max_raw"]) / max(1e-9, abs(x["logit_max_raw"]))
         for x, y in zip(a["probes"], b["probes"]))
# fp32 kernels differ between CPU and GPU (reduction order), and the difference compounds
# over 50 optimizer steps: a loss gap of 2e-2 and 5% on probes are the stated tolerances.
print(json.dumps({"check": "cpu_vs_device_fp32", "max_loss_diff": dl, "max_probe_rel_diff": dp,
                  "pass": dl < 2e-2 and dp < 0.05}))
PY
)"

# 2. bf16 blow-up with and without QK-norm, and bf16-vs-fp32 logit error.
log "check 2: $dtype blow-up preset with and without QK-norm"
blow=(--set schedule.steps=150 --set run.device=$device --set run.dtype=$dtype)
$cli run experiments/blowup_no_qknorm.json --db "$db" --name blowup-raw "${blow[@]}" >/dev/null
$cli run experiments/blowup_no_qknorm.json --db "$db" --name blowup-rms "${blow[@]}" --set attention.qk_norm=rms >/dev/null
for n in blowup-raw blowup-rms; do
  $cli show $n --json --db "$db" | $python -c "import json,sys; s=json.load(sys.stdin)['summary']; print(json.dumps({'check':'blowup_$dtype','run':'$n','status':s['status'],'max_logit_raw':s['max_logit_raw'],'final_loss':s['final_loss']}))" >>"$results"
done
# The protocol of docs/EXPERIMENTS.md: 3 seeds, 4 batches, per layer; a QK-norm model also
# with the norm removed from the same checkpoint. A healthy LR and the blow-up LR.
for qk in none rms; do
  record "$($prec --preset experiments/default.json --steps 300 --seeds 1,2,3 --batches 4 --set run.device=$device --set attention.qk_norm=$qk | sed 's/^{/{"check":"bf16_vs_fp32",/')"
  record "$($prec --preset experiments/blowup_no_qknorm.json --steps 60 --seeds 1,2,3 --batches 4 --set run.device=$device --set attention.qk_norm=$qk | sed 's/^{/{"check":"bf16_vs_fp32",/')"
done
fi

$python - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("\n## qklab GPU check\n")
for r in rows:
    if r.get("check"):
        print("- " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
print("\n| config | impl | attention | engine (device, dtype, AdamW, graphs) | probes every | tokens/s | steps/s | model TFLOP/s | matmul TFLOP/s | MFU | peak mem GB |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    if "steps_per_s" not in r:
        continue
    mm = r.get("matmul_gflops")
    g = r.get("model_gflops", 0)
    mfu = f"{100 * g / mm:.0f}%" if mm else "-"
    if r.get("bench") == "optimizer":
        continue
    print(f"| {r['config']} | {r['impl']} | {r.get('attention', '-')} | {r.get('engine', '-')} | {r.get('probes_every')} | {r['tokens_per_s']:.0f} | {r['steps_per_s']:.2f} | "
          f"{g / 1e3:.2f} | {mm / 1e3 if mm else float('nan'):.1f} | {mfu} | {r.get('peak_mem_gb', '-')} |")
for r in rows:
    if r.get("bench") == "sweep":
        print(f"\n42-point LR sweep, 400 steps, {r['jobs']} workers: {r['wall_s']:.1f} s (exit {r['rc']})")
print("\n| config | optimizer step alone | params | steps/s |")
print("|---|---|---|---|")
for r in rows:
    if r.get("bench") == "optimizer":
        print(f"| {r['config']} | {r['adamw']} AdamW | {r['params']} | {r['steps_per_s']:.1f} |")
PY
