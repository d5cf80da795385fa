// The op graph as a Chakra execution trace (ET), the input ASTRA-sim replays: one file per
// rank, DIR/<name>.<rank>.et, each a stream of length-delimited protobuf messages (a varint
// byte count, then the message): one GlobalMetadata, then one Node per op in schedule order.
// The wire encoding is written here (no libprotobuf), after the field numbers of
// mlcommons/chakra schema/protobuf/et_def.proto (package ChakraProtoMsg, ET version 0.0.4):
//   GlobalMetadata: version = 1 (string), attr = 2 (AttributeProto)
//   Node: id = 1 (uint64), name = 2, type = 3 (NodeType), ctrl_deps = 4, data_deps = 5
//         (packed uint64), start_time_micros = 6, duration_micros = 7, inputs = 8,
//         outputs = 9 (IOInfo: values = 1, shapes = 2, types = 3, strings), attr = 10
//   AttributeProto: name = 1; value oneof: int64_val = 9, uint64_val = 13, bool_val = 27,
//         string_val = 29
//   NodeType: MEM_LOAD_NODE = 2, COMP_NODE = 4, COMM_COLL_NODE = 7; CollectiveCommType
//         ALL_REDUCE = 0
// Mapping (the attribute names ASTRA-sim reads): the host-fed batch (Input ops) is a
// MEM_LOAD_NODE with tensor_size; every other op a COMP_NODE with num_ops (FLOPs),
// tensor_size (bytes read + written) and duration_micros (the caller's per-op time, 0 when
// none); each data-parallel gradient AllReduce a COMM_COLL_NODE with comm_type ALL_REDUCE and
// comm_size (the gradient's bytes), left for the simulator to time on its network. Data
// dependencies are the graph's edges (producer -> consumer). Data-parallel ranks run the same
// graph, so the rank files are identical.
#pragma once
#include <string>
#include <vector>

#include "models/graph.hpp"

namespace xpusim {

// Chakra enum values (et_def.proto) this exporter writes.
enum class ChakraNodeType : int { mem_load = 2, comp = 4, comm_coll = 7 };
inline constexpr int kChakraAllReduce = 0;
inline constexpr const char* kChakraEtVersion = "0.0.4";

// One rank's ET bytes. `op_time_s` is indexed by op id (seconds; empty = every duration 0);
// durations are rounded to whole microseconds, as the schema stores them.
std::string encode_chakra_trace(const OpGraph& g, const std::vector<double>& op_time_s);

// The file name stem for a model name: characters other than [A-Za-z0-9_.-] become '_'.
std::string chakra_file_stem(const std::string& name);

// Writes DIR/<stem>.<rank>.et for rank 0..ranks-1 (DIR is created) and returns the paths.
// UserError naming the path when a file cannot be written.
std::vector<std::string> write_chakra_traces(const std::string& dir, const std::string& name, const OpGraph& g,
                                             const std::vector<double>& op_time_s, int ranks);

}  // namespace xpusim
