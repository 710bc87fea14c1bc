//===- PIMDialect.h - the pim dialect ---------------------------*- C++ -*-===//
#ifndef PIMC_DIALECT_PIM_IR_PIMDIALECT_H
#define PIMC_DIALECT_PIM_IR_PIMDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <utility>
#include <vector>

#include "pimsim/Program.h"
#include "pimsim/Target.h"

#include "pimc/Dialect/PIM/IR/PIMDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "pimc/Dialect/PIM/IR/PIMAttrs.h.inc"

#define GET_OP_CLASSES
#include "pimc/Dialect/PIM/IR/PIMOps.h.inc"

namespace pimc::pim {

/// One variable of a macro-op field: `ch`, an enclosing loop or a runtime
/// parameter, with its step.
struct IndexTerm {
  enum class Var { Channel, Loop, Param };
  Var var = Var::Channel;
  unsigned loop = 0;             // Var::Loop: nesting depth, 0 = outermost
  mlir::FlatSymbolRefAttr param; // Var::Param: the pim.param
  int64_t step = 0;
};
/// A field's value as pimsim stores it: base + sum(step * variable), one
/// term per variable, steps non-zero.
struct LinearIndex {
  int64_t base = 0;
  llvm::SmallVector<IndexTerm, 2> terms;
};

/// The linear form of a field value (an IntegerAttr or a #pim.index);
/// failure, with the reason in `error`, for anything else.
mlir::FailureOr<LinearIndex> decomposeIndex(mlir::Attribute value,
                                            std::string &error);
/// `expr` as a field value: d0 is `ch`, d<k+1> the loop at depth k and
/// s<i> the parameter `params[i]`. An IntegerAttr when it is constant,
/// else a #pim.index that keeps only the dims and parameters it uses.
mlir::Attribute buildIndex(mlir::AffineExpr expr,
                           llvm::ArrayRef<mlir::FlatSymbolRefAttr> params);
/// The number of pim.loop ops enclosing `op`.
unsigned loopDepth(mlir::Operation *op);
/// The byte offset in `act` of each pim.buffer pim-plan-memory placed.
llvm::StringMap<int64_t> placedBuffers(ProgramOp program);

/// On pim.gemv / pim.attention (pim-select-kernels) and on their streams
/// (pim-build-program): "generated" or "library:<name>".
inline constexpr llvm::StringLiteral kKernelAttrName = "pim.kernel";
/// The library kernel a pim.kernel value names: "" for "generated", nothing
/// when the value is neither form.
std::optional<llvm::StringRef> libraryKernelName(llvm::StringRef choice);

} // namespace pimc::pim

#endif // PIMC_DIALECT_PIM_IR_PIMDIALECT_H
