// qklab/config/resources.h — what a run will ask of the machine, checked before anything is built.
//
// A config can pass validate() and still be impossible: a billion sequences per batch, a
// 100k-byte context whose (T, T) attention logits alone need terabytes. Without a check the
// run dies in the allocator (or swaps for minutes first). estimateMemory() counts the bytes a
// run needs from the config alone, without allocating, so the CLI, the session and the GUI
// can refuse such a run with a message that names the keys to lower. Torch-free.
#pragma once

#include <cstdint>
#include <string>

#include "qklab/config/run_config.h"

namespace qklab {

// Bytes (as doubles, so absurd sizes do not overflow) of one training run, by part.
struct MemoryEstimate {
    double parameterCount = 0;  // trainable values, counted as model.cpp builds them
    double parameters = 0;      // fp32 weights (plus the bf16 weight cache under autocast)
    double gradients = 0;       // fp32, one per parameter
    double optimizer = 0;       // AdamW exp_avg and exp_avg_sq, fp32
    double activations = 0;     // (B, T, width) tensors one training step keeps for backward
    double attention = 0;       // (B, H, T, T) logits and probabilities
    double logits = 0;          // the LM head's (B, T, 256) logits and their gradients
    double buffers = 0;         // the causal mask, the probes' index of it, the RoPE tables
    double data = 0;            // the corpus in memory and a batch of tokens
    double validation = 0;      // one loss tensor per eval batch, kept until one transfer
    double total = 0;
};

MemoryEstimate estimateMemory(const RunConfig& c);

// MemAvailable of /proc/meminfo; else physical memory (sysconf); 0 when neither is known.
double availableMemoryBytes();

// The memory a run may use under run.max_memory (GiB; 0 = availableMemoryBytes()). Returns
// 0 (no check) on cuda unless run.max_memory > 0: the GPU's memory is not the host's.
double memoryLimitBytes(const RunConfig& c);

// Empty when estimateMemory(c) fits under memoryLimitBytes(c), else a message naming the
// need, its parts, the limit and the keys to lower.
std::string memoryProblem(const RunConfig& c);

// "12 MB", "1.5 GiB": a byte count for messages and the GUI.
std::string formatBytes(double bytes);

// Intra-op threads for run.threads: 0 = all cores; a request above the core count is capped to
// it, and *warning (when given) names both numbers. Never below 1.
int64_t cappedThreads(int64_t requested, std::string* warning = nullptr);

// The most threads a command-line option may ask for (`generate --threads`): beyond it the
// number is a typo, refused rather than capped (no machine qklab runs on has that many cores).
constexpr int64_t kMaxThreadsOption = 1024;

}  // namespace qklab
