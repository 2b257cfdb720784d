/* k-means in the style of the benchmark suites: the points' features come from the host as a
 * flat array, nfeatures per point; one kernel transposes them to feature-major order once, the
 * assignment kernel runs every iteration on the transposed copy, and an update pass moves each
 * point a little towards its centre (a stand-in for the host's centre update). */
__kernel void kmeans_swap(__global const float *feature, __global float *feature_swap, const int npoints,
                          const int nfeatures)
{
    const int tid = get_global_id(0);
    if (tid >= npoints)
        return;
    for (int i = 0; i < nfeatures; i++)
        feature_swap[i * npoints + tid] = feature[tid * nfeatures + i];
}

__kernel void kmeans_assign(__global const float *feature_swap, __global const float *clusters,
                            __global int *membership, const int npoints, const int nclusters, const int nfeatures)
{
    const int pid = get_global_id(0);
    if (pid >= npoints)
        return;
    int index = 0;
    float min_dist = 3.0e38f;
    for (int c = 0; c < nclusters; c++) {
        float dist = 0.0f;
        for (int l = 0; l < nfeatures; l++) {
            const float d = feature_swap[l * npoints + pid] - clusters[c * nfeatures + l];
            dist += d * d;
        }
        if (dist < min_dist) {
            min_dist = dist;
            index = c;
        }
    }
    membership[pid] = index;
}

__kernel void kmeans_pull(__global float *feature_swap, __global const float *clusters,
                          __global const int *membership, const int npoints, const int nfeatures)
{
    const int pid = get_global_id(0);
    if (pid >= npoints)
        return;
    const int c = membership[pid];
    for (int l = 0; l < nfeatures; l++)
        feature_swap[l * npoints + pid] += 0.05f * (clusters[c * nfeatures + l] - feature_swap[l * npoints + pid]);
}
