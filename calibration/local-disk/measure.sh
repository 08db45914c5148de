#!/usr/bin/env bash
# Measure a disk with real fio so the simulator can be calibrated on it and validated against it.
#   calibration/local-disk/measure.sh [TARGET_DIR] [OUT_DIR]
# Environment: SIZE (test file size, default 2G), RUNTIME (s per run, default 10), RAMP (s, default 2),
#              QDS (default "1 2 4 8 16 32 64"), SYNC_JOBS (default "1 2 4 8").
# Runs: 4 KiB randread and randwrite, libaio, direct=1, at each QD; 4 KiB sequential write with
# --sync=1 (O_DSYNC, psync engine, iodepth 1) at numjobs N (the Ceph journal test).
# Writes one fio JSON per run (fio --output-format=json) plus machine.txt describing the machine.
set -euo pipefail
TARGET=${1:-/var/tmp/simrun-fio}
OUT=${2:-$(dirname "$0")/runs/$(hostname)-$(date +%Y%m%d)}
SIZE=${SIZE:-2G}
RUNTIME=${RUNTIME:-10}
RAMP=${RAMP:-2}
QDS=${QDS:-"1 2 4 8 16 32 64"}
SYNC_JOBS=${SYNC_JOBS:-"1 2 4 8"}
command -v fio >/dev/null || { echo "fio not found (apt-get install fio)" >&2; exit 2; }
mkdir -p "$TARGET" "$OUT"
FILE=$TARGET/fio-testfile
common=(--filename="$FILE" --size="$SIZE" --direct=1 --bs=4k --time_based --runtime="$RUNTIME"
        --ramp_time="$RAMP" --group_reporting --output-format=json --randrepeat=1)
{
  echo "date: $(date -u +%FT%TZ)"; echo "fio: $(fio --version)"; echo "kernel: $(uname -r)"
  echo "cpus: $(nproc)"; df -h "$TARGET" | tail -1
  dev=$(df "$TARGET" | tail -1 | awk '{print $1}'); echo "device: $dev"
  b=$(basename "$dev"); b=${b%%[0-9]*}
  for f in rotational scheduler nr_requests write_cache; do
    [ -r /sys/block/$b/queue/$f ] && echo "queue/$f: $(cat /sys/block/$b/queue/$f)"; done
} > "$OUT/machine.txt" 2>/dev/null || true
# lay out the file once (fully written, so reads hit allocated blocks)
fio --name=prefill --filename="$FILE" --size="$SIZE" --rw=write --bs=1M --direct=1 --output=/dev/null
for rw in randread randwrite; do
  for qd in $QDS; do
    echo "fio $rw iodepth=$qd" >&2
    fio --name="$rw-qd$qd" --ioengine=libaio --rw=$rw --iodepth="$qd" "${common[@]}" --output="$OUT/$rw-qd$qd.json"
  done
done
for n in $SYNC_JOBS; do
  echo "fio sync write numjobs=$n" >&2
  fio --name="syncwrite-j$n" --ioengine=psync --rw=write --sync=1 --iodepth=1 --numjobs="$n" \
      --offset_increment=64M "${common[@]}" --output="$OUT/syncwrite-j$n.json"
done
rm -f "$FILE"
echo "results in $OUT" >&2
