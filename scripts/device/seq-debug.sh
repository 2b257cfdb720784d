S=/tmp/pace-samples
. scripts/device/samples-env.sh NVIDIA
c=/tmp/seq-cache; rm -rf $c
for p in 64000:1 262144:100 64000:2 262144:30; do
  n=${p%%:*}; i=${p##*:}
  echo "== $p"
  (cd samples/particles && CLAYOUT_LOG=debug CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=$root/samples/particles/particles.dl LD_PRELOAD=$lib $S/particles/particles -n $n -i $i --platform NVIDIA 2>&1 >/dev/null | grep -E "wait took|finds the device|copies are built|runs as written until|keeps up" | sed 's/kernel platform.*|particles_/particles_/' | cut -c1-260 | head -12)
done
