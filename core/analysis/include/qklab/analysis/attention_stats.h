// qklab/analysis/attention_stats.h — how sharp a stored attention map is, in two numbers the views
// print next to it (the run's map and a comparison of two runs' maps say the same thing).
#pragma once

#include "qklab/store/records.h"

namespace qklab {

// Mean over the map's rows (queries) of the row's largest weight: 1 when every query
// attends to one key (a collapsed head), 1/T for a uniform row of T keys. 0 for an empty map.
double meanRowMax(const AttentionMap& map);

// Mean over the rows of the row's entropy -sum_j w_ij ln w_ij, in nats: 0 for one-hot rows,
// ln T for uniform ones. Zero weights (the causal mask) add nothing. 0 for an empty map.
double meanRowEntropy(const AttentionMap& map);

}  // namespace qklab
