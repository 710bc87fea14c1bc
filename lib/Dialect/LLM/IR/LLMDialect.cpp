//===- LLMDialect.cpp - llm dialect, types and attributes -----------------===//
#include "pimc/Dialect/LLM/IR/LLMDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringMap.h"
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

LogicalResult SymbolicDimAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t arg, int64_t dim,
    StringRef name, StringRef symbol, int64_t min, std::optional<int64_t> max,
    int64_t example, int64_t value) {
  if (arg < 0 || dim < 0)
    return emitError() << "symbolic_dim arg and dim must be non-negative";
  if (symbol.empty())
    return emitError() << "symbolic_dim needs a symbol";
  if (min < 0 || (max && *max < min))
    return emitError() << "symbolic_dim range [" << min << ", "
                       << (max ? std::to_string(*max) : "inf")
                       << "] is empty or negative";
  auto inRange = [&](int64_t v) { return v >= min && (!max || v <= *max); };
  if (!inRange(example) || !inRange(value))
    return emitError() << "symbolic_dim '" << symbol
                       << "': " << (inRange(example) ? "value " : "example ")
                       << (inRange(example) ? value : example)
                       << " is outside the range [" << min << ", "
                       << (max ? std::to_string(*max) : "inf") << "]";
  return success();
}

/// `llm.dynamic_dims` on a function: each entry names a dimension of an
/// argument, which has the recorded size; a symbol has one value.
static LogicalResult verifyDynamicDims(Operation *op, Attribute attr) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  auto dims = dyn_cast<ArrayAttr>(attr);
  if (!fn || !dims)
    return op->emitOpError()
           << "'" << LLMDialect::kDynamicDimsAttr
           << "' must be an array of #llm.symbolic_dim on a function";
  llvm::StringMap<int64_t> values;
  for (Attribute a : dims) {
    auto d = dyn_cast<SymbolicDimAttr>(a);
    if (!d)
      return op->emitOpError()
             << "'" << LLMDialect::kDynamicDimsAttr << "' entry " << a
             << " is not #llm.symbolic_dim";
    ArrayRef<Type> args = fn.getArgumentTypes();
    auto type = d.getArg() < static_cast<int64_t>(args.size())
                    ? dyn_cast<RankedTensorType>(args[d.getArg()])
                    : RankedTensorType();
    if (!type || d.getDim() >= type.getRank())
      return op->emitOpError()
             << "symbolic dim '" << d.getSymbol() << "' names argument "
             << d.getArg() << " dim " << d.getDim() << ", which does not exist";
    if (type.getDimSize(d.getDim()) != d.getValue())
      return op->emitOpError()
             << "argument " << d.getArg() << " dim " << d.getDim() << " is "
             << type.getDimSize(d.getDim()) << ", but its symbolic dim '"
             << d.getSymbol() << "' is specialised to " << d.getValue();
    auto [it, fresh] = values.try_emplace(d.getSymbol(), d.getValue());
    if (!fresh && it->second != d.getValue())
      return op->emitOpError()
             << "symbol '" << d.getSymbol() << "' has two values, "
             << it->second << " and " << d.getValue();
  }
  return success();
}

LogicalResult LLMDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  if (attr.getName() == kDynamicDimsAttr)
    return verifyDynamicDims(op, attr.getValue());
  return success(); // other llm.* annotations (llm.model_type, ...)
}

LogicalResult KVCacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t maxLength, int64_t kvHeads,
                                  int64_t headDim, Type elementType,
                                  int64_t valuePrefix) {
  if (valuePrefix < 0 || valuePrefix >= headDim)
    return emitError() << "kv_cache value_prefix " << valuePrefix
                       << " must be in [0, head_dim = " << headDim << ")";
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
