/*
 * Vocabulary Parallelism in the runtime: the output layer, its shards' S
 * and T passes, the collectives' board and the reference. See vocab.hpp.
 *
 * SPDX-License-Identifier: MIT
 */
#include "vocab.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

namespace rt {

namespace {

/* The same small deterministic generator family as model.cpp's samples. */
double unit(std::uint64_t &state)
{
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) / 9007199254740992.0 - 0.5;
}

double scale_of(std::uint32_t mbs) { return 1.0 / static_cast<double>(kRows * mbs); }

/* Logits of classes [first, first + count) for the rows of x. */
std::vector<double> logits_of(const VocabLayer &v, std::uint32_t first, std::uint32_t count,
                              const Tensor &x)
{
    std::vector<double> l(kRows * count, 0.0);
    for (std::size_t r = 0; r < kRows; r++)
        for (std::uint32_t j = 0; j < count; j++)
            for (std::size_t i = 0; i < kWidth; i++)
                l[r * count + j] += x[r * kWidth + i] * v.w[(first + j) * kWidth + i];
    return l;
}

/* dL/d(logits) of classes [first, first + count) from the global row max
 * and sum: (softmax - one-hot) / (rows · micro-batches). */
std::vector<double> logit_grad(const std::vector<double> &l, std::uint32_t first,
                               std::uint32_t count, const double *mx, const double *sum,
                               const std::vector<std::uint32_t> &labels, std::uint32_t mbs)
{
    std::vector<double> g(kRows * count);
    for (std::size_t r = 0; r < kRows; r++)
        for (std::uint32_t j = 0; j < count; j++)
            g[r * count + j] = (std::exp(l[r * count + j] - mx[r]) / sum[r] -
                                (labels[r] == first + j ? 1.0 : 0.0)) *
                               scale_of(mbs);
    return g;
}

/* dW of the classes (count x kWidth) and dX (kRows x kWidth) from g. */
void grads_of(const VocabLayer &v, std::uint32_t first, std::uint32_t count,
              const std::vector<double> &g, const Tensor &x, std::vector<double> *dw,
              std::vector<double> *dx)
{
    if (dw) {
        dw->assign(static_cast<std::size_t>(count) * kWidth, 0.0);
        for (std::size_t r = 0; r < kRows; r++)
            for (std::uint32_t j = 0; j < count; j++)
                for (std::size_t i = 0; i < kWidth; i++)
                    (*dw)[j * kWidth + i] += g[r * count + j] * x[r * kWidth + i];
    }
    if (dx) {
        dx->assign(kRows * kWidth, 0.0);
        for (std::size_t r = 0; r < kRows; r++)
            for (std::uint32_t j = 0; j < count; j++)
                for (std::size_t i = 0; i < kWidth; i++)
                    (*dx)[r * kWidth + i] += g[r * count + j] * v.w[(first + j) * kWidth + i];
    }
}

} // namespace

VocabLayer VocabLayer::init(std::uint32_t size, std::uint64_t seed)
{
    VocabLayer v;
    v.size = size;
    std::uint64_t state = seed * 2654435761ull + 7;
    v.w.resize(static_cast<std::size_t>(size) * kWidth);
    for (double &x : v.w)
        x = unit(state);
    return v;
}

std::vector<std::uint32_t> sample_labels(std::uint32_t mb, std::uint32_t mbs, std::uint32_t size)
{
    std::vector<std::uint32_t> labels(kRows);
    for (std::size_t r = 0; r < kRows; r++)
        labels[r] = static_cast<std::uint32_t>((mb * 7 + r * 5 + mbs) % size);
    return labels;
}

VocabReference reference_step_vocab(const Model &model, const VocabLayer &vocab,
                                    std::uint32_t mbs)
{
    const LayerRange all{0, kLayers};
    std::vector<std::vector<LayerGrad>> per_mb;
    VocabReference ref;
    ref.w.assign(static_cast<std::size_t>(vocab.size) * kWidth, 0.0);
    for (std::uint32_t k = 0; k < mbs; k++) {
        Activations keep;
        Tensor y = forward(model, all, sample_input(0, k, mbs), keep);
        std::vector<double> l = logits_of(vocab, 0, vocab.size, y);
        std::vector<double> mx(kRows), sum(kRows, 0.0);
        for (std::size_t r = 0; r < kRows; r++) {
            mx[r] = *std::max_element(l.begin() + r * vocab.size, l.begin() + (r + 1) * vocab.size);
            for (std::uint32_t j = 0; j < vocab.size; j++)
                sum[r] += std::exp(l[r * vocab.size + j] - mx[r]);
        }
        std::vector<double> g = logit_grad(l, 0, vocab.size, mx.data(), sum.data(),
                                           sample_labels(k, mbs, vocab.size), mbs);
        std::vector<double> dw, dx;
        grads_of(vocab, 0, vocab.size, g, y, &dw, &dx);
        for (std::size_t i = 0; i < dw.size(); i++)
            ref.w[i] += dw[i];
        backward_input(model, all, dx, keep);
        per_mb.push_back(backward_weight(all, keep));
    }
    ref.layers = sum_in_order(per_mb);
    return ref;
}

VocabState::VocabState(std::uint32_t alg, std::uint32_t devices, std::uint32_t mbs,
                       const VocabLayer &layer, const std::atomic<bool> &abort,
                       VocabTransport *transport)
    : algorithm(alg), p_(devices), mbs_(mbs), transport_(transport), layer_(layer), abort_(abort),
      stats_(devices, std::vector<ShardStats>(mbs)),
      dx_(devices, std::vector<std::vector<double>>(mbs)),
      grads_(mbs, std::vector<std::vector<double>>(devices))
{
}

const std::vector<double> &VocabState::wait(std::uint32_t j, std::uint32_t k)
{
    std::unique_lock<std::mutex> lock(m_);
    if (transport_) { /* one device per process: gather the parts, reduce here */
        Entry &e = board_[{j, k}];
        if (!e.done) {
            e.parts = transport_->finish(j, k);
            reduce(j, k, e);
            e.done = true;
        }
        return e.result;
    }
    for (;;) {
        Entry &e = board_[{j, k}];
        if (e.done)
            return e.result;
        if (abort_.load())
            throw std::runtime_error("stopped while waiting for a collective");
        cv_.wait_for(lock, std::chrono::milliseconds(10));
    }
}

void VocabState::post(std::uint32_t j, std::uint32_t k, std::uint32_t d, std::vector<double> part)
{
    std::lock_guard<std::mutex> lock(m_);
    if (transport_) {
        if (part.empty())
            part.push_back(0.0);
        transport_->start(j, k, part);
        return;
    }
    Entry &e = board_[{j, k}];
    if (e.parts.empty())
        e.parts.resize(p_);
    if (!e.parts[d].empty() || e.done)
        throw std::runtime_error("collective posted twice");
    e.parts[d] = std::move(part);
    if (e.parts[d].empty())
        e.parts[d].push_back(0.0); /* a device with nothing to add still arrives */
    if (++e.arrived == p_) {
        reduce(j, k, e);
        e.done = true;
        cv_.notify_all();
    }
}

/* Runs with the lock held once every device has posted. */
void VocabState::reduce(std::uint32_t j, std::uint32_t, Entry &e)
{
    if (j == 0) { /* broadcast: the one part that carries X */
        for (std::vector<double> &part : e.parts)
            if (part.size() == kRows * kWidth)
                e.result = part;
        if (e.result.empty())
            throw std::runtime_error("broadcast without the last stage's output");
        return;
    }
    if (j == 2) { /* Vocab-1: Σ of the input-gradient pieces, device order */
        e.result.assign(kRows * kWidth, 0.0);
        for (const std::vector<double> &part : e.parts)
            for (std::size_t i = 0; i < e.result.size(); i++)
                e.result[i] += part[i];
        return;
    }
    /* statistics: global max M and sum S per row; Vocab-2 also dX */
    std::vector<double> mx(kRows, -INFINITY), sum(kRows, 0.0);
    for (const std::vector<double> &part : e.parts)
        for (std::size_t r = 0; r < kRows; r++)
            mx[r] = std::max(mx[r], part[r]);
    for (const std::vector<double> &part : e.parts)
        for (std::size_t r = 0; r < kRows; r++)
            sum[r] += part[kRows + r] * std::exp(part[r] - mx[r]);
    e.result = mx;
    e.result.insert(e.result.end(), sum.begin(), sum.end());
    if (algorithm == 2) {
        std::vector<double> dx(kRows * kWidth, 0.0);
        for (const std::vector<double> &part : e.parts) {
            const double *a = part.data() + 2 * kRows, *g = a + kRows * kWidth;
            for (std::size_t r = 0; r < kRows; r++)
                for (std::size_t i = 0; i < kWidth; i++)
                    dx[r * kWidth + i] += (std::exp(part[r] - mx[r]) * a[r * kWidth + i] / sum[r] -
                                           g[r * kWidth + i]) *
                                          scale_of(mbs_);
        }
        e.result.insert(e.result.end(), dx.begin(), dx.end());
    }
}

void VocabState::run(std::uint32_t d, const psched_op &op, const Tensor *x)
{
    std::uint32_t k = op.microbatch, first = d * kVocabPerDevice;
    if (k >= mbs_ || (op.kind != PSCHED_OP_COLLECTIVE && op.stage != d))
        throw std::runtime_error("no such shard or micro-batch");
    ShardStats &st = stats_[d][k];
    if (op.kind == PSCHED_OP_VOCAB_S) {
        const Tensor &in = wait(0, k);
        st.logits = logits_of(layer_, first, kVocabPerDevice, in);
        st.max.assign(kRows, -INFINITY);
        st.sum.assign(kRows, 0.0);
        for (std::size_t r = 0; r < kRows; r++) {
            for (std::uint32_t j = 0; j < kVocabPerDevice; j++)
                st.max[r] = std::max(st.max[r], st.logits[r * kVocabPerDevice + j]);
            for (std::uint32_t j = 0; j < kVocabPerDevice; j++)
                st.sum[r] += std::exp(st.logits[r * kVocabPerDevice + j] - st.max[r]);
        }
        if (algorithm == 2) { /* online softmax: this shard's dX pieces, unnormalised */
            std::vector<std::uint32_t> labels = sample_labels(k, mbs_, layer_.size);
            st.a.assign(kRows * kWidth, 0.0);
            st.g.assign(kRows * kWidth, 0.0);
            for (std::size_t r = 0; r < kRows; r++)
                for (std::uint32_t j = 0; j < kVocabPerDevice; j++) {
                    double e = std::exp(st.logits[r * kVocabPerDevice + j] - st.max[r]);
                    for (std::size_t i = 0; i < kWidth; i++) {
                        st.a[r * kWidth + i] += e * layer_.w[(first + j) * kWidth + i];
                        if (labels[r] == first + j)
                            st.g[r * kWidth + i] += layer_.w[(first + j) * kWidth + i];
                    }
                }
        }
        return;
    }
    if (op.kind == PSCHED_OP_VOCAB_T) {
        if (st.logits.empty())
            throw std::runtime_error("T pass before its S pass");
        const std::vector<double> &stats = wait(1, k);
        const Tensor &in = wait(0, k);
        std::vector<double> g =
            logit_grad(st.logits, first, kVocabPerDevice, stats.data(), stats.data() + kRows,
                       sample_labels(k, mbs_, layer_.size), mbs_);
        grads_of(layer_, first, kVocabPerDevice, g, in, &grads_[k][d],
                 algorithm == 1 ? &dx_[d][k] : nullptr);
        st = ShardStats(); /* the logits are freed */
        return;
    }
    switch (op.stage) { /* the collective's index */
    case 0:
        post(0, k, d, x ? *x : std::vector<double>());
        return;
    case 1: {
        if (st.max.empty())
            throw std::runtime_error("statistics all-reduce before the S pass");
        std::vector<double> part = st.max;
        part.insert(part.end(), st.sum.begin(), st.sum.end());
        if (algorithm == 2) {
            part.insert(part.end(), st.a.begin(), st.a.end());
            part.insert(part.end(), st.g.begin(), st.g.end());
        }
        post(1, k, d, std::move(part));
        return;
    }
    case 2:
        if (algorithm != 1 || dx_[d][k].empty())
            throw std::runtime_error("input-gradient all-reduce before the T pass (or Vocab-2)");
        post(2, k, d, std::move(dx_[d][k]));
        return;
    default:
        throw std::runtime_error("collective index " + std::to_string(op.stage) +
                                 " is not one of Vocabulary Parallelism's");
    }
}

Tensor VocabState::input_grad(std::uint32_t k)
{
    if (algorithm == 1)
        return wait(2, k);
    const std::vector<double> &r = wait(1, k);
    return Tensor(r.begin() + 2 * kRows, r.end());
}

std::size_t VocabState::bytes(std::uint32_t d) const
{
    std::size_t n = 0;
    for (const ShardStats &st : stats_[d])
        n += st.logits.size() * sizeof(double);
    return n;
}

std::vector<double> VocabState::weight_grad() const
{
    std::vector<double> w(static_cast<std::size_t>(layer_.size) * kWidth, 0.0);
    for (std::uint32_t k = 0; k < mbs_; k++)
        for (std::uint32_t d = 0; d < p_; d++)
            for (std::size_t i = 0; i < grads_[k][d].size(); i++)
                w[d * kVocabPerDevice * kWidth + i] += grads_[k][d][i];
    return w;
}

} // namespace rt
