//===- FXImporter.h - PyTorch FX JSON graphs -> llm dialect -----*- C++ -*-===//
//
// Reads the `pimc-fx-graph` JSON written by python/pimc_torch (format in
// docs/frontend-graphs.md section 1), validates it completely (structure,
// references, per-op argument schemas, parameters against the safetensors
// file) and builds `func.func @forward` of llm ops through a table keyed by
// (ATen target, overload). Every op of the graph that the table lacks is
// reported in one error. See docs/fx-importer.md.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_FRONTEND_FX_FXIMPORTER_H
#define PIMC_FRONTEND_FX_FXIMPORTER_H

#include "pimc/Frontend/HF/Safetensors.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <memory>
#include <string>
#include <vector>

namespace pimc::fx {

inline constexpr llvm::StringLiteral kGraphFormat = "pimc-fx-graph";
inline constexpr int64_t kGraphVersion = 1;

/// dtype + shape of one traced output (`meta`).
struct TensorMeta {
  std::string dtype; // torch spelling: float32, int64, bool, ...
  llvm::SmallVector<int64_t, 4> shape;
};

/// One FX node. JSON pointers refer into Graph::root.
struct Node {
  enum class Op { Placeholder, CallFunction, Output };
  std::string name;
  Op op = Op::Placeholder;
  std::string kind;     // placeholder: input, parameter, buffer, constant
  std::string target;   // call_function: "aten.mm"; placeholder: weight key
  std::string overload; // call_function: "default", "Tensor", ...
  const llvm::json::Array *args = nullptr;
  const llvm::json::Object *kwargs = nullptr;
  const llvm::json::Value *value = nullptr; // inline constant placeholder
  std::vector<TensorMeta> meta;             // one per output
  bool tupleMeta = false;                   // meta was a list
  std::string stackFile;                    // first stack-trace frame, if any
  unsigned stackLine = 0;

  /// "aten.mm.default".
  std::string qualifiedOp() const { return target + "." + overload; }
};

/// A parsed and structurally validated graph.
struct Graph {
  std::string path; // for diagnostics
  std::unique_ptr<llvm::json::Value> root;
  std::string parameters; // the safetensors file, resolved against path
  std::vector<Node> nodes;
  llvm::StringMap<size_t> byName;
};

/// Parses `text` (the contents of `path`) and checks the structure: format
/// and version, unique node names, references to earlier nodes only, output
/// indices inside the referenced node's outputs, `meta` on every value node,
/// one final output node. All problems are reported in one error.
llvm::Expected<Graph> parseGraph(llvm::StringRef text, llvm::StringRef path);

/// True when `path` looks like an FX graph: a `.json` file whose "format"
/// is pimc-fx-graph (a directory is a Hugging Face checkpoint).
bool isGraphFile(llvm::StringRef path);

/// One row of the op table (for docs and `pimc support`).
struct OpSupport {
  std::string op;     // "aten.mm.default"
  std::string schema; // ATen schema the arguments are checked against
};
std::vector<OpSupport> supportedOps();
/// Why an op the table lacks cannot be supported (data-dependent shapes,
/// in-place ops, ...), or "" when there is no known reason.
llvm::StringRef unsupportedOpReason(llvm::StringRef qualifiedOp);

struct ImportedGraph {
  /// The graph's safetensors file (empty when it names none): run-ref's
  /// --weights, and the raising pipeline's `weights` option.
  std::string parametersPath;
  std::unique_ptr<hf::WeightStore> weights; // null when no weights are used
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// Builds the module of a parsed graph. `weights` may be null when the graph
/// has no parameter, buffer or non-inline constant placeholders.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importGraph(mlir::MLIRContext &context, const Graph &graph,
            const hf::WeightStore *weights);

/// Reads `path`, opens the safetensors file the graph names (relative to
/// the graph's directory) and imports. The module is verified.
llvm::Expected<ImportedGraph> importGraphFile(mlir::MLIRContext &context,
                                              llvm::StringRef path);

} // namespace pimc::fx

#endif // PIMC_FRONTEND_FX_FXIMPORTER_H
