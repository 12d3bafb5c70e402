/*
 * The model the runtime trains: a multi-layer perceptron of kLayers dense
 * tanh layers of width kWidth, mean-squared-error loss, float64. Each
 * pipeline stage owns a contiguous range of layers. The same layer functions
 * serve the pipelined run and the single-threaded reference, so the two
 * agree bit for bit when the schedule feeds every op the right tensors.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPELINE_RUNTIME_MODEL_HPP
#define PIPELINE_RUNTIME_MODEL_HPP

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rt {

/* Tiny on purpose: the check runs hundreds of schedules in a few seconds. */
constexpr std::size_t kWidth = 8;  /* features per layer */
constexpr std::size_t kRows = 2;   /* samples per micro-batch */
constexpr std::uint32_t kLayers = 16;

/** kRows x kWidth values, row-major. */
using Tensor = std::vector<double>;

/** One dense layer y = tanh(x W^T + b). */
struct Layer {
    std::vector<double> w; /* kWidth x kWidth, [out][in] */
    std::vector<double> b; /* kWidth */
};

/** Weight gradient of one layer (same shapes as Layer). */
struct LayerGrad {
    std::vector<double> w;
    std::vector<double> b;
};

/** One model copy (DualPipe trains two, one per chain, starting equal). */
struct Model {
    std::vector<Layer> layers;
    static Model init(std::uint64_t seed);
};

/** Layers [first, first + count) of the model. */
struct LayerRange {
    std::uint32_t first;
    std::uint32_t count;
};

/** Layers of stage @p local (0-based within its chain) when the model is cut
 *  into @p stages contiguous, nearly equal parts. */
LayerRange stage_layers(std::uint32_t local, std::uint32_t stages);

/**
 * What an F keeps for its backward: the live activation buffer the memory
 * accounting counts. B adds the pre-activation gradients W needs; W (or BW)
 * frees the whole record.
 */
struct Activations {
    std::vector<Tensor> x;  /* input of each layer */
    std::vector<Tensor> y;  /* output of each layer */
    std::vector<Tensor> dz; /* dL/d(pre-activation) of each layer, written by B */
    Tensor out;             /* the stage's output */
};

/** Forward through @p range; returns the output and records @p keep. */
Tensor forward(const Model &model, LayerRange range, const Tensor &in, Activations &keep);

/** Backward for inputs: from dL/d(output) @p dy, fills keep.dz and returns
 *  dL/d(input). */
Tensor backward_input(const Model &model, LayerRange range, const Tensor &dy, Activations &keep);

/** Backward for weights from what F and B kept: one gradient per layer. */
std::vector<LayerGrad> backward_weight(LayerRange range, const Activations &keep);

/** Input and target of micro-batch @p mb of chain @p chain (deterministic). */
Tensor sample_input(std::uint32_t chain, std::uint32_t mb, std::uint32_t mbs);
Tensor sample_target(std::uint32_t chain, std::uint32_t mb, std::uint32_t mbs);

/** dL/d(output) of the loss mean((y - t)^2) over the chain's @p mbs
 *  micro-batches. */
Tensor loss_grad(const Tensor &y, const Tensor &target, std::uint32_t mbs);

/** Σ over micro-batches, in micro-batch order, of per-micro-batch gradients
 *  per_mb[k][layer]: the fixed order that makes float64 sums reproducible. */
std::vector<LayerGrad> sum_in_order(const std::vector<std::vector<LayerGrad>> &per_mb);

/** The non-pipelined reference step of one chain: every micro-batch through
 *  the whole model on one thread; gradients per layer. */
std::vector<LayerGrad> reference_step(const Model &model, std::uint32_t chain, std::uint32_t mbs);

/** Largest |a - b| over every weight and bias (same shapes required). */
double max_abs_diff(const std::vector<LayerGrad> &a, const std::vector<LayerGrad> &b);

/** Largest |g| over every weight and bias. */
double max_abs(const std::vector<LayerGrad> &g);

} // namespace rt

#endif
