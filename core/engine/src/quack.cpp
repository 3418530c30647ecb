// quack.cpp — QuacK's per-head LR multipliers (see quack.h), computed with device ops only.
#include "quack.h"

#include <cmath>
#include <utility>

namespace qklab {

namespace {

// The (heads, rows, cols) view of a slice's rows.
torch::Tensor headView(const torch::Tensor& t, const HeadRows& s) {
    return t.narrow(0, s.base, s.heads * s.stride)
        .view({s.heads, s.stride, t.size(1)})
        .narrow(1, s.offset, s.rows);
}

// A norm this small only comes from a weight decayed to nothing; it bounds the multiplier.
constexpr double kTinyNorm = 1e-12;

}  // namespace

QuackPair quackPair(HeadRows query, HeadRows key, double initStd) {
    QuackPair p{std::move(query), std::move(key)};
    auto ref = [initStd](const HeadRows& s) {
        return initStd * std::sqrt(static_cast<double>(s.rows * s.weight.size(1)));
    };
    p.queryRef = ref(p.query);
    p.keyRef = ref(p.key);
    return p;
}

torch::Tensor headNorms(const HeadRows& s) {
    torch::NoGradGuard noGrad;
    const auto w = headView(s.weight.detach(), s).to(torch::kFloat64);
    return w.square().sum({1, 2}).sqrt();
}

QuackScales quackScales(const QuackPair& pair) {
    const auto nq = headNorms(pair.query), nk = headNorms(pair.key);
    QuackScales out;
    out.query = (pair.keyRef / nk.clamp_min(kTinyNorm)).expand({pair.query.heads});
    out.key = pair.key.heads == pair.query.heads
                  ? pair.queryRef / nq.clamp_min(kTinyNorm)
                  : (pair.queryRef / nq.max().clamp_min(kTinyNorm)).reshape({1});
    return out;
}

void writeRowScales(torch::Tensor& rowScale, const HeadRows& s, const torch::Tensor& perHead) {
    headView(rowScale, s).copy_(perHead.view({s.heads, 1, 1}).expand({s.heads, s.rows, 1}));
}

}  // namespace qklab
