//===- CreationOps.cpp - ATen creation and conversion --------------------===//
//
// The FX importer's builders for creation and conversion, and their rows of the
// op table (ATen schema syntax, as torch declares them).
//
//===----------------------------------------------------------------------===//

#include "FXOpHelpers.h"

#include "pimc/Numerics/Kernels.h"

using namespace pimc;
using namespace pimc::fx;
using namespace pimc::fx::detail;

namespace {

LogicalResult buildArange(OpContext &c, double start, double end, double step) {
  RankedTensorType rt = c.resultType();
  if (step == 0 || !std::isfinite(start) || !std::isfinite(end) ||
      !std::isfinite(step))
    return c.error() << "start, end and step must be finite and step non-zero";
  Lit l;
  l.shape.assign(rt.getShape().begin(), rt.getShape().end());
  l.elem = rt.getElementType();
  if (l.shape.size() != 1)
    return c.error() << "expected a 1-D result";
  double count = std::ceil((end - start) / step);
  int64_t n = isInt64(count) ? static_cast<int64_t>(count) : -1;
  if (n != l.shape[0])
    return c.error() << "arange(" << start << ", " << end << ", " << step
                     << ") has " << n << " elements, the graph traced "
                     << l.shape[0];
  if (failed(checkBuiltSize(c, n)))
    return failure();
  for (int64_t i = 0; i < n; ++i)
    l.v.push_back(roundTo(l.elem, start + i * step));
  c.results.push_back(emitLit(c, l));
  return success();
}
LogicalResult buildArangeEnd(OpContext &c) {
  return buildArange(c, 0, c.f64("end"), 1);
}
LogicalResult buildArangeStart(OpContext &c) {
  return buildArange(c, c.f64("start"), c.f64("end"), 1);
}
LogicalResult buildArangeStep(OpContext &c) {
  return buildArange(c, c.f64("start"), c.f64("end"), c.f64("step"));
}

LogicalResult fill(OpContext &c, double value) {
  RankedTensorType rt = c.resultType();
  c.results.push_back(splat(c, rt.getShape(), rt.getElementType(), value));
  return success();
}
LogicalResult buildFull(OpContext &c) { return fill(c, c.f64("fill_value")); }
LogicalResult buildZeros(OpContext &c) { return fill(c, 0); }
LogicalResult buildFillScalar(OpContext &c) { return fill(c, c.f64("value")); }
LogicalResult buildOnes(OpContext &c) { return fill(c, 1); }
LogicalResult buildScalarTensor(OpContext &c) { return fill(c, c.f64("s")); }

/// The narrow float type of a float16 / bfloat16 dtype, else null.
Type narrowFloat(Builder &b, llvm::StringRef dtype) {
  if (dtype == "float16")
    return b.getF16Type();
  if (dtype == "bfloat16")
    return b.getBF16Type();
  return {};
}

/// _to_copy / to.dtype / type_as: the traced dtype says the target (to
/// float16 / bfloat16, the importer's rounding point rounds the f32 value).
LogicalResult convertTo(OpContext &c, Value self) {
  llvm::StringRef dtype = c.node.meta[0].dtype;
  RankedTensorType rt = c.resultType();
  if (auto folded =
          foldElementwise(c, {self}, rt.getShape(), rt.getElementType(),
                          [](ArrayRef<double> a) { return a[0]; })) {
    c.results.push_back(*folded);
    return success();
  }
  if ((dtype == "float16" || dtype == "bfloat16") &&
      typeOf(self).getElementType() == narrowFloat(c.b, dtype))
    c.results.push_back(self);
  else if (dtype == "float16" || dtype == "bfloat16" || dtype == "float64")
    // float64 activations are computed in f32 (docs/fx-importer.md).
    c.results.push_back(toF32(c, self));
  else
    c.results.push_back(toElem(c, self, rt.getElementType()));
  return success();
}
LogicalResult buildToCopy(OpContext &c) {
  return convertTo(c, c.tensor("self"));
}

/// Ops that only copy or alias in inference (clone, detach, ...).
LogicalResult buildIdentity(OpContext &c) {
  c.results.push_back(c.tensor("self"));
  return success();
}

LogicalResult buildDropout(OpContext &c) {
  double p = c.f64("p");
  bool train = c.node.target == "aten.native_dropout"
                   ? c.isNone("train") || c.flag("train")
                   : c.flag("train");
  if (train && p != 0)
    return c.error() << "training-mode dropout (p = " << p
                     << ") is not supported; export the module in eval mode";
  c.results.push_back(c.tensor("input"));
  if (c.numResults() == 2)
    c.results.push_back(splat(c, c.resultShape(1), c.b.getI1Type(), 1));
  return success();
}

} // namespace

llvm::ArrayRef<OpEntry> pimc::fx::detail::creationOpEntries() {
  static const OpEntry entries[] = {
      {"clone(Tensor self, *, MemoryFormat? memory_format=None)",
       buildIdentity},
      {"contiguous(Tensor(a) self, *, MemoryFormat memory_format=0)",
       buildIdentity},
      {"detach(Tensor(a) self)", buildIdentity},
      {"alias(Tensor(a) self)", buildIdentity},
      {"lift_fresh_copy(Tensor self)", buildIdentity},
      {"dropout(Tensor input, float p, bool train)", buildDropout},
      {"native_dropout(Tensor input, float p, bool? train)", buildDropout},
      {"arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None)",
       buildArangeEnd},
      {"arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None)",
       buildArangeStart},
      {"arange.start_step(Scalar start, Scalar end, Scalar step=1, *, "
       "ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None)",
       buildArangeStep},
      {"fill.Scalar(Tensor self, Scalar value)", buildFillScalar},
      {"new_full(Tensor self, SymInt[] size, Scalar fill_value, *, "
       "ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None)",
       buildFull},
      {"full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None)",
       buildFull},
      {"zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None)",
       buildZeros},
      {"ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None)",
       buildOnes},
      {"full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None, "
       "MemoryFormat? memory_format=None)",
       buildFull},
      {"zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? "
       "layout=None, Device? device=None, bool? pin_memory=None, "
       "MemoryFormat? memory_format=None)",
       buildZeros},
      {"ones_like(Tensor self, *, ScalarType? dtype=None, Layout? "
       "layout=None, Device? device=None, bool? pin_memory=None, "
       "MemoryFormat? memory_format=None)",
       buildOnes},
      {"new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None)",
       buildZeros},
      {"new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None)",
       buildOnes},
      {"scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? "
       "layout=None, Device? device=None, bool? pin_memory=None)",
       buildScalarTensor},
      {"_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None, bool non_blocking=False, "
       "MemoryFormat? memory_format=None)",
       buildToCopy},
      {"to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, "
       "bool copy=False, MemoryFormat? memory_format=None)",
       buildToCopy},
      {"type_as(Tensor self, Tensor other)", buildToCopy},
  };
  return entries;
}

Value OpContext::roundToTraced(unsigned i, Value v) {
  Type narrow = narrowFloat(b, node.meta[i].dtype);
  if (!narrow || !v || !typeOf(v).getElementType().isF32())
    return v;
  if (std::optional<Lit> l = litOf(v)) {
    for (double &x : l->v)
      x = narrow.isBF16() ? ref::roundToBf16(static_cast<float>(x))
                          : ref::roundToF16(static_cast<float>(x));
    return emitLit(*this, *l);
  }
  return llm::CastOp::create(
      b, loc, RankedTensorType::get(typeOf(v).getShape(), narrow), v);
}
