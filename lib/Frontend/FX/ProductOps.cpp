//===- ProductOps.cpp - ATen products: mm, bmm, linear, embedding, SDPA
//-----===//
//
// The FX importer's builders for products: mm, bmm, linear, embedding, SDPA,
// and their rows of the op table (ATen schema syntax, as torch declares them).
//
//===----------------------------------------------------------------------===//

#include "FXOpHelpers.h"

using namespace pimc;
using namespace pimc::fx;
using namespace pimc::fx::detail;

namespace {

/// The parameter W when `rhs` is t(W) / W.T of an llm.weight: the product
/// is then an nn.Linear (llm.linear takes W in the [N, K] layout).
Value linearWeight(Value rhs) {
  auto t = rhs.getDefiningOp<llm::TransposeOp>();
  if (!t || t.getPermutation().size() != 2 || t.getPermutation()[0] != 1)
    return {};
  if (auto w = t.getInput().getDefiningOp<llm::WeightOp>())
    return w;
  return {};
}

/// a @ b for rank >= 2 operands (numpy batch broadcasting).
Value matmul(OpContext &c, Value a, Value b, ArrayRef<int64_t> resultShape) {
  if (Value w = linearWeight(b))
    return llm::LinearOp::create(
        c.b, c.loc, RankedTensorType::get(resultShape, c.b.getF32Type()),
        toF32(c, a), w, Value());
  return llm::MatmulOp::create(
      c.b, c.loc, RankedTensorType::get(resultShape, c.b.getF32Type()),
      isFloat(a) ? a : toF32(c, a), isFloat(b) ? b : toF32(c, b));
}

LogicalResult buildMm(OpContext &c) {
  Value a = c.tensor("self"), b = c.tensor("mat2");
  if (rankOf(a) != 2 || rankOf(b) != 2)
    return c.error() << "expects 2-D operands";
  c.results.push_back(matmul(c, a, b, c.resultShape()));
  return success();
}

LogicalResult buildBmm(OpContext &c) {
  Value a = c.tensor("self"), b = c.tensor("mat2");
  if (rankOf(a) != 3 || rankOf(b) != 3)
    return c.error() << "expects 3-D operands";
  c.results.push_back(matmul(c, a, b, c.resultShape()));
  return success();
}

/// torch.matmul: 1-D operands gain and then lose a unit dimension.
LogicalResult buildMatmul(OpContext &c) {
  Value a = c.tensor("self"), b = c.tensor("other");
  if (rankOf(a) == 0 || rankOf(b) == 0)
    return c.error() << "expects operands of rank >= 1";
  if (rankOf(a) == 1)
    a = reshapeTo(c, a, {1, shapeOf(a)[0]});
  if (rankOf(b) == 1)
    b = reshapeTo(c, b, {shapeOf(b)[0], 1});
  llvm::SmallVector<int64_t> shape;
  {
    ArrayRef<int64_t> as = shapeOf(a), bs = shapeOf(b);
    auto batch = llm::broadcastShapes(as.drop_back(2), bs.drop_back(2));
    if (failed(batch))
      return c.error() << "batch dimensions do not broadcast";
    shape = *batch;
    shape.push_back(as[as.size() - 2]);
    shape.push_back(bs.back());
  }
  Value r = matmul(c, a, b, shape);
  c.results.push_back(reshapeTo(c, r, c.resultShape()));
  return success();
}

/// beta * self + alpha * (m1 @ m2); an nn.Linear with a 1-D bias is one
/// llm.linear.
LogicalResult addProduct(OpContext &c, Value bias, Value m1, Value m2) {
  double beta = c.f64("beta"), alpha = c.f64("alpha");
  ArrayRef<int64_t> rs = c.resultShape();
  Value w = linearWeight(m2);
  if (w && beta == 1 && alpha == 1 && rankOf(bias) == 1 &&
      shapeOf(bias)[0] == rs.back() && rs.size() == 2) {
    c.results.push_back(llm::LinearOp::create(
        c.b, c.loc, RankedTensorType::get(rs, c.b.getF32Type()), toF32(c, m1),
        w, bias));
    return success();
  }
  Value p = scaledBy(c, matmul(c, m1, m2, rs), alpha);
  Value bb = broadcastTo(c, scaledBy(c, toF32(c, bias), beta), rs);
  if (!bb)
    return failure();
  c.results.push_back(llm::AddOp::create(c.b, c.loc, bb, p));
  return success();
}

LogicalResult buildAddmm(OpContext &c) {
  Value m1 = c.tensor("mat1"), m2 = c.tensor("mat2");
  if (rankOf(m1) != 2 || rankOf(m2) != 2)
    return c.error() << "expects 2-D mat1 and mat2";
  return addProduct(c, c.tensor("self"), m1, m2);
}

LogicalResult buildBaddbmm(OpContext &c) {
  Value m1 = c.tensor("batch1"), m2 = c.tensor("batch2");
  if (rankOf(m1) != 3 || rankOf(m2) != 3)
    return c.error() << "expects 3-D batch1 and batch2";
  return addProduct(c, c.tensor("self"), m1, m2);
}

/// aten.linear (torch.export keeps it): y = x W^T + b.
LogicalResult buildLinear(OpContext &c) {
  Value x = c.tensor("input"), w = c.tensor("weight"), bias = c.tensor("bias");
  ArrayRef<int64_t> rs = c.resultShape();
  if (rankOf(w) != 2 || rankOf(x) < 1)
    return c.error() << "expects a 2-D weight";
  if (w.getDefiningOp<llm::WeightOp>() && (!bias || rankOf(bias) == 1)) {
    c.results.push_back(llm::LinearOp::create(
        c.b, c.loc, RankedTensorType::get(rs, c.b.getF32Type()), toF32(c, x), w,
        bias));
    return success();
  }
  Value wt = swapDims(c, w, 0, 1);
  if (rankOf(x) == 1)
    x = reshapeTo(c, x, {1, shapeOf(x)[0]});
  llvm::SmallVector<int64_t> shape(shapeOf(x));
  shape.back() = shapeOf(w)[0];
  Value y = llm::MatmulOp::create(
      c.b, c.loc, RankedTensorType::get(shape, c.b.getF32Type()),
      isFloat(x) ? x : toF32(c, x), wt);
  if (bias) {
    Value bb = broadcastTo(c, toF32(c, bias), shape);
    if (!bb)
      return failure();
    y = llm::AddOp::create(c.b, c.loc, y, bb);
  }
  c.results.push_back(reshapeTo(c, y, rs));
  return success();
}

LogicalResult buildEmbedding(OpContext &c) {
  Value table = c.tensor("weight");
  Value ids = toElem(c, c.tensor("indices"), c.b.getI64Type());
  if (rankOf(table) != 2)
    return c.error() << "expects a 2-D weight";
  int64_t n = numel(shapeOf(ids)), h = shapeOf(table)[1];
  Value flat = reshapeTo(c, ids, {n});
  Value rows = llm::EmbeddingOp::create(
      c.b, c.loc, RankedTensorType::get({n, h}, c.b.getF32Type()), table, flat);
  c.results.push_back(reshapeTo(c, rows, c.resultShape()));
  return success();
}

} // namespace

llvm::ArrayRef<OpEntry> pimc::fx::detail::productOpEntries() {
  static const OpEntry entries[] = {
      {"mm(Tensor self, Tensor mat2)", buildMm},
      {"bmm(Tensor self, Tensor mat2)", buildBmm},
      {"matmul(Tensor self, Tensor other)", buildMatmul},
      {"addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, "
       "Scalar alpha=1)",
       buildAddmm},
      {"baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, "
       "Scalar alpha=1)",
       buildBaddbmm},
      {"linear(Tensor input, Tensor weight, Tensor? bias=None)", buildLinear},
      {"embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool "
       "scale_grad_by_freq=False, bool sparse=False)",
       buildEmbedding},
  };
  return entries;
}
