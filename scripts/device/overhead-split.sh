#!/usr/bin/env bash
# On the GPU machine, after scripts/device/samples.sh (or make -C samples) built the samples into
# /tmp/clayout-target/samples: blackscholes with one iteration at the large size, four times
# each without clayout and with more and more of it switched on (CLAYOUT_DISABLE=1, the DL
# runtime without rewriting, the transparent mode under never, under auto), printing kernel_ms:
# where a fixed per-run cost comes from (docs/results.md). Needs the release library in
# .devcarry/rt/libclayout.so.
lib=$(readlink -f .devcarry/rt/libclayout.so)
bin=/tmp/clayout-target/samples/blackscholes/blackscholes
export SAMPLE_PLATFORM=NVIDIA CLAYOUT_CACHE_DIR=/tmp/ovh-cache
A=samples/blackscholes/blackscholes.dl
run() { env "$@" $bin -i 1 -n 33554432 | grep kernel_ms | cut -d' ' -f2; }
CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib $bin -i 30 -n 33554432 >/dev/null
for rep in 1 2 3 4; do
  echo "rep $rep plain $(run X=1) disable $(run CLAYOUT_DISABLE=1 LD_PRELOAD=$lib) norewrite $(run CLAYOUT_REWRITE=0 CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib) never $(run CLAYOUT_POLICY=never CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib) auto $(run CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib)"
done
