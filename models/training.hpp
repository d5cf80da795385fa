// Training lowering: forward graph -> graph of one full training step (forward, backward
// with data and weight gradients, optional data-parallel all-reduce, optimizer update).
#pragma once
#include "models/graph.hpp"

namespace xpusim {

enum class Optimizer { sgd_momentum, adam };
bool parse_optimizer(const std::string& s, Optimizer& out);
const char* optimizer_name(Optimizer o);

struct TrainingOptions {
  Optimizer optimizer = Optimizer::sgd_momentum;
  // Data-parallel replicas: > 1 inserts one AllReduce per weight gradient before its update.
  int replicas = 1;
};

// Appends backward and update ops to a forward graph in place. The gradient of every
// tensor that needs one has the tensor's shape (tests check this).
void lower_to_training_step(OpGraph& g, const TrainingOptions& opts = {});

// The id of the gradient tensor of tensor t after lowering, or -1.
int gradient_of(const OpGraph& g, int t);

}  // namespace xpusim
