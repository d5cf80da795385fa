// A Transformer row at another sequence length than its model file states (reference CSVs'
// seq_len column, PredictRequest::seq_len): the model spec with its input [T] replaced.
#pragma once
#include <cstdint>

#include "models/zoo.hpp"

namespace xpusim {

// Whether the model's family is a Transformer (samples are token sequences).
bool is_token_model(const ModelSpec& spec);
// Sets a Transformer's sequence length (its input [T] and tokens per sample). FieldError
// ("seq_len") for a model whose family is not a token sequence model.
void apply_seq_len(ModelSpec& spec, int64_t seq_len);

}  // namespace xpusim
