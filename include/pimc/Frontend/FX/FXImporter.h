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

#include "pimc/Checkpoint/Safetensors.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <memory>
#include <optional>
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

/// A symbolic input dimension of a torch.export graph (its "dynamic_dims")
/// and the size the imported graph is specialised to.
struct DynamicDim {
  std::string input;  // the input placeholder
  unsigned argIndex;  // its position among the function's arguments
  int64_t dim;        // which dimension of it
  std::string name;   // the torch.export Dim's name ("seq")
  std::string symbol; // the symbol sizes are printed over ("s70")
  int64_t min;
  std::optional<int64_t> max; // none: unbounded
  int64_t example;            // the traced size
  int64_t value;              // the size of this specialisation
};

/// Sizes to specialise symbolic dims to, keyed by Dim name or symbol
/// (`pimc import --dim seq=13`). Dims not named keep the example's size.
using DimBindings = llvm::StringMap<int64_t>;

/// A parsed and structurally validated graph.
struct Graph {
  std::string path; // for diagnostics
  std::unique_ptr<llvm::json::Value> root;
  std::string parameters; // the safetensors file, resolved against path
  std::vector<Node> nodes;
  llvm::StringMap<size_t> byName;
  std::vector<DynamicDim> dynamicDims; // empty for a static graph
};

/// True for the torch dtype names a graph may use (float32, int64, bool...).
bool isKnownDtype(llvm::StringRef dtype);

/// Parses `text` (the contents of `path`) and checks the structure: format
/// and version, unique node names, references to earlier nodes only, output
/// indices inside the referenced node's outputs, `meta` on every value node,
/// one final output node. A graph with symbolic dims is first specialised
/// (specialiseGraph). All problems are reported in one error.
llvm::Expected<Graph> parseGraph(llvm::StringRef text, llvm::StringRef path,
                                 const DimBindings &dims = {});

/// The value of a size expression as torch prints it over symbols (`s70`,
/// `2*s70 + 1`, `(s70//2)`, `Max(1, s70)`, `Mod(s70, 4)`): integers, names,
/// + - * // %, unary -, parentheses and Max/Min/Mod/FloorDiv calls, with
/// Python's floor semantics. Overflow, division by zero, an unknown symbol or
/// other syntax is an error naming it.
llvm::Expected<int64_t> evaluateSizeExpr(llvm::StringRef expr,
                                         const llvm::StringMap<int64_t> &env);

/// Specialises a torch.export graph with "dynamic_dims" in place: checks the
/// record, binds each symbol (from `dims`, else the example) inside its
/// range, replaces the `meta` shape of every node with a "sym_shape" by its
/// value and every symbolic argument ({"sym", "example"}) by an integer.
/// Returns the bound dims (empty for a static graph).
llvm::Expected<std::vector<DynamicDim>>
specialiseGraph(llvm::json::Value &root, llvm::StringRef path,
                const DimBindings &dims);

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
  std::unique_ptr<ckpt::WeightStore> weights; // null when no weights are used
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// Builds the module of a parsed graph. `weights` may be null when the graph
/// has no parameter, buffer or non-inline constant placeholders.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importGraph(mlir::MLIRContext &context, const Graph &graph,
            const ckpt::WeightStore *weights);

/// Reads `path`, opens the safetensors file the graph names (relative to
/// the graph's directory) and imports. The module is verified.
llvm::Expected<ImportedGraph> importGraphFile(mlir::MLIRContext &context,
                                              llvm::StringRef path,
                                              const DimBindings &dims = {});

} // namespace pimc::fx

#endif // PIMC_FRONTEND_FX_FXIMPORTER_H
