// resources.cpp — see qklab/config/resources.h.
//
// The counts follow core/engine/src/model.cpp (shapes, what autograd keeps) and
// core/engine/src/trainer.cpp (one step at a time; validation after the step's graph is freed).
// They aim at the peak of a step within a factor of 2 (CPU runs of 2 to 8 layers, batch 4 to 128,
// context 128 to 1024 came within 30% of their measured peak RSS): enough to refuse a run that
// cannot fit before it allocates, not a profiler. All arithmetic is in double, so a billion-wide
// anything stays a number.
#include "qklab/config/resources.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <thread>
#include <vector>

#include "qklab/config/corpus.h"

namespace qklab {
namespace {

constexpr double kFp32 = 4;  // bytes of a float: weights, gradients, AdamW state, activations
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double positive(int64_t v) {
    return v > 0 ? static_cast<double>(v) : 0.0;
}

// The sizes of a run as doubles: products of absurd values must not overflow int64.
struct Shape {
    double B = 0, T = 0, C = 0, L = 0, H = 0, D = 0, r = 0, V = 0;
};

Shape shapeOf(const RunConfig& c) {
    Shape s;
    s.B = positive(c.data.batchSize);
    s.T = positive(c.maxSeqLen());  // the longest context any event asks for
    s.C = positive(c.model.dModel);
    s.L = positive(c.model.nLayers);
    s.H = positive(c.model.nHeads);
    s.D = s.H > 0 ? std::floor(s.C / s.H) : 0;
    s.r = positive(c.model.mlpRatio);
    s.V = positive(c.vocabSize());  // 256 bytes, or data.vocab_size with a BPE
    return s;
}

// Trainable values, tensor by tensor as TransformerImpl and its blocks register them.
double parameterCount(const RunConfig& c, const Shape& s) {
    const double groups = c.attention.qkGainPerHead ? s.H : 1;
    // qkv (C x 3C) and proj (C x C), no biases; the QK gains (groups x d_head each), the
    // whole-projection gains (C each) and the L2 variant's scales (one per head): all exist
    // whatever the QK-norm variant, so an intervention can switch variants mid-run.
    const double gains = 2 * groups * s.D + 2 * s.C + s.H;
    double attention = 4 * s.C * s.C + gains;
    if (c.attention.kind == AttentionKind::Mla) {
        // kv_down, k_up, v_up (C x d_c each) and the latent norm; k_rope (C x d_rope); the
        // queries, full rank (C x H(d_head + d_rope)) or through q_lora; proj (C x C).
        const double dc = static_cast<double>(c.attention.mla.dC);
        const double dr = static_cast<double>(c.attention.mla.dRope);
        const double ql = static_cast<double>(c.attention.mla.qLora);
        const double qOut = s.H * (s.D + dr);
        const double queries = ql > 0 ? s.C * ql + ql + ql * qOut : s.C * qOut;
        attention = 3 * s.C * dc + dc + s.C * dr + queries + s.C * s.C + gains;
    }
    const double mlp = 2 * s.r * s.C * s.C;                        // fc (C x rC) and out (rC x C)
    const double norms = 2 * s.C;                                  // norm1, norm2
    double n = s.V * s.C + s.L * (attention + mlp + norms) + s.C;  // + the final norm
    if (!c.model.rope) n += s.T * s.C;                             // learned positions
    if (!c.model.tieEmbeddings) n += s.V * s.C;                    // the LM head
    return n;
}

// Per token and layer, in fp32 values of width C, what autograd keeps for backward (from
// model.cpp's forward, fused attention): both RMSNorms' input, normalised and scaled outputs
// (2 x 3), the qkv output (3, held by v), q and k after RoPE, the attention output and its
// merged copy fed to proj (4): 13, plus the GELU's input and output (2 x mlp_ratio). Peak RSS of
// CPU runs (LibTorch 2.15, glibc, 2 to 8 layers) grows by about 23 + 1.9 x mlp_ratio such values
// per layer: heap the allocator holds after frees and the backward's gradients add about 7 to the
// 13 counted. The layer the backward is in holds about one more layer's worth: L + 1 layers in all.
constexpr double kKeptPerLayer = 20;  // plus 2 * mlp_ratio
// Outside the blocks: the embedding output, the final norm's input and output, a gradient.
constexpr double kKeptOutsideBlocks = 4;

double activationBytes(const Shape& s) {
    const double perLayer = (kKeptPerLayer + 2 * s.r) * s.C;
    return s.B * s.T * kFp32 * ((s.L + 1) * perLayer + kKeptOutsideBlocks * s.C);
}

// (B, H, T, T) fp32 tensors. The explicit path keeps the softmax output of every layer for
// backward; a probe step also keeps the raw logits it captured, a softcap its tanh/clamp
// input. The layer being computed briefly holds the masked logits and, in the backward, two
// gradients of that size (2); a probe step's statistics copy, bucket (int64) and mask one
// layer at a time (4). Steps that need no logits (probes off, no softcap) use the fused
// kernel, which keeps none (LibTorch 1.13 has no fused kernel: there this undercounts).
double attentionBytes(const RunConfig& c, const Shape& s) {
    const bool probing = c.probes.every > 0;
    const bool capped = c.attention.softcap.kind != SoftcapKind::None;
    if (!probing && !capped && c.run.fusedAttention) return 0;
    const double keptPerLayer = 1 + (probing ? 1 : 0) + (capped ? 1 : 0);
    const double transient = probing ? 4 : 2;
    return s.B * s.H * s.T * s.T * kFp32 * (s.L * keptPerLayer + transient);
}

// (B, T, V) fp32: the logits, log_softmax's output kept for backward and the gradients of
// both (4); the output softcap keeps its tanh (1 more), z-loss its logsumexp input (1 more).
double logitBytes(const RunConfig& c, const Shape& s) {
    const double copies = 4 + (c.model.outputSoftcap > 0 ? 1 : 0) + (c.optim.zLoss > 0 ? 1 : 0);
    return s.B * s.T * s.V * kFp32 * copies;
}

// Batch-independent tables: the (T, T) causal mask (fp32, built by full() then triu(): 2);
// on probe steps the probes' index of its lower triangle (T^2/2 int64 kept, a T^2 int64 and a
// T^2 bool while it is built: 13 bytes per entry); the RoPE cos/sin tables (T x d_head fp32,
// computed in float64: about 40 bytes per entry while they are built).
double bufferBytes(const RunConfig& c, const Shape& s) {
    const double probeIndex = c.probes.every > 0 ? 4 + 13 : 0;
    return s.T * s.T * (2 * kFp32 + probeIndex) + 40 * s.T * s.D;
}

// Bytes of the text data.source names (0 when it cannot be read: dataSourceProblem says so).
double corpusBytes(const std::string& source) {
    if (source == "builtin") return 2'000'000;  // builtinCorpus()'s default size
    std::error_code ec;
    if (!std::filesystem::is_regular_file(source, ec)) return 0;
    const auto size = std::filesystem::file_size(source, ec);
    return ec ? 0 : static_cast<double>(size);
}

// The corpus twice while the data loader copies it into a tensor, and a batch's gather: int64
// indices, the uint8 rows, the int64 tokens (about 17 bytes per position of B x (T + 1)).
double dataBytes(const RunConfig& c, const Shape& s) {
    return 2 * corpusBytes(c.data.source) + 17 * s.B * (s.T + 1);
}

// validationLoss() runs its batches one at a time under NoGradGuard, after the step's graph
// is freed: its activations stay below a training step's. What grows with eval.batches is
// the list of per-batch losses it keeps for one transfer: a 0-dim tensor each (TensorImpl,
// storage, a 64-byte-aligned allocation, the vector slot), about 512 bytes.
constexpr double kBytesPerEvalBatch = 512;

// One number from a file (a cgroup limit); +inf when absent or "max".
double numberIn(const char* path) {
    std::ifstream in(path);
    double v = 0;
    if (!(in >> v)) return std::numeric_limits<double>::infinity();
    return v;
}

// A "key value" line of a cgroup memory.stat; 0 when absent.
double statValue(const char* path, const std::string& key) {
    std::ifstream in(path);
    std::string name;
    double v = 0;
    while (in >> name >> v)
        if (name == key) return v;
    return 0;
}

// Room under this container's cgroup memory limit (v2, else v1), which /proc/meminfo does not
// show: usage less the reclaimable page cache. +inf when there is no limit.
double cgroupRoomBytes() {
    double limit = numberIn("/sys/fs/cgroup/memory.max");
    if (limit < 1e18) {
        const double used = numberIn("/sys/fs/cgroup/memory.current") -
                            statValue("/sys/fs/cgroup/memory.stat", "inactive_file");
        return std::max(0.0, limit - std::max(0.0, used));
    }
    limit = numberIn("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    if (limit < 1e18) {
        const double used = numberIn("/sys/fs/cgroup/memory/memory.usage_in_bytes") -
                            statValue("/sys/fs/cgroup/memory/memory.stat", "total_inactive_file");
        return std::max(0.0, limit - std::max(0.0, used));
    }
    return std::numeric_limits<double>::infinity();
}

// The largest part of an estimate decides which keys the message tells the user to lower.
struct Part {
    const char* name;
    double bytes;
    const char* keys;
};

std::string partsAndAdvice(const MemoryEstimate& m, std::string* advice) {
    const char* weights = "model.d_model, model.n_layers or model.mlp_ratio";
    const char* tokens =
        "data.batch_size, model.seq_len, model.d_model, model.n_layers or model.mlp_ratio";
    std::vector<Part> parts = {
        {"parameters", m.parameters, weights},
        {"gradients", m.gradients, weights},
        {"optimizer", m.optimizer, weights},
        {"activations", m.activations, tokens},
        {"attention", m.attention,
         "model.seq_len (and context_length events), data.batch_size or model.n_heads"},
        {"logits", m.logits, "data.batch_size or model.seq_len"},
        {"causal mask and tables", m.buffers, "model.seq_len (and context_length events)"},
        {"data", m.data, "data.batch_size (or use a smaller data.source)"},
        {"validation", m.validation, "eval.batches"},
    };
    std::stable_sort(parts.begin(), parts.end(),
                     [](const Part& a, const Part& b) { return a.bytes > b.bytes; });
    // Parameters, gradients and AdamW state shrink together: count them as one for advice.
    const double weightBytes = m.parameters + m.gradients + m.optimizer;
    *advice = weightBytes > parts.front().bytes ? weights : parts.front().keys;
    std::string list;
    for (const Part& p : parts) {
        if (p.bytes < 0.01 * m.total) continue;  // the parts that matter, largest first
        list += (list.empty() ? "" : ", ") + std::string(p.name) + " " + formatBytes(p.bytes);
    }
    return list;
}

}  // namespace

MemoryEstimate estimateMemory(const RunConfig& c) {
    const Shape s = shapeOf(c);
    MemoryEstimate m;
    m.parameterCount = parameterCount(c, s);
    // Under bf16 autocast each weight also has a bf16 copy, cached for the step.
    const double weightBytes = kFp32 + (c.run.dtype == Precision::Bf16 ? 2 : 0);
    m.parameters = m.parameterCount * weightBytes;
    m.gradients = m.parameterCount * kFp32;
    m.optimizer = 2 * m.parameterCount * kFp32;  // exp_avg and exp_avg_sq
    m.activations = activationBytes(s);
    m.attention = attentionBytes(c, s);
    m.logits = logitBytes(c, s);
    m.buffers = bufferBytes(c, s);
    m.data = dataBytes(c, s);
    m.validation = kBytesPerEvalBatch * positive(c.eval.batches);
    m.total = m.parameters + m.gradients + m.optimizer + m.activations + m.attention + m.logits +
              m.buffers + m.data + m.validation;
    return m;
}

double availableMemoryBytes() {
    double available = 0;
    std::ifstream in("/proc/meminfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("MemAvailable:", 0) != 0) continue;
        std::istringstream(line.substr(13)) >> available;  // in kB
        available *= 1024;
        break;
    }
    if (available <= 0) {  // no /proc (or a kernel before 3.14): all physical memory
        const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
        if (pages > 0 && pageSize > 0)
            available = static_cast<double>(pages) * static_cast<double>(pageSize);
    }
    return std::min(available, cgroupRoomBytes());
}

double memoryLimitBytes(const RunConfig& c) {
    if (c.run.maxMemoryGiB > 0) return c.run.maxMemoryGiB * kGiB;
    if (c.run.device == DeviceKind::Cuda) return 0;  // the host's memory says nothing of the GPU's
    return availableMemoryBytes();
}

std::string memoryProblem(const RunConfig& c) {
    if (!(c.run.maxMemoryGiB >= 0)) {
        std::ostringstream os;
        os << "run.max_memory = " << c.run.maxMemoryGiB
           << ": must be >= 0 (0 = the machine's available memory)";
        return os.str();
    }
    const double limit = memoryLimitBytes(c);
    if (limit <= 0) return {};  // unknown, or cuda without a limit
    const MemoryEstimate m = estimateMemory(c);
    if (m.total <= limit) return {};
    std::string advice;
    const std::string parts = partsAndAdvice(m, &advice);
    const std::string room =
        c.run.maxMemoryGiB > 0
            ? "run.max_memory allows " + formatBytes(limit)
            : formatBytes(limit) +
                  " is available (run.max_memory = 0: the machine's available memory)";
    return "the run needs about " + formatBytes(m.total) + " (" + parts + ") but " + room +
           "; lower " + advice;
}

std::string formatBytes(double bytes) {
    static const char* const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    size_t u = 0;
    while (bytes >= 1024 && u + 1 < std::size(units)) {
        bytes /= 1024;
        ++u;
    }
    char text[64];
    if (u == 0)
        std::snprintf(text, sizeof text, "%.0f bytes", bytes);
    else if (bytes >= 1e6)  // beyond exbibytes: keep it a readable number
        std::snprintf(text, sizeof text, "%.3g %s", bytes, units[u]);
    else
        std::snprintf(text, sizeof text, "%.*f %s", bytes < 100 ? 1 : 0, bytes, units[u]);
    return text;
}

int64_t cappedThreads(int64_t requested, std::string* warning) {
    if (warning) warning->clear();
    const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
    if (requested <= 0) return cores;  // 0 = all cores
    if (requested <= cores) return requested;
    // More intra-op threads than cores only adds contention (and a million of them would
    // exhaust the process): cap, and say so.
    if (warning)
        *warning = "run.threads = " + std::to_string(requested) + " is more than the " +
                   std::to_string(cores) + " cores of this machine: using " + std::to_string(cores);
    return cores;
}

}  // namespace qklab
