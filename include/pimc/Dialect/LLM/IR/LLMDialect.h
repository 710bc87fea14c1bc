//===- LLMDialect.h - the llm dialect ---------------------------*- C++ -*-===//
#ifndef PIMC_DIALECT_LLM_IR_LLMDIALECT_H
#define PIMC_DIALECT_LLM_IR_LLMDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "pimc/Dialect/LLM/IR/LLMDialect.h.inc"
#include "pimc/Dialect/LLM/IR/LLMEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "pimc/Dialect/LLM/IR/LLMAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "pimc/Dialect/LLM/IR/LLMTypes.h.inc"

#define GET_OP_CLASSES
#include "pimc/Dialect/LLM/IR/LLMOps.h.inc"

namespace pimc::llm {
/// The shape of a recurrent op's state: an !llm.recurrent_state's, or that
/// of the f32 tensor holding its value (LLMRecurrentOps.td).
llvm::ArrayRef<int64_t> stateShape(mlir::Type stateType);
} // namespace pimc::llm

#endif // PIMC_DIALECT_LLM_IR_LLMDIALECT_H
