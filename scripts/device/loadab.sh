#!/usr/bin/env bash
# On the GPU machine (issue 17): what loading the private program inside the application's build
# costs, two builds of clayout in turn. Each sample (particles at 64,000, blackscholes at 2^22,
# lbm at 64^3) runs ROUNDS times (default 7) with two iterations under CLAYOUT_POLICY=always and
# CLAYOUT_LOG=debug, once per library of LIBS in each round, each library on a fresh clayout
# cache of its own; the first round compiles, the later ones load from the driver's cache. Prints
# clayout's line on that build and the sample's checksum, per run.
#   LIBS="base37 libclayout" ROUNDS=7 scripts/device/loadab.sh [PLATFORM]
# (LIBS names libraries in .devcarry/rt without their .so.)
set -uo pipefail
S=/tmp/ab-samples
. scripts/device/samples-env.sh
libs=${LIBS:-base37 libclayout}
for sample in particles blackscholes lbm; do
    case $sample in lbm) size="-x 64 -y 64 -z 64" ;; blackscholes) size="-n 4194304" ;; *) size="-n 64000" ;; esac
    for l in $libs; do rm -rf /tmp/ab-cache-$l; done
    for r in $(seq ${ROUNDS:-7}); do
        for l in $libs; do
            (cd samples/$sample && CLAYOUT_LOG=debug CLAYOUT_POLICY=always CLAYOUT_CACHE_DIR=/tmp/ab-cache-$l \
                CLAYOUT_ANNOTATIONS=$root/samples/$sample/$sample.dl LD_PRELOAD=$root/.devcarry/rt/$l.so \
                $S/$sample/$sample $size -i 2 --platform $platform 2>&1 |
                grep -E "private program (built|loaded)|checksum" | sed "s/^/$sample $l r$r: /")
        done
    done
done
