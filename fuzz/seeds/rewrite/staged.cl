typedef struct { float x, y, z; int id; float4 v; float a[3]; } Body;
#define GID get_global_id(0)
//DL: AoS: p[n]
__kernel void own(__global Body *p, uint n) {
  uint i = GID;
  if (i >= n) return;
  for (int k = 0; k < 3; k++) {
    if (p[i].a[k] > 15.0f) return;
    (p + i)->a[k] += (float)k * p[i].x;
  }
  p[i].v = p[i].v * 2.0f + p[get_global_id(0)].v.w;
  Body b = p[i];
  b.id++;
  p[i] = b;
}
//DL: AoS: in[n]
__kernel void readonly(__global const Body *in, __global float *out, uint n) {
  const size_t i = get_global_id(0);
  if (i < n) out[i] = in[i].x + in[i].v.z;
}
