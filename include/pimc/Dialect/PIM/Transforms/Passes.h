//===- Passes.h - pim dialect passes ----------------------------*- C++ -*-===//
#ifndef PIMC_DIALECT_PIM_TRANSFORMS_PASSES_H
#define PIMC_DIALECT_PIM_TRANSFORMS_PASSES_H

#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace pimc::pim {

#define GEN_PASS_DECL
#include "pimc/Dialect/PIM/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pimc/Dialect/PIM/Transforms/Passes.h.inc"

} // namespace pimc::pim

#endif // PIMC_DIALECT_PIM_TRANSFORMS_PASSES_H
