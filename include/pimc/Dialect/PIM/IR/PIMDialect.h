//===- PIMDialect.h - the pim dialect ---------------------------*- C++ -*-===//
#ifndef PIMC_DIALECT_PIM_IR_PIMDIALECT_H
#define PIMC_DIALECT_PIM_IR_PIMDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <string>
#include <utility>
#include <vector>

#include "pimsim/Target.h"

#include "pimc/Dialect/PIM/IR/PIMDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "pimc/Dialect/PIM/IR/PIMAttrs.h.inc"

#define GET_OP_CLASSES
#include "pimc/Dialect/PIM/IR/PIMOps.h.inc"

namespace pimc::pim {

/// An affine field expression: constant + sum of coeff * variable.
struct Expr {
  int64_t constant = 0;
  std::vector<std::pair<std::string, int64_t>> terms;
};
/// Parses "8*i+j-3", "40+krow", "12". On error returns a message.
mlir::FailureOr<Expr> parseExpr(llvm::StringRef text, std::string &error);
/// Prints in pimsim's text form ("40+8*i").
std::string printExpr(const Expr &e);

} // namespace pimc::pim

#endif // PIMC_DIALECT_PIM_IR_PIMDIALECT_H
