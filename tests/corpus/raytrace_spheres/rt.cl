/* Whitted-style ray tracer: primary rays generated per pixel into a ray buffer, then traced
 * against a list of spheres with a fixed number of mirror bounces. The scene and the rays are
 * arrays of structures; the frame index moves the camera. */
typedef struct {
    float3 center;
    float radius;
    float3 color;
    float reflect;
} Sphere;

typedef struct {
    float4 origin;
    float4 dir;
} Ray;

#define MAX_BOUNCES 3

__kernel void gen_rays(__global Ray *rays, const int width, const int height, const int frame)
{
    const int x = get_global_id(0), y = get_global_id(1);
    const float aspect = (float)width / height;
    const float u = (2.0f * (x + 0.5f) / width - 1.0f) * aspect;
    const float v = 1.0f - 2.0f * (y + 0.5f) / height;
    const float a = 0.05f * frame;
    const float3 eye = (float3)(4.0f * sin(a), 1.0f, -4.0f * cos(a));
    const float3 fwd = normalize(-eye);
    const float3 right = normalize(cross((float3)(0.0f, 1.0f, 0.0f), fwd));
    const float3 up = cross(fwd, right);
    const int i = y * width + x;
    rays[i].origin = (float4)(eye, 0.0f);
    rays[i].dir = (float4)(normalize(fwd + u * right + v * up), 0.0f);
}

static float hit_sphere(__global const Sphere *s, float3 o, float3 d)
{
    const float3 oc = o - s->center;
    const float b = dot(oc, d);
    const float c = dot(oc, oc) - s->radius * s->radius;
    const float disc = b * b - c;
    if (disc < 0.0f)
        return -1.0f;
    const float t = -b - sqrt(disc);
    return t > 1e-3f ? t : -1.0f;
}

__kernel void trace(__global const Ray *rays, __global const Sphere *spheres, const int nspheres,
                    __global float4 *image, const int width)
{
    const int i = get_global_id(1) * width + get_global_id(0);
    float3 o = rays[i].origin.xyz, d = rays[i].dir.xyz;
    float3 color = (float3)(0.0f), weight = (float3)(1.0f);
    const float3 light = normalize((float3)(1.0f, 2.0f, -1.0f));
    for (int bounce = 0; bounce < MAX_BOUNCES; bounce++) {
        float best = 1e30f;
        int hit = -1;
        for (int s = 0; s < nspheres; s++) {
            const float t = hit_sphere(&spheres[s], o, d);
            if (t > 0.0f && t < best) {
                best = t;
                hit = s;
            }
        }
        if (hit < 0) {
            color += weight * (float3)(0.2f, 0.3f, 0.5f) * (0.5f + 0.5f * d.y);
            break;
        }
        const float3 p = o + best * d;
        const float3 nrm = normalize(p - spheres[hit].center);
        const float diffuse = fmax(dot(nrm, light), 0.0f);
        color += weight * (1.0f - spheres[hit].reflect) * spheres[hit].color * (0.1f + 0.9f * diffuse);
        weight *= spheres[hit].reflect * spheres[hit].color;
        o = p;
        d = d - 2.0f * dot(d, nrm) * nrm;
    }
    image[i] = 0.9f * image[i] + 0.1f * (float4)(color, 1.0f);
}
