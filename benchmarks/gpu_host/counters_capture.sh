#!/bin/bash
# Issue 27's H200 capture (one device call): the driver's occupancy answers and real `ncu --csv`
# output of the workbench's metric set, as root and as an unprivileged user (the permission error,
# where the driver restricts counters to admins). Run from a folder holding this script,
# counters_capture.py, occupancy_driver.py and occupancy_probe.ptx; writes into $OUT.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
PY=python3
PTX=$HERE/occupancy_probe.ptx
{ nvidia-smi --query-gpu=name,driver_version,mig.mode.current,clocks.sm,clocks.max.sm --format=csv; ncu --version; uname -r; } > $OUT/env.txt 2>&1
$PY $HERE/counters_capture.py occupancy $PTX $OUT/occupancy-h200.json 2>&1 | tee -a $OUT/env.txt
METRICS=$(cat $HERE/metrics.txt | paste -sd, -)
KERNELS='regex:^(saxpy|reduce_shared)$'
# The workbench's own invocation: its metric set, ncu's defaults (cache flush, base clocks).
ncu --csv --metrics "$METRICS" -k "$KERNELS" --log-file $OUT/ncu-h200.csv $PY $HERE/counters_capture.py launch $PTX > $OUT/ncu-stdout.txt 2>&1
rc=$?; echo "ncu default rc=$rc" >> $OUT/env.txt
if [ $rc -ne 0 ] || ! grep -q stalled $OUT/ncu-h200.csv; then
  # Fallback, should ncu refuse the regex: the stall reasons by name.
  EXPLICIT=$(grep -v regex: $HERE/metrics.txt | paste -sd, -)
  for r in barrier branch_resolving dispatch_stall drain imc_miss lg_throttle long_scoreboard math_pipe_throttle membar mio_throttle misc no_instruction not_selected selected short_scoreboard sleeping tex_throttle wait; do
    EXPLICIT="$EXPLICIT,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"; done
  ncu --csv --metrics "$EXPLICIT" -k "$KERNELS" --log-file $OUT/ncu-h200-explicit.csv $PY $HERE/counters_capture.py launch $PTX >> $OUT/ncu-stdout.txt 2>&1
  echo "ncu explicit rc=$?" >> $OUT/env.txt
fi
# The same set, clocks left alone and no cache flush, printed to stdout with base units.
ncu --csv --print-units base --clock-control none --cache-control none --metrics "$METRICS" -k "$KERNELS" \
    $PY $HERE/counters_capture.py launch $PTX > $OUT/ncu-h200-base-units.csv 2>&1
echo "ncu base-units rc=$?" >> $OUT/env.txt
# As an unprivileged user: ERR_NVGPUCTRPERM where counters are for admins only.
mkdir -p /tmp/wbprobe && cp $HERE/* /tmp/wbprobe/ && chmod -R a+rX /tmp/wbprobe
( cd /tmp && (runuser -u nobody -- ncu --csv --metrics gpu__time_duration.sum -k "$KERNELS" $PY /tmp/wbprobe/counters_capture.py launch /tmp/wbprobe/occupancy_probe.ptx \
  || setpriv --reuid=65534 --regid=65534 --clear-groups ncu --csv --metrics gpu__time_duration.sum -k "$KERNELS" $PY /tmp/wbprobe/counters_capture.py launch /tmp/wbprobe/occupancy_probe.ptx) ) > $OUT/ncu-h200-unprivileged.txt 2>&1
echo "ncu unprivileged rc=$?" >> $OUT/env.txt
ncu --query-metrics --chip gh100 2>&1 | grep -E "stalled|warps_active|hit_rate|throughput|occupancy|time_duration|cycles_elapsed" | head -300 > $OUT/query-metrics.txt
cat $OUT/env.txt
