// probes.cpp — reduces the captured attention tensors of a probe step to a few numbers per
// layer and head. All reductions run on the tensors' device; one transfer per probe step.
#include "probes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "qklab/analysis/spikes.h"

namespace qklab {
namespace {

// Flat indices (into T*T) of the causal lower triangle, diagonal included: the logits that
// softmax actually sees. Masked entries must not count in max/mean/percentiles.
torch::Tensor causalIndices(int64_t T, const torch::Device& device) {
    static thread_local std::map<std::pair<int64_t, std::string>, torch::Tensor> cache;
    auto key = std::make_pair(T, device.str());
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    auto rows = torch::arange(T, torch::kInt64).unsqueeze(1).expand({T, T});
    auto cols = torch::arange(T, torch::kInt64).unsqueeze(0).expand({T, T});
    auto idx = (rows * T + cols).masked_select(cols <= rows).to(device);
    cache[key] = idx;
    return idx;
}

// (B, H, T, T) -> (H, B * T(T+1)/2): the valid logits of each head.
torch::Tensor validByHead(const torch::Tensor& m, const torch::Tensor& idx) {
    const int64_t B = m.size(0), H = m.size(1), T = m.size(2);
    return m.to(torch::kFloat32)
        .transpose(0, 1)
        .reshape({H, B, T * T})
        .index_select(2, idx)
        .reshape({H, -1});
}

// (B, H, T, D) -> (H, B * T) L2 norms per token.
torch::Tensor normsByHead(const torch::Tensor& x) {
    return x.to(torch::kFloat32).norm(2, -1).transpose(0, 1).reshape({x.size(1), -1});
}

// Per head: counts in each bin of `bins` (H, n) and the values below / above them and the NaN
// values (H, 3). A
// value's bin is the one whose [left edge, right edge) holds it, the last bin also holding the
// upper edge: the edges of qklab/analysis/histogram_bins.h, which the views draw.
std::pair<torch::Tensor, torch::Tensor> countInBins(const torch::Tensor& logits,
                                                    const HistogramBins& bins) {
    auto isNan = torch::isnan(logits);
    auto v = torch::nan_to_num(logits, 0.0, 3e38, -3e38);  // +-inf: over/underflow
    if (bins.symlog) v = torch::sign(v) * torch::log1p(v.abs()) / std::log(10.0);  // symlog10
    const int64_t H = v.size(0), n = bins.count();
    const std::vector<double> inner(bins.edges.begin() + 1, bins.edges.end() - 1);
    auto innerEdges = torch::tensor(inner, v.options().dtype(torch::kFloat64)).to(v.scalar_type());
    auto bin = torch::bucketize(v, innerEdges, /*out_int32=*/false, /*right=*/true);  // 0 .. n-1
    // NaN became 0 above only so that bucketize is defined; it counts in no bin and in
    // neither tail.
    auto below = (v < bins.lo()) & ~isNan, above = (v > bins.hi()) & ~isNan;
    auto inside = ~(below | above | isNan);
    auto heads = torch::arange(H, bin.options()).unsqueeze(1).expand_as(bin);
    auto flat = (heads * n + bin).masked_select(inside);
    auto counts = torch::bincount(flat, /*weights=*/{}, H * n).view({H, n});
    return {counts,
            torch::stack(std::vector<torch::Tensor>{below.sum(1), above.sum(1), isNan.sum(1)}, 1)};
}

// Per head: the mean softmax weight on key 0 over the query rows that could attend elsewhere
// (rows 1..T-1; a one-token sequence has only row 0, whose share is 1).
torch::Tensor firstTokenShare(const torch::Tensor& probs) {
    const int64_t T = probs.size(2);
    const auto rows = T > 1 ? probs.narrow(2, 1, T - 1) : probs;  // (B, H, T', T)
    return rows.select(3, 0).mean(std::vector<int64_t>{0, 2});    // (H)
}

// How many statistics computeProbes stacks per head and layer, in probeColumns() order.
constexpr int64_t kColumns = 14;

}  // namespace

namespace {

// One layer's statistics on the device: row 0 the whole layer, then one row per head, in
// probeColumns() order: (H + 1) rows x kColumns.
torch::Tensor layerTable(const AttentionCapture& cap, const ProbeSettings& settings,
                         const torch::Tensor& raw) {
    const int64_t H = cap.raw.size(1);
    const bool hasCap = settings.softcap != SoftcapKind::None;
    auto capped = hasCap ? validByHead(cap.capped, causalIndices(cap.raw.size(2), cap.raw.device()))
                         : raw;  // (H, N)
    auto qn = normsByHead(cap.q), kn = normsByHead(cap.k);
    auto qrn = normsByHead(cap.qRaw), krn = normsByHead(cap.kRaw);
    // Entropy of each query row; xlogy(0, 0) = 0 for the masked (zero) probabilities.
    auto probs = cap.probs.to(torch::kFloat32);
    auto entropy = -torch::xlogy(probs, probs).sum(-1).mean(std::vector<int64_t>{0, 2});  // (H)
    auto frac = hasCap ? (raw.abs() >= settings.softcapC).to(torch::kFloat32).mean(1)
                       : torch::zeros({H}, raw.options());
    const auto sink = firstTokenShare(probs);  // (H)
    // A layer statistic: the head rows hold NaN.
    const auto act = cap.hidden.defined() ? cap.hidden.to(torch::kFloat32).abs().max()
                                          : torch::full({}, NAN, raw.options());
    auto rawMax = raw.amax(1), rawMean = raw.mean(1);
    const auto rawP99 = percentiles(raw, 99);
    // Without a cap the capped statistics equal the raw ones: do not compute them twice.
    const auto cappedP99 = hasCap ? percentiles(capped, 99) : rawP99;
    const auto qP90 = percentiles(qn, 90), kP90 = percentiles(kn, 90);
    const auto qRawP90 = percentiles(qrn, 90), kRawP90 = percentiles(krn, 90);
    auto perHead = torch::stack(
        std::vector<torch::Tensor>{rawMax, rawP99.rows, rawMean, hasCap ? capped.amax(1) : rawMax,
                                   cappedP99.rows, hasCap ? capped.mean(1) : rawMean, qP90.rows,
                                   kP90.rows, qRawP90.rows, kRawP90.rows, entropy, frac, sink,
                                   torch::full({H}, NAN, raw.options())},
        1);  // (H, kColumns)
    auto layer = torch::stack(std::vector<torch::Tensor>{
        rawMax.max(), rawP99.whole, rawMean.mean(), hasCap ? capped.max() : rawMax.max(),
        cappedP99.whole, hasCap ? capped.mean() : rawMean.mean(), qP90.whole, kP90.whole,
        qRawP90.whole, kRawP90.whole, entropy.mean(), frac.mean(), sink.mean(), act});
    return torch::cat(std::vector<torch::Tensor>{layer.unsqueeze(0), perHead}, 0);
}

// The host copies of the layers' tables and histograms, unpacked into records.
void unpack(int64_t step, const torch::Tensor& table, const torch::Tensor& hist,
            const torch::Tensor& out, std::vector<ProbeStats>& stats,
            std::vector<LogitHistogram>& histograms) {
    const int64_t L = table.size(0), rowsPerLayer = table.size(1), H = rowsPerLayer - 1;
    const int64_t bins = hist.size(2);
    const auto& columns = probeColumns();  // the stacked statistics are in this order
    TORCH_CHECK(static_cast<int64_t>(columns.size()) == kColumns, "probe columns out of step");
    const double* t = table.data_ptr<double>();
    const int64_t* hc = hist.data_ptr<int64_t>();
    const int64_t* oc = out.data_ptr<int64_t>();
    for (int64_t l = 0; l < L; ++l) {
        for (int64_t r = 0; r < rowsPerLayer; ++r) {
            const double* row = t + (l * rowsPerLayer + r) * kColumns;
            ProbeStats s;
            s.step = step;
            s.layer = static_cast<int32_t>(l);
            s.head = static_cast<int32_t>(r - 1);
            for (size_t i = 0; i < columns.size(); ++i) s.*columns[i].field = row[i];
            stats.push_back(s);
        }
        LogitHistogram layerHist{
            step, static_cast<int32_t>(l), -1, std::vector<int64_t>(bins, 0), 0, 0, 0};
        for (int64_t h = 0; h < H; ++h) {
            const int64_t* src = hc + (l * H + h) * bins;
            LogitHistogram hh{step,
                              static_cast<int32_t>(l),
                              static_cast<int32_t>(h),
                              std::vector<int64_t>(src, src + bins),
                              oc[(l * H + h) * 3],
                              oc[(l * H + h) * 3 + 1],
                              oc[(l * H + h) * 3 + 2]};
            for (int64_t b = 0; b < bins; ++b) layerHist.counts[b] += hh.counts[b];
            layerHist.underflow += hh.underflow;
            layerHist.overflow += hh.overflow;
            layerHist.nan += hh.nan;
            histograms.push_back(std::move(hh));
        }
        histograms.push_back(std::move(layerHist));
    }
}

}  // namespace

RowPercentiles percentiles(const torch::Tensor& x, int64_t percent) {
    TORCH_CHECK(x.dim() == 2 && x.size(0) > 0 && x.size(1) > 0,
                "percentiles need (R > 0, N > 0) values");
    TORCH_CHECK(percent > 0 && percent <= 100, "percentiles: percent must be in (0, 100]");
    const int64_t rows = x.size(0), n = x.size(1);
    const auto fromTop = [percent](int64_t count) {  // count - rank + 1, rank = ceil(p count)
        return count - (percent * count + 99) / 100 + 1;
    };
    const int64_t rowTop = fromTop(n), wholeTop = fromTop(rows * n);
    // Each of x's wholeTop largest values is among the wholeTop largest of its own row (fewer
    // than wholeTop values of x, so of that row, are larger), and rowTop <= wholeTop: one
    // topk per row serves both (for p99 over H heads it keeps about H % of each row).
    const int64_t keep = std::min(n, wholeTop);
    auto top = std::get<0>(torch::topk(x, keep, 1, /*largest=*/true, /*sorted=*/false));
    // kthvalue counts from the smallest, and orders NaN last as topk does.
    return {std::get<0>(torch::kthvalue(top, keep - rowTop + 1, 1)),
            std::get<0>(torch::kthvalue(top.reshape({-1}), rows * keep - wholeTop + 1))};
}

torch::Tensor rowPercentile(const torch::Tensor& x, int64_t percent) {
    return percentiles(x, percent).rows;
}

void computeProbes(int64_t step, const std::vector<AttentionCapture>& captures,
                   const ProbeSettings& settings, std::vector<ProbeStats>& stats,
                   std::vector<LogitHistogram>& histograms) {
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> tables, hists, outside;
    for (const auto& cap : captures) {
        auto raw =
            validByHead(cap.raw, causalIndices(cap.raw.size(2), cap.raw.device()));  // (H, N)
        tables.push_back(layerTable(cap, settings, raw));
        // Histograms of raw logits; +-inf (a diverging step) land in under/overflow, NaN apart.
        auto counted = countInBins(raw, settings.bins);
        hists.push_back(counted.first);     // (H, bins)
        outside.push_back(counted.second);  // (H, 3)
    }
    // One device-to-host transfer for everything.
    unpack(step, torch::stack(tables).to(torch::kCPU, torch::kFloat64).contiguous(),
           torch::stack(hists).to(torch::kCPU, torch::kInt64).contiguous(),
           torch::stack(outside).to(torch::kCPU, torch::kInt64).contiguous(), stats, histograms);
}

std::vector<AttentionMap> attentionMaps(int64_t step, const std::vector<AttentionCapture>& captures,
                                        int64_t maxSize) {
    torch::NoGradGuard noGrad;
    std::vector<AttentionMap> maps;
    for (size_t l = 0; l < captures.size(); ++l) {
        const auto& p = captures[l].probs;  // (B, H, T, T)
        const int64_t H = p.size(1), S = std::min<int64_t>(p.size(2), maxSize);
        auto block =
            p[0].narrow(1, 0, S).narrow(2, 0, S).to(torch::kCPU, torch::kFloat32).contiguous();
        for (int64_t h = 0; h < H; ++h) {
            AttentionMap m;
            m.step = step;
            m.layer = static_cast<int32_t>(l);
            m.head = static_cast<int32_t>(h);
            m.size = static_cast<int32_t>(S);
            const float* src = block[h].data_ptr<float>();
            m.weights.assign(src, src + S * S);
            maps.push_back(std::move(m));
        }
    }
    return maps;
}

void labelMaps(std::vector<AttentionMap>& maps, MapReason reason, const torch::Tensor& inputs) {
    if (maps.empty()) return;
    const int64_t size = std::min<int64_t>(maps.front().size, inputs.size(1));
    const auto row = inputs[0].narrow(0, 0, size).to(torch::kCPU, torch::kUInt8).contiguous();
    const std::string tokens(reinterpret_cast<const char*>(row.data_ptr<uint8_t>()),
                             static_cast<size_t>(size));
    for (AttentionMap& m : maps) {
        m.tokens = tokens;
        m.reason = reason;
    }
}

std::optional<MapReason> MapMoments::reasonAt(int64_t step, bool eventStep,
                                              const std::vector<ProbeStats>& layers) {
    if (!m_on) return std::nullopt;
    const bool pastLine = std::any_of(layers.begin(), layers.end(), [](const ProbeStats& r) {
        return r.head == -1 && r.logitMaxRaw > kInterveneMaxLogit;
    });
    const bool firstPastLine = pastLine && !m_pastLineSeen;
    m_pastLineSeen = m_pastLineSeen || pastLine;
    if (eventStep) return MapReason::AfterEvent;
    if (firstPastLine) return MapReason::LogitAlarm;
    if (step % m_every == 0) return MapReason::Periodic;
    return std::nullopt;
}

}  // namespace qklab
