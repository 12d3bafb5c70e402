/*
 * Layer math of the example model. Loops run in one fixed order so that a
 * stage computed on a device thread and the same layers computed by the
 * reference produce identical doubles.
 *
 * SPDX-License-Identifier: MIT
 */
#include "model.hpp"

#include <cmath>
#include <limits>

namespace rt {

namespace {

/* splitmix64: a deterministic value in [-1, 1) from a key, so every run and
 * every platform trains on the same weights and data. */
double uniform(std::uint64_t key)
{
    std::uint64_t z = key + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
}

std::uint64_t key(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d)
{
    return ((a * 1000003u + b) * 1000003u + c) * 1000003u + d;
}

Tensor sample(std::uint64_t what, std::uint32_t chain, std::uint32_t mb, std::uint32_t mbs)
{
    /* DualPipe's chains split one batch: chain c gets samples c·mbs.. */
    std::uint64_t index = static_cast<std::uint64_t>(chain) * mbs + mb;
    Tensor t(kRows * kWidth);
    for (std::size_t i = 0; i < t.size(); i++)
        t[i] = uniform(key(what, index, i, 0));
    return t;
}

/* Like fmax, except that a NaN wins: a NaN gradient must fail the check. */
double worse(double worst, double value)
{
    return (value > worst || std::isnan(value)) ? value : worst;
}

} // namespace

Model Model::init(std::uint64_t seed)
{
    /* Gain 2/sqrt(width) keeps tanh activations and gradients O(0.1..1)
     * through 16 layers, so a wrong tensor shows as a large difference. */
    const double gain = 2.0 / std::sqrt(static_cast<double>(kWidth));
    Model m;
    m.layers.resize(kLayers);
    for (std::uint32_t l = 0; l < kLayers; l++) {
        m.layers[l].w.resize(kWidth * kWidth);
        m.layers[l].b.resize(kWidth);
        for (std::size_t i = 0; i < kWidth * kWidth; i++)
            m.layers[l].w[i] = gain * uniform(key(seed, 1, l, i));
        for (std::size_t i = 0; i < kWidth; i++)
            m.layers[l].b[i] = 0.1 * uniform(key(seed, 2, l, i));
    }
    return m;
}

LayerRange stage_layers(std::uint32_t local, std::uint32_t stages)
{
    std::uint32_t first = local * kLayers / stages;
    std::uint32_t end = (local + 1) * kLayers / stages;
    return {first, end - first};
}

Tensor forward(const Model &model, LayerRange range, const Tensor &in, Activations &keep)
{
    Tensor x = in;
    for (std::uint32_t l = range.first; l < range.first + range.count; l++) {
        const Layer &layer = model.layers[l];
        Tensor y(kRows * kWidth);
        for (std::size_t r = 0; r < kRows; r++) {
            for (std::size_t o = 0; o < kWidth; o++) {
                double z = layer.b[o];
                for (std::size_t i = 0; i < kWidth; i++)
                    z += x[r * kWidth + i] * layer.w[o * kWidth + i];
                y[r * kWidth + o] = std::tanh(z);
            }
        }
        keep.x.push_back(x);
        keep.y.push_back(y);
        x = std::move(y);
    }
    keep.out = x;
    return x;
}

Tensor backward_input(const Model &model, LayerRange range, const Tensor &dy, Activations &keep)
{
    keep.dz.assign(range.count, Tensor());
    Tensor g = dy;
    for (std::uint32_t j = range.count; j-- > 0;) {
        const Layer &layer = model.layers[range.first + j];
        const Tensor &y = keep.y[j];
        Tensor dz(kRows * kWidth), dx(kRows * kWidth, 0.0);
        for (std::size_t i = 0; i < dz.size(); i++)
            dz[i] = g[i] * (1.0 - y[i] * y[i]);
        for (std::size_t r = 0; r < kRows; r++)
            for (std::size_t o = 0; o < kWidth; o++)
                for (std::size_t i = 0; i < kWidth; i++)
                    dx[r * kWidth + i] += dz[r * kWidth + o] * layer.w[o * kWidth + i];
        keep.dz[j] = std::move(dz);
        g = std::move(dx);
    }
    return g;
}

std::vector<LayerGrad> backward_weight(LayerRange range, const Activations &keep)
{
    std::vector<LayerGrad> grads(range.count);
    for (std::uint32_t j = 0; j < range.count; j++) {
        const Tensor &dz = keep.dz[j], &x = keep.x[j];
        LayerGrad &g = grads[j];
        g.w.assign(kWidth * kWidth, 0.0);
        g.b.assign(kWidth, 0.0);
        for (std::size_t r = 0; r < kRows; r++) {
            for (std::size_t o = 0; o < kWidth; o++) {
                g.b[o] += dz[r * kWidth + o];
                for (std::size_t i = 0; i < kWidth; i++)
                    g.w[o * kWidth + i] += dz[r * kWidth + o] * x[r * kWidth + i];
            }
        }
    }
    return grads;
}

Tensor sample_input(std::uint32_t chain, std::uint32_t mb, std::uint32_t mbs)
{
    return sample(3, chain, mb, mbs);
}

Tensor sample_target(std::uint32_t chain, std::uint32_t mb, std::uint32_t mbs)
{
    return sample(4, chain, mb, mbs);
}

Tensor loss_grad(const Tensor &y, const Tensor &target, std::uint32_t mbs)
{
    const double scale = 2.0 / static_cast<double>(kRows * kWidth * mbs);
    Tensor g(y.size());
    for (std::size_t i = 0; i < y.size(); i++)
        g[i] = scale * (y[i] - target[i]);
    return g;
}

std::vector<LayerGrad> sum_in_order(const std::vector<std::vector<LayerGrad>> &per_mb)
{
    std::vector<LayerGrad> sum;
    for (const std::vector<LayerGrad> &mb : per_mb) {
        if (sum.empty()) {
            for (const LayerGrad &g : mb)
                sum.push_back({std::vector<double>(g.w.size(), 0.0),
                               std::vector<double>(g.b.size(), 0.0)});
        }
        for (std::size_t l = 0; l < mb.size() && l < sum.size(); l++) {
            for (std::size_t i = 0; i < mb[l].w.size(); i++)
                sum[l].w[i] += mb[l].w[i];
            for (std::size_t i = 0; i < mb[l].b.size(); i++)
                sum[l].b[i] += mb[l].b[i];
        }
    }
    return sum;
}

std::vector<LayerGrad> reference_step(const Model &model, std::uint32_t chain, std::uint32_t mbs)
{
    const LayerRange all{0, kLayers};
    std::vector<std::vector<LayerGrad>> per_mb;
    for (std::uint32_t k = 0; k < mbs; k++) {
        Activations keep;
        Tensor y = forward(model, all, sample_input(chain, k, mbs), keep);
        backward_input(model, all, loss_grad(y, sample_target(chain, k, mbs), mbs), keep);
        per_mb.push_back(backward_weight(all, keep));
    }
    return sum_in_order(per_mb);
}

double max_abs_diff(const std::vector<LayerGrad> &a, const std::vector<LayerGrad> &b)
{
    if (a.size() != b.size())
        return std::numeric_limits<double>::infinity();
    double worst = 0.0;
    for (std::size_t l = 0; l < a.size(); l++) {
        if (a[l].w.size() != b[l].w.size() || a[l].b.size() != b[l].b.size())
            return std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < a[l].w.size(); i++)
            worst = worse(worst, std::fabs(a[l].w[i] - b[l].w[i]));
        for (std::size_t i = 0; i < a[l].b.size(); i++)
            worst = worse(worst, std::fabs(a[l].b[i] - b[l].b[i]));
    }
    return worst;
}

double max_abs(const std::vector<LayerGrad> &g)
{
    double worst = 0.0;
    for (const LayerGrad &l : g) {
        for (double v : l.w)
            worst = worse(worst, std::fabs(v));
        for (double v : l.b)
            worst = worse(worst, std::fabs(v));
    }
    return worst;
}

} // namespace rt
