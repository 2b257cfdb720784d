/* Weighted histogram of event energies: each event record is binned with 32-bit atomics on the
 * bin record's counters (count and fixed-point weight sum), so the result does not depend on
 * the order the work-items run in. Events then decay a little each pass. */
#pragma OPENCL EXTENSION cl_khr_global_int32_base_atomics : enable

typedef struct {
    float energy;
    float weight;
    int channel;
    int hits;
} Event;

typedef struct {
    uint count;
    uint wsum; /* fixed point, 1/1024 */
    float lo;
    float width;
} Bin;

__kernel void clear_bins(__global Bin *bins, const int nbins)
{
    const int b = get_global_id(0);
    if (b >= nbins)
        return;
    bins[b].count = 0;
    bins[b].wsum = 0;
}

__kernel void fill_histogram(__global Event *events, const int n, __global Bin *bins, const int nbins,
                             const float emin, const float emax)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const float e = events[i].energy;
    int b = (int)((e - emin) / (emax - emin) * nbins);
    b = clamp(b, 0, nbins - 1);
    atomic_inc(&bins[b].count);
    atomic_add(&bins[b].wsum, (uint)(events[i].weight * 1024.0f));
    events[i].hits++;
    events[i].energy = e * 0.97f + 0.01f * (float)(events[i].channel & 7);
}
