//===- FXOpTable.h - the ATen op table of the FX importer -------*- C++ -*-===//
//
// Internal interface between the importer driver (FXImporter.cpp: schemas,
// argument binding, placeholders) and the op builders (FXOps.cpp). Each
// table entry is an ATen schema string, against which the node's arguments
// are validated before any IR is built, and a function that builds llm ops.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_LIB_FRONTEND_FX_FXOPTABLE_H
#define PIMC_LIB_FRONTEND_FX_FXOPTABLE_H

#include "pimc/Frontend/FX/FXImporter.h"
#include "pimc/Support/Numeric.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace pimc::fx::detail {

/// Argument kinds of ATen schemas (SymInt is int: shapes are static).
enum class ArgKind {
  Tensor,
  Int,
  Float,
  Scalar,
  Bool,
  Str,
  ScalarType,
  Layout,
  Device,
  MemoryFormat
};

struct ParamSpec {
  std::string name;
  ArgKind kind = ArgKind::Tensor;
  bool list = false;          // T[]
  bool optional = false;      // T? or T[]?
  bool optionalElems = false; // T?[]
  bool kwOnly = false;        // after `*`
  bool hasDefault = false;
  llvm::json::Value defaultValue = nullptr;
};

struct Schema {
  std::string name;     // "mm"
  std::string overload; // "default"
  std::vector<ParamSpec> params;
  std::string text;
};

/// Parses "mm(Tensor self, Tensor mat2)" / "add.Tensor(Tensor self, ...)".
/// Table schemas are fixed strings, so a parse failure is a programming
/// error reported by the table's unit of lit tests (every entry is parsed
/// when the table is built).
llvm::Expected<Schema> parseSchema(llvm::StringRef text);

class OpContext;
using BuildFn = mlir::LogicalResult (*)(OpContext &);

struct OpEntry {
  const char *schema;
  BuildFn build;
};

/// The table rows, in ATen schema syntax: every family's (FXOps.cpp).
llvm::ArrayRef<OpEntry> opEntries();
/// One family's rows, kept next to its builders (<Family>Ops.cpp).
llvm::ArrayRef<OpEntry> elementwiseOpEntries();
llvm::ArrayRef<OpEntry> compareOpEntries();
llvm::ArrayRef<OpEntry> creationOpEntries();
llvm::ArrayRef<OpEntry> movementOpEntries();
llvm::ArrayRef<OpEntry> productOpEntries();
llvm::ArrayRef<OpEntry> reductionOpEntries();

/// Why a known op is not in the table (empty when there is no known
/// reason), for the unsupported-ops error.
llvm::StringRef unsupportedReason(llvm::StringRef op);

/// What a builder sees: the bound arguments (validated against the schema,
/// defaults filled in), the node's traced result types and the builder.
class OpContext {
public:
  OpContext(mlir::OpBuilder &b, mlir::Location loc, const Node &node,
            const Schema &schema,
            llvm::ArrayRef<const llvm::json::Value *> bound,
            llvm::function_ref<mlir::Value(const llvm::json::Value &)> resolve)
      : b(b), loc(loc), node(node), schema(schema), bound(bound),
        resolve(resolve) {}

  mlir::OpBuilder &b;
  mlir::Location loc;
  const Node &node;

  /// Argument accessors by schema parameter name. Arguments were checked
  /// against their kinds before building; None gives the empty optional.
  bool isNone(llvm::StringRef name) const;
  mlir::Value tensor(llvm::StringRef name) const;
  llvm::SmallVector<mlir::Value> tensors(llvm::StringRef name) const;
  int64_t i64(llvm::StringRef name) const;
  std::optional<int64_t> optI64(llvm::StringRef name) const;
  llvm::SmallVector<int64_t> ints(llvm::StringRef name) const;
  double f64(llvm::StringRef name) const; // float or Scalar
  bool flag(llvm::StringRef name) const;
  std::optional<std::string> str(llvm::StringRef name) const;
  /// ScalarType argument ("float32", ...), empty when None.
  std::optional<std::string> dtype(llvm::StringRef name) const;

  unsigned numResults() const { return node.meta.size(); }
  /// The traced type of result i (f32 / i64 / i1 per docs §2).
  mlir::RankedTensorType resultType(unsigned i = 0) const;
  llvm::ArrayRef<int64_t> resultShape(unsigned i = 0) const {
    return node.meta[i].shape;
  }

  /// An error at the node's location, prefixed with the op.
  mlir::InFlightDiagnostic error() const;

  /// `v`, computed in f32 for result i, rounded where the graph computes
  /// result i in float16 / bfloat16 (a rounding point): constants round in
  /// place, other values become llm.cast to the narrow type. Values
  /// already narrow, and results of any other dtype, are `v` itself.
  mlir::Value roundToTraced(unsigned i, mlir::Value v);
  /// Whether the graph computes result i in float16 / bfloat16.
  bool narrowResult(unsigned i = 0) const {
    return node.meta[i].dtype == "float16" || node.meta[i].dtype == "bfloat16";
  }

  llvm::SmallVector<mlir::Value, 3> results;

private:
  const Schema &schema;
  llvm::ArrayRef<const llvm::json::Value *> bound;
  llvm::function_ref<mlir::Value(const llvm::json::Value &)> resolve;
  const llvm::json::Value *arg(llvm::StringRef name) const;
};

/// Element type of a torch dtype in the imported IR: float -> f32, integer
/// -> i64, bool -> i1 (docs/frontend-graphs.md section 2).
mlir::Type elementTypeFor(mlir::Builder &b, llvm::StringRef dtype);

// Conversions from double: f32Of, isInt64, saturatingInt64
// (pimc/Support/Numeric.h). Readers reject values torch could not produce
// (inline tensors); saturation keeps folding of hostile graphs defined.
using pimc::f32Of;
using pimc::isInt64;
using pimc::saturatingInt64;

/// A constant built from an inline JSON tensor ({"dtype", "shape", "data"}).
mlir::FailureOr<mlir::Value> buildInlineTensor(mlir::OpBuilder &b,
                                               mlir::Location loc,
                                               const llvm::json::Value &v,
                                               std::string &err);

} // namespace pimc::fx::detail

#endif // PIMC_LIB_FRONTEND_FX_FXOPTABLE_H
