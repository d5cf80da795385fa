// The order in which the cuda engine runs one training step's ops: the graph's schedule with
// every optimizer update moved after every other op (stable otherwise). The updates of a
// mixed-precision step must all see every gradient unscaled and checked for inf/NaN first
// (Replica::unscale_gradients_once runs at the first update), and the graph may list an
// update before the sum of a shared weight's gradients is formed: BERT's tied word table
// gets its gradient from the embedding and the MLM decoder, summed after the NSP head's
// update. Plain C++, unit-tested on the host.
#pragma once
#include <vector>

#include "models/graph.hpp"

namespace xpusim::cuda {

std::vector<int> step_order(const OpGraph& g);

}  // namespace xpusim::cuda
