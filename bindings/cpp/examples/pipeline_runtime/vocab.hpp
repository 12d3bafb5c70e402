/*
 * Vocabulary Parallelism in the runtime (issue 19, docs/runtime.md 5b): a
 * softmax cross-entropy output layer of V = kVocabPerDevice · p classes,
 * split by vocabulary shards over the devices (shard d: classes
 * [3d, 3d + 3)), its S and T passes, and the collectives that tie them
 * together through a board shared by the device threads:
 *   collective 0: the last stage's output X, broadcast from its device;
 *   collective 1: per row the shards' max and sum of exp (Vocab-2 also the
 *     unnormalised input-gradient pieces, merged online-softmax style);
 *   collective 2 (Vocab-1): the sum of the shards' input-gradient pieces.
 * A collective is posted without blocking (it completes when the last
 * device has posted it); an S or T pass, and the last stage's backward,
 * wait for the collective they need.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPELINE_RUNTIME_VOCAB_HPP
#define PIPELINE_RUNTIME_VOCAB_HPP

#include "model.hpp"

#include <pipesched.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace rt {

constexpr std::uint32_t kVocabPerDevice = 3;

/** The output layer: size classes, weights [class][kWidth]. */
struct VocabLayer {
    std::uint32_t size = 0;
    std::vector<double> w;
    static VocabLayer init(std::uint32_t size, std::uint64_t seed);
};

/** Class label of each row of micro-batch @p mb (deterministic). */
std::vector<std::uint32_t> sample_labels(std::uint32_t mb, std::uint32_t mbs, std::uint32_t size);

/** What one shard's S pass keeps and contributes. */
struct ShardStats {
    std::vector<double> logits;   /* kRows x count */
    std::vector<double> max, sum; /* per row: max logit, Σ exp(l - max) */
    std::vector<double> a, g;     /* Vocab-2: Σ exp(l - max) W_j and Σ_{label in shard} W_label */
};

/** Reference gradients of the whole model with the output layer. */
struct VocabReference {
    std::vector<LayerGrad> layers;
    std::vector<double> w; /* size x kWidth */
};

/** The non-pipelined step: every micro-batch through every layer and the
 *  whole output layer on one thread, cross-entropy averaged over the
 *  micro-batches and rows. */
VocabReference reference_step_vocab(const Model &model, const VocabLayer &vocab,
                                    std::uint32_t mbs);

/** How a process that holds one device exchanges a collective's parts
 *  with the others (the MPI backend): start() posts this device's part
 *  without blocking, finish() waits and returns every device's part. */
class VocabTransport {
public:
    virtual ~VocabTransport() = default;
    virtual void start(std::uint32_t j, std::uint32_t k, const std::vector<double> &part) = 0;
    virtual std::vector<std::vector<double>> finish(std::uint32_t j, std::uint32_t k) = 0;
};

/** Largest part a device contributes to a collective (Vocab-2's statistics
 *  with its input-gradient pieces). */
constexpr std::size_t kVocabPart = 2 * kRows + 2 * kRows * kWidth;

/** The collectives' board and the shards' state, shared by the threads
 *  (or, with a transport, this process's device only). */
class VocabState {
public:
    VocabState(std::uint32_t algorithm, std::uint32_t devices, std::uint32_t mbs,
               const VocabLayer &layer, const std::atomic<bool> &abort,
               VocabTransport *transport = nullptr);

    /** Runs VOCAB_S, VOCAB_T or COLLECTIVE of device @p d. @p x is the last
     *  stage's output when @p d posts collective 0 from the last stage's
     *  device (else NULL). @throw std::runtime_error. */
    void run(std::uint32_t d, const psched_op &op, const Tensor *x);
    /** dL/d(output) of the last stage for micro-batch @p k: waits for the
     *  last collective of k. @throw std::runtime_error. */
    Tensor input_grad(std::uint32_t k);
    /** Bytes device @p d keeps for the vocabulary layer now (logits from S
     *  to T). */
    std::size_t bytes(std::uint32_t d) const;
    /** Weight gradient of the whole output layer, Σ over micro-batches in
     *  order. */
    std::vector<double> weight_grad() const;

    std::uint32_t algorithm; /* 1 or 2 */

private:
    struct Entry {
        std::uint32_t arrived = 0;
        bool done = false;
        std::vector<std::vector<double>> parts; /* [device] */
        std::vector<double> result;
    };
    const std::vector<double> &wait(std::uint32_t j, std::uint32_t k);
    void post(std::uint32_t j, std::uint32_t k, std::uint32_t d, std::vector<double> part);
    void reduce(std::uint32_t j, std::uint32_t k, Entry &e);

    std::uint32_t p_, mbs_;
    VocabTransport *transport_;
    const VocabLayer &layer_;
    const std::atomic<bool> &abort_;
    mutable std::mutex m_;
    std::condition_variable cv_;
    std::map<std::pair<std::uint32_t, std::uint32_t>, Entry> board_; /* (j, k) */
    std::vector<std::vector<ShardStats>> stats_;   /* [d][k], live from S to T */
    std::vector<std::vector<std::vector<double>>> dx_;    /* Vocab-1: [d][k] input-gradient pieces */
    std::vector<std::vector<std::vector<double>>> grads_; /* [k][d]: the shard's weight gradient */
};

} // namespace rt

#endif
