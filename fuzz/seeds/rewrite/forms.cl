typedef struct { float4 v; float m[3]; int id; } Body;
#define AT(q, k) q[k]
float get_m(__global const Body *b, int k) { return b[k].m[1]; }
void put(__global Body *b, int k, float x) { (b + k)->m[0] = x; }
//DL: AoS: p[n]
__kernel void step(__global Body *p, uint n) {
  uint i = get_global_id(0);
  if (i >= n) return;
  p[i].v.x += p[i].m[2];
  p[i].v = p[i].v * 0.5f;
  Body q = p[i];
  q.id++;
  p[i] = q;
  __global float *m = &p[i].m[0];
  put(p, i, get_m(p, i) + AT(p, i).m[0] + m[0]);
  p[i].v.s3 = (float)p[i++ % n].id;
}
