//DL: SoA(3): f[n]
__kernel void soa3(__global float *f, int n) {
  int i = get_global_id(0);
  if (i >= n) return;
  f[0 * n + i] += f[1 * n + i] * f[2 * n + i];
  f[n + i - 1 + 1] = f[2*n + i];
}
//DL: AoS(2, 8): d[get_global_size(0)]
__kernel void aos2(__global double *d) {
  size_t i = get_global_id(0);
  d[2 * i] = d[2 * i + 1] + 1.0;
}
