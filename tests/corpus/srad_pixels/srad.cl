/* Speckle-reducing anisotropic diffusion (SRAD) of an ultrasound image, the per-pixel state in
 * one record: the image value, its four directional derivatives and the diffusion coefficient. */
typedef struct {
    float J;
    float dN, dS, dW, dE;
    float c;
    float q2;
    float pad;
} SradPixel;

__kernel void srad_coeff(__global SradPixel *img, const int rows, const int cols, const float q0sqr)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x >= cols || y >= rows)
        return;
    const int k = y * cols + x;
    const float Jc = img[k].J;
    const int n = (y > 0 ? y - 1 : 0) * cols + x, s = (y < rows - 1 ? y + 1 : rows - 1) * cols + x;
    const int w = y * cols + (x > 0 ? x - 1 : 0), e = y * cols + (x < cols - 1 ? x + 1 : cols - 1);
    img[k].dN = img[n].J - Jc;
    img[k].dS = img[s].J - Jc;
    img[k].dW = img[w].J - Jc;
    img[k].dE = img[e].J - Jc;
    const float g2 = (img[k].dN * img[k].dN + img[k].dS * img[k].dS + img[k].dW * img[k].dW + img[k].dE * img[k].dE) /
                     (Jc * Jc);
    const float l = (img[k].dN + img[k].dS + img[k].dW + img[k].dE) / Jc;
    const float num = 0.5f * g2 - 0.0625f * l * l;
    const float den = 1.0f + 0.25f * l;
    const float qsqr = num / (den * den);
    const float cden = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
    img[k].q2 = qsqr;
    img[k].c = clamp(1.0f / (1.0f + cden), 0.0f, 1.0f);
}

__kernel void srad_update(__global SradPixel *img, const int rows, const int cols, const float lambda)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x >= cols || y >= rows)
        return;
    const int k = y * cols + x;
    const int s = (y < rows - 1 ? y + 1 : rows - 1) * cols + x;
    const int e = y * cols + (x < cols - 1 ? x + 1 : cols - 1);
    const float cN = img[k].c, cW = img[k].c, cS = img[s].c, cE = img[e].c;
    const float D = cN * img[k].dN + cS * img[k].dS + cW * img[k].dW + cE * img[k].dE;
    img[k].J += 0.25f * lambda * D;
}
