#!/usr/bin/env bash
# The first GPU at hand, measured in one step (issue 49): the CUDA tests (tests/models/test_cuda.py, which skip
# without a GPU), each analysis against its floor (bench/floors.py),
# gridlab's batched analyses against their per-instance loops (bench/analyses.py, the perf-peers rows), the
# originals' comparison (../shared/perf-peers, where its export is given) and a small grid with `device: cuda`,
# each step timed, its output kept, and one table (README.md, steps.csv) under OUT.
#
#   bench/device.sh OUT              # on a CUDA machine; sized to fit 8 minutes on one GPU (never run on one yet)
#   bench/device.sh --dry-run OUT    # anywhere, on the CPU with tiny sizes: every step end to end (2 cores: 130 s
#                                    # at load 6 without PEERS_EXPORT, 18 min at load 20 with it)
#
# Environment: PYTHON (default: python), PEERS (a perf-peers folder, default ../shared/perf-peers beside the
# checkout) and PEERS_EXPORT (its export.sh output; without it the originals' step is skipped and says so).
# bench_peers.py times both of its sides on the CPU (it has no device option): on a GPU machine its rows are the
# machine's CPU. A failed step is recorded and the next one runs; the exit status is 1 if any step failed.
set -uo pipefail

dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
if [ $# -ne 1 ]; then echo "usage: $0 [--dry-run] OUT" >&2; exit 2; fi
out=$(mkdir -p "$1" && cd "$1" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python}
peers=${PEERS:-$repo/../shared/perf-peers}
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

if [ $dry = 1 ]; then
  device=cpu
  floors=(--lengths 6 --batch 4 --repeats 1 --min-time 0.01)
  analyses=(--lengths 6 --instances 4 --loop-instances 2 --repeats 1)
  peers_args=(--only permutation gradient --lengths 20 --repeats 1 --scale 0.1 --min-time 0.05 --max-wait 0)
  train='{epochs: 1, batch_size: 32, max_train: 64}'; instances=8; steps=5
else
  device=cuda
  floors=(--repeats 5 --min-time 0.3)
  analyses=(--lengths 20 180 --instances 256 --loop-instances 16 --repeats 3)
  peers_args=(--repeats 3 --scale 0.5 --max-wait 0)  # a full perf-peers run is ~8 min on its own
  train='{epochs: 2, batch_size: 32, max_train: 2000}'; instances=200; steps=500
fi

echo "step,status,seconds,output" > "$out/steps.csv"
failed=0
step() {  # step NAME OUTPUT COMMAND...: run, time, record
  local name=$1 output=$2; shift 2
  local started=$SECONDS
  echo "== $name" >&2
  "$@" > "$out/$output" 2> "$out/$name.log"
  local status=$?
  [ $status = 0 ] || failed=1
  echo "$name,$status,$((SECONDS - started)),$output" >> "$out/steps.csv"
  echo "   exit $status, $((SECONDS - started)) s" >&2
}

environment() {
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "mode: $([ $dry = 1 ] && echo 'dry run (CPU, tiny sizes: the figures mean nothing)' || echo "device $device")"
  "$python" -c "import torch; print('torch', torch.__version__, '| cuda available:', torch.cuda.is_available(),
  '|', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')"
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  echo "cpus: $(getconf _NPROCESSORS_ONLN)"
}

step environment environment.txt environment
if [ $dry = 0 ] && ! "$python" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
  echo "no CUDA device here: run with --dry-run, or on a machine with a GPU" >&2; exit 2
fi

step floors floors.txt "$python" "$repo/bench/floors.py" --device "$device" "${floors[@]}" \
  --markdown "$out/floors.md" --csv "$out/floors.csv"

step gpu_tests gpu_tests.txt "$python" -m pytest -q -p no:cacheprovider -m gpu "$repo/tests/models/test_cuda.py"

lstm_rows=(permutation adversarial gradient leave_one_out erasure_multi)
step analyses_lstm analyses_lstm.txt "$python" "$repo/bench/analyses.py" --device "$device" --threads 1 \
  "${analyses[@]}" --only "${lstm_rows[@]}"
step analyses_cnn analyses_cnn.txt "$python" "$repo/bench/analyses.py" --device "$device" --threads 1 \
  "${analyses[@]}" --encoder cnn --only leave_one_out

if [ -n "${PEERS_EXPORT:-}" ] && [ -f "$peers/bench_peers.py" ]; then
  step peers peers.md "$python" "$peers/bench_peers.py" --export "$PEERS_EXPORT" --json "$out/peers.json" \
    "${peers_args[@]}"
else
  echo "not run: set PEERS_EXPORT (and PEERS if ../shared/perf-peers is not beside the checkout)" > "$out/peers.md"
  echo "peers,skipped,0,peers.md" >> "$out/steps.csv"
fi

grid="$out/grid.yaml"
cat > "$grid" <<EOF
# bench/device.sh's small grid: two J&W SST cells (shipped data) trained and analysed on $device
name: device-smoke
results_dir: $out/runs
device: $device
grid: {dataset: [sst], encoder: [lstm, cnn], attention: [additive], seed: [0]}
train: $train
analyses:
  importance_correlation: {}
  permutation: {n: 100}
  adversarial: {k: 5, steps: $steps}
  erasure_multi: {rankings: [attention, random, gradient, grad_x_attention]}
instances: $instances
shard_size: 32
EOF
step grid grid.txt "$python" -m gridlab launch "$grid"
step grid_status grid_status.txt "$python" -m gridlab status "$grid"

{
  echo "# bench/device.sh, $(date -u +%F)"
  echo
  sed 's/^/    /' "$out/environment.txt"
  echo
  echo "| step | status | seconds | output |"
  echo "|---|---|---:|---|"
  tail -n +2 "$out/steps.csv" | while IFS=, read -r name status seconds output; do
    echo "| $name | $status | $seconds | $output |"
  done
  echo
  echo "## Each analysis against its floor"
  echo
  cat "$out/floors.md" 2> /dev/null || echo "(no table: see floors.log)"
  for part in analyses_lstm analyses_cnn; do
    echo
    echo "## $part (batched against the per-instance loop)"
    echo
    sed 's/^/    /' "$out/$part.txt"
  done
  echo
  echo "## The originals (perf-peers)"
  echo
  cat "$out/peers.md"
  echo
  echo "## Small grid ($device)"
  echo
  grep -h "," "$out/steps.csv" | grep "^grid," | cut -d, -f3 | sed 's/^/launch wall time (s): /'
  sed 's/^/    /' "$out/grid_status.txt"
} > "$out/README.md"
echo "table: $out/README.md" >&2
exit $failed
