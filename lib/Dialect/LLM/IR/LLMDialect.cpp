//===- LLMDialect.cpp - llm dialect, types and attributes -----------------===//
#include "pimc/Dialect/LLM/IR/LLMDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pimc::llm;

#include "pimc/Dialect/LLM/IR/LLMDialect.cpp.inc"
#include "pimc/Dialect/LLM/IR/LLMEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "pimc/Dialect/LLM/IR/LLMAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "pimc/Dialect/LLM/IR/LLMTypes.cpp.inc"

void LLMDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "pimc/Dialect/LLM/IR/LLMOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "pimc/Dialect/LLM/IR/LLMTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "pimc/Dialect/LLM/IR/LLMAttrs.cpp.inc"
      >();
}

LogicalResult KVCacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t maxLength, int64_t kvHeads,
                                  int64_t headDim, Type elementType) {
  if (maxLength <= 0 || kvHeads <= 0 || headDim <= 0)
    return emitError()
           << "kv_cache dimensions must be positive, got max_length = "
           << maxLength << ", kv_heads = " << kvHeads
           << ", head_dim = " << headDim;
  if (!isa<Float32Type, Float16Type, BFloat16Type>(elementType))
    return emitError() << "kv_cache element_type must be f32, f16 or bf16, got "
                       << elementType;
  return success();
}

LogicalResult
QuantizedWeightType::verify(function_ref<InFlightDiagnostic()> emitError,
                            ArrayRef<int64_t> shape, Type storageType,
                            int64_t groupSize, Type scaleType, Type zeroPoint,
                            StringRef packing) {
  if (shape.size() != 2 || shape[0] <= 0 || shape[1] <= 0)
    return emitError() << "qweight shape must be [N, K] with positive sizes";
  auto storage = dyn_cast<IntegerType>(storageType);
  if (!storage || !storage.isUnsigned() ||
      (storage.getWidth() != 4 && storage.getWidth() != 8))
    return emitError() << "qweight storage_type must be ui4 or ui8, got "
                       << storageType;
  if (groupSize <= 0 || shape[1] % groupSize != 0)
    return emitError() << "qweight group_size " << groupSize
                       << " must be positive and divide K = " << shape[1];
  if (!isa<Float32Type, Float16Type, BFloat16Type>(scaleType))
    return emitError() << "qweight scale_type must be f32, f16 or bf16, got "
                       << scaleType;
  if (!isa<NoneType>(zeroPoint)) {
    auto zp = dyn_cast<IntegerType>(zeroPoint);
    if (!zp || !zp.isUnsigned() || zp.getWidth() != storage.getWidth())
      return emitError() << "qweight zero_point must be none or " << storageType
                         << ", got " << zeroPoint;
  }
  if (packing != "gptq" && packing != "gptq_v2")
    return emitError() << "qweight packing '" << packing
                       << "' is unknown (known: gptq, gptq_v2)";
  unsigned bits = storage.getWidth();
  if ((shape[1] * bits) % 32 != 0 || (shape[0] * bits) % 32 != 0)
    return emitError()
           << "gptq packing needs K and N to fill whole 32-bit words";
  return success();
}
