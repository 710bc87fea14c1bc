//===- CompareOps.cpp - ATen comparisons, masks and selection
//---------------===//
//
// The FX importer's builders for comparisons, masks and selection, and their
// rows of the op table (ATen schema syntax, as torch declares them).
//
//===----------------------------------------------------------------------===//

#include "FXOpHelpers.h"

using namespace pimc;
using namespace pimc::fx;
using namespace pimc::fx::detail;

namespace {

template <llm::ComparePredicate P>
LogicalResult buildCompareTensor(OpContext &c) {
  Value r =
      compareValues(c, P, c.tensor("self"), c.tensor("other"), c.resultShape());
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

template <llm::ComparePredicate P>
LogicalResult buildCompareScalar(OpContext &c) {
  Value self = c.tensor("self");
  // The scalar takes the tensor's type unless it is a float against ints.
  double s = c.f64("other");
  Type elem = typeOf(self).getElementType();
  if (!isa<FloatType>(elem) && s != std::trunc(s))
    elem = c.b.getF32Type();
  if (isa<FloatType>(elem))
    elem = c.b.getF32Type();
  Value r = compareValues(c, P, self, splat(c, {}, elem, s), c.resultShape());
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

LogicalResult buildLogicalNot(OpContext &c) {
  Value self = c.tensor("self");
  if (!typeOf(self).getElementType().isInteger(1) &&
      c.node.target == "aten.bitwise_not")
    return c.error() << "only boolean tensors are supported";
  Value zero = splat(
      c, {},
      typeOf(self).getElementType().isInteger(1)
          ? c.b.getI1Type()
          : typeOf(toElem(c, self, promoted(c, self, self))).getElementType(),
      0);
  Value r =
      compareValues(c, llm::ComparePredicate::Eq, self, zero, c.resultShape());
  if (!r)
    return failure();
  c.results.push_back(toElem(c, r, c.resultType().getElementType()));
  return success();
}

/// Boolean and / or as selects (a & b = a ? b : false, a | b = a ? true : b).
template <bool And> LogicalResult buildLogical(OpContext &c) {
  Value a = c.tensor("self"), b = c.tensor("other");
  Type i1 = c.b.getI1Type();
  if (!c.resultType().getElementType().isInteger(1) ||
      !typeOf(a).getElementType().isInteger(1) ||
      !typeOf(b).getElementType().isInteger(1)) {
    if (c.node.target.find("logical") == std::string::npos)
      return c.error() << "only boolean tensors are supported";
  }
  a = toElem(c, a, i1);
  b = toElem(c, b, i1);
  Value r = And ? selectValues(c, a, b, splat(c, {}, i1, 0))
                : selectValues(c, a, splat(c, {}, i1, 1), b);
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

LogicalResult buildWhere(OpContext &c) {
  Value r = selectValues(c, c.tensor("condition"), c.tensor("self"),
                         c.tensor("other"));
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

LogicalResult buildWhereScalarOther(OpContext &c) {
  Value r = selectValues(c, c.tensor("condition"), c.tensor("self"),
                         scalarArg(c, "other"));
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

LogicalResult buildWhereScalarSelf(OpContext &c) {
  Value r = selectValues(c, c.tensor("condition"), scalarArg(c, "self"),
                         c.tensor("other"));
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

LogicalResult buildMaskedFillScalar(OpContext &c) {
  Value r = selectValues(c, c.tensor("mask"), scalarArg(c, "value"),
                         c.tensor("self"));
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

LogicalResult buildMaskedFillTensor(OpContext &c) {
  Value value = c.tensor("value");
  if (rankOf(value) != 0)
    return c.error() << "the fill value must be a 0-dimensional tensor";
  Value r = selectValues(c, c.tensor("mask"), value, c.tensor("self"));
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

/// triu/tril: a constant mask over the last two dimensions.
LogicalResult triangle(OpContext &c, bool upper) {
  Value self = c.tensor("self");
  int64_t diag = c.i64("diagonal");
  ArrayRef<int64_t> shape = shapeOf(self);
  if (shape.size() < 2)
    return c.error() << "expects a tensor of rank >= 2";
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  if (failed(checkBuiltSize(c, rows * cols)))
    return failure();
  Lit mask;
  mask.shape = {rows, cols};
  mask.elem = c.b.getI1Type();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.v.push_back(upper ? j - i >= diag : j - i <= diag);
  Value zero = splat(c, {}, c.resultType().getElementType(), 0);
  Value r = selectValues(c, emitLit(c, mask), self, zero);
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}
LogicalResult buildTriu(OpContext &c) { return triangle(c, true); }
LogicalResult buildTril(OpContext &c) { return triangle(c, false); }

} // namespace

llvm::ArrayRef<OpEntry> pimc::fx::detail::compareOpEntries() {
  using P = llm::ComparePredicate;
  static const OpEntry entries[] = {
      {"eq.Tensor(Tensor self, Tensor other)", buildCompareTensor<P::Eq>},
      {"ne.Tensor(Tensor self, Tensor other)", buildCompareTensor<P::Ne>},
      {"lt.Tensor(Tensor self, Tensor other)", buildCompareTensor<P::Lt>},
      {"le.Tensor(Tensor self, Tensor other)", buildCompareTensor<P::Le>},
      {"gt.Tensor(Tensor self, Tensor other)", buildCompareTensor<P::Gt>},
      {"ge.Tensor(Tensor self, Tensor other)", buildCompareTensor<P::Ge>},
      {"eq.Scalar(Tensor self, Scalar other)", buildCompareScalar<P::Eq>},
      {"ne.Scalar(Tensor self, Scalar other)", buildCompareScalar<P::Ne>},
      {"lt.Scalar(Tensor self, Scalar other)", buildCompareScalar<P::Lt>},
      {"le.Scalar(Tensor self, Scalar other)", buildCompareScalar<P::Le>},
      {"gt.Scalar(Tensor self, Scalar other)", buildCompareScalar<P::Gt>},
      {"ge.Scalar(Tensor self, Scalar other)", buildCompareScalar<P::Ge>},
      {"logical_not(Tensor self)", buildLogicalNot},
      {"bitwise_not(Tensor self)", buildLogicalNot},
      {"bitwise_and.Tensor(Tensor self, Tensor other)", buildLogical<true>},
      {"bitwise_or.Tensor(Tensor self, Tensor other)", buildLogical<false>},
      {"__and__.Tensor(Tensor self, Tensor other)", buildLogical<true>},
      {"__or__.Tensor(Tensor self, Tensor other)", buildLogical<false>},
      {"logical_and(Tensor self, Tensor other)", buildLogical<true>},
      {"logical_or(Tensor self, Tensor other)", buildLogical<false>},
      {"where.self(Tensor condition, Tensor self, Tensor other)", buildWhere},
      {"where.ScalarOther(Tensor condition, Tensor self, Scalar other)",
       buildWhereScalarOther},
      {"where.ScalarSelf(Tensor condition, Scalar self, Tensor other)",
       buildWhereScalarSelf},
      {"masked_fill.Scalar(Tensor self, Tensor mask, Scalar value)",
       buildMaskedFillScalar},
      {"masked_fill.Tensor(Tensor self, Tensor mask, Tensor value)",
       buildMaskedFillTensor},
      {"triu(Tensor self, int diagonal=0)", buildTriu},
      {"tril(Tensor self, int diagonal=0)", buildTril},
  };
  return entries;
}
