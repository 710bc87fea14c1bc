//===- LLMBuilders.cpp - helpers for building llm IR from graphs ----------===//
#include "pimc/Dialect/LLM/IR/LLMBuilders.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Support/Shape.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

FailureOr<SmallVector<int64_t>>
pimc::llm::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Right-aligned: a missing leading dimension acts as size 1.
    int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (da == db || db == 1 || ShapedType::isDynamic(db))
      out[i] = (ShapedType::isDynamic(db) && da == 1) ? db : da;
    else if (da == 1 || ShapedType::isDynamic(da))
      out[i] = db;
    else
      return failure();
  }
  return out;
}

Value pimc::llm::broadcastTo(OpBuilder &builder, Location loc, Value value,
                             ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape)
    return value;
  auto common = broadcastShapes(type.getShape(), shape);
  if (failed(common) || ArrayRef<int64_t>(*common) != shape) {
    emitError(loc) << "cannot broadcast a tensor of shape "
                   << shapeString(type.getShape()) << " to "
                   << shapeString(shape);
    return {};
  }
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  return BroadcastOp::create(builder, loc, resultType, value);
}

LogicalResult pimc::llm::broadcastBinaryOperands(OpBuilder &builder,
                                                 Location loc, Value &lhs,
                                                 Value &rhs) {
  ArrayRef<int64_t> a = cast<RankedTensorType>(lhs.getType()).getShape();
  ArrayRef<int64_t> b = cast<RankedTensorType>(rhs.getType()).getShape();
  auto common = broadcastShapes(a, b);
  if (failed(common))
    return emitError(loc) << "operand shapes " << shapeString(a) << " and "
                          << shapeString(b) << " do not broadcast";
  Value l = broadcastTo(builder, loc, lhs, *common);
  Value r = broadcastTo(builder, loc, rhs, *common);
  if (!l || !r)
    return failure();
  lhs = l;
  rhs = r;
  return success();
}
