/* Explicit Runge-Kutta Euler solver on an unstructured mesh. Everything is kept per element:
 * NVAR conserved variables, NNB neighbour indices and NNB face normals of NDIM components, each
 * in a flat array with the element's values together. */
#include "euler3d.h"

inline void velocity_of(float density, float3 momentum, float3 *velocity) { *velocity = momentum / density; }

inline float speed_sqd(float3 v) { return v.x * v.x + v.y * v.y + v.z * v.z; }

inline float pressure_of(float density, float density_energy, float speed_sqd)
{
    return (GAMMA - 1.0f) * (density_energy - 0.5f * density * speed_sqd);
}

inline float sound_of(float density, float pressure) { return sqrt(GAMMA * fabs(pressure) / density); }

inline void flux_contribution(float density, float3 momentum, float density_energy, float pressure, float3 velocity,
                              float3 *fx, float3 *fy, float3 *fz, float3 *fe)
{
    fx->x = velocity.x * momentum.x + pressure;
    fx->y = velocity.x * momentum.y;
    fx->z = velocity.x * momentum.z;
    fy->x = fx->y;
    fy->y = velocity.y * momentum.y + pressure;
    fy->z = velocity.y * momentum.z;
    fz->x = fx->z;
    fz->y = fy->z;
    fz->z = velocity.z * momentum.z + pressure;
    const float de_p = density_energy + pressure;
    *fe = velocity * de_p;
}

__kernel void save_old(__global const float *variables, __global float *old_variables, const int nelr)
{
    const int i = get_global_id(0);
    if (i >= nelr)
        return;
    for (int k = 0; k < NVAR; k++)
        old_variables[NVAR * i + k] = variables[NVAR * i + k];
}

__kernel void compute_step_factor(__global const float *variables, __global const float *areas,
                                  __global float *step_factors, const int nelr)
{
    const int i = get_global_id(0);
    if (i >= nelr)
        return;
    const float density = variables[NVAR * i + VAR_DENSITY];
    const float3 momentum = (float3)(variables[NVAR * i + VAR_MOMENTUM + 0], variables[NVAR * i + VAR_MOMENTUM + 1],
                                     variables[NVAR * i + VAR_MOMENTUM + 2]);
    const float density_energy = variables[NVAR * i + VAR_DENSITY_ENERGY];
    float3 velocity;
    velocity_of(density, momentum, &velocity);
    const float s2 = speed_sqd(velocity);
    const float p = pressure_of(density, density_energy, s2);
    step_factors[i] = 0.5f / (sqrt(areas[i]) * (sqrt(s2) + sound_of(density, p)));
}

__kernel void compute_flux(__global const int *elements_surrounding_elements, __global const float *normals,
                           __global const float *variables, __constant float *ff_variable,
                           __global float *fluxes, const int nelr)
{
    const float smoothing_coefficient = 0.2f;
    const int i = get_global_id(0);
    if (i >= nelr)
        return;
    const float density_i = variables[NVAR * i + VAR_DENSITY];
    const float3 momentum_i = (float3)(variables[NVAR * i + VAR_MOMENTUM + 0], variables[NVAR * i + VAR_MOMENTUM + 1],
                                       variables[NVAR * i + VAR_MOMENTUM + 2]);
    const float density_energy_i = variables[NVAR * i + VAR_DENSITY_ENERGY];
    float3 velocity_i;
    velocity_of(density_i, momentum_i, &velocity_i);
    const float speed_i = sqrt(speed_sqd(velocity_i));
    const float pressure_i = pressure_of(density_i, density_energy_i, speed_sqd(velocity_i));
    const float sound_i = sound_of(density_i, pressure_i);
    float3 fx_i, fy_i, fz_i, fe_i;
    flux_contribution(density_i, momentum_i, density_energy_i, pressure_i, velocity_i, &fx_i, &fy_i, &fz_i, &fe_i);

    float flux_density = 0.0f, flux_density_energy = 0.0f;
    float3 flux_momentum = (float3)(0.0f);
    for (int j = 0; j < NNB; j++) {
        const int nb = elements_surrounding_elements[i * NNB + j];
        const float3 normal = (float3)(normals[(i * NNB + j) * NDIM + 0], normals[(i * NNB + j) * NDIM + 1],
                                       normals[(i * NNB + j) * NDIM + 2]);
        const float normal_len = sqrt(speed_sqd(normal));
        if (nb >= 0) {
            const float density_nb = variables[NVAR * nb + VAR_DENSITY];
            const float3 momentum_nb = (float3)(variables[NVAR * nb + VAR_MOMENTUM + 0],
                                                variables[NVAR * nb + VAR_MOMENTUM + 1],
                                                variables[NVAR * nb + VAR_MOMENTUM + 2]);
            const float density_energy_nb = variables[NVAR * nb + VAR_DENSITY_ENERGY];
            float3 velocity_nb;
            velocity_of(density_nb, momentum_nb, &velocity_nb);
            const float pressure_nb = pressure_of(density_nb, density_energy_nb, speed_sqd(velocity_nb));
            const float sound_nb = sound_of(density_nb, pressure_nb);
            float3 fx_nb, fy_nb, fz_nb, fe_nb;
            flux_contribution(density_nb, momentum_nb, density_energy_nb, pressure_nb, velocity_nb, &fx_nb, &fy_nb,
                              &fz_nb, &fe_nb);
            const float factor = -normal_len * smoothing_coefficient * 0.5f *
                                 (speed_i + sqrt(speed_sqd(velocity_nb)) + sound_i + sound_nb);
            flux_density += factor * (density_i - density_nb);
            flux_density_energy += factor * (density_energy_i - density_energy_nb);
            flux_momentum += factor * (momentum_i - momentum_nb);
            const float3 fd = 0.5f * (momentum_nb + momentum_i);
            flux_density += dot(normal, fd);
            flux_density_energy += dot(normal, 0.5f * (fe_nb + fe_i));
            flux_momentum.x += dot(normal, 0.5f * (fx_nb + fx_i));
            flux_momentum.y += dot(normal, 0.5f * (fy_nb + fy_i));
            flux_momentum.z += dot(normal, 0.5f * (fz_nb + fz_i));
        } else if (nb == WALL_FACE) {
            flux_momentum += normal * pressure_i;
        } else {
            const float3 ff_momentum = (float3)(ff_variable[1], ff_variable[2], ff_variable[3]);
            flux_density += 0.5f * dot(normal, ff_momentum + momentum_i);
            flux_density_energy += 0.5f * dot(normal, fe_i) * 0.5f;
            flux_momentum += 0.5f * normal * (pressure_i + ff_variable[4]);
        }
    }
    fluxes[i * NVAR + VAR_DENSITY] = flux_density;
    fluxes[i * NVAR + VAR_MOMENTUM + 0] = flux_momentum.x;
    fluxes[i * NVAR + VAR_MOMENTUM + 1] = flux_momentum.y;
    fluxes[i * NVAR + VAR_MOMENTUM + 2] = flux_momentum.z;
    fluxes[i * NVAR + VAR_DENSITY_ENERGY] = flux_density_energy;
}

__kernel void time_step(const int j, const int nelr, __global const float *old_variables, __global float *variables,
                        __global const float *step_factors, __global const float *fluxes)
{
    const int i = get_global_id(0);
    if (i >= nelr)
        return;
    const float factor = step_factors[i] / (float)(RK + 1 - j);
    for (int k = 0; k < NVAR; k++)
        variables[NVAR * i + k] = old_variables[NVAR * i + k] + factor * fluxes[NVAR * i + k] * 0.01f;
}
