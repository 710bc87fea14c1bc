//===- PIMIndex.cpp - #pim.index: macro-op fields as affine maps ----------===//
//
// A field that varies is an affine map over `ch` (d0), the enclosing loops
// (d1, d2, ...) and runtime parameters (symbols, bound to pim.param
// symbols). pimsim stores a field as a base plus one stride per variable,
// so the map must be linear: LinearIndex is that form, and serialization
// reads it (lib/Backend/Serialize.cpp).
//
//===----------------------------------------------------------------------===//
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace pimc::pim;

namespace {

/// The coefficients of a linear affine expression.
struct Linear {
  int64_t constant = 0;
  SmallVector<int64_t> dims, syms;
};

bool accumulate(int64_t &into, int64_t value, int64_t scale) {
  int64_t product = 0;
  return !llvm::MulOverflow(value, scale, product) &&
         !llvm::AddOverflow(into, product, into);
}

/// Adds scale * `e` to `acc`; fails on a non-linear term or overflow.
LogicalResult linearize(AffineExpr e, int64_t scale, Linear &acc,
                        std::string &error) {
  auto overflow = [&] {
    error = "a coefficient overflows int64";
    return failure();
  };
  switch (e.getKind()) {
  case AffineExprKind::Constant:
    return accumulate(acc.constant, cast<AffineConstantExpr>(e).getValue(),
                      scale)
               ? success()
               : overflow();
  case AffineExprKind::DimId: {
    unsigned pos = cast<AffineDimExpr>(e).getPosition();
    return accumulate(acc.dims[pos], 1, scale) ? success() : overflow();
  }
  case AffineExprKind::SymbolId: {
    unsigned pos = cast<AffineSymbolExpr>(e).getPosition();
    return accumulate(acc.syms[pos], 1, scale) ? success() : overflow();
  }
  case AffineExprKind::Add: {
    auto bin = cast<AffineBinaryOpExpr>(e);
    if (failed(linearize(bin.getLHS(), scale, acc, error)))
      return failure();
    return linearize(bin.getRHS(), scale, acc, error);
  }
  case AffineExprKind::Mul: {
    auto bin = cast<AffineBinaryOpExpr>(e);
    AffineExpr var = bin.getLHS();
    auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
    if (!c) {
      c = dyn_cast<AffineConstantExpr>(bin.getLHS());
      var = bin.getRHS();
    }
    if (!c) {
      error = "a product of two variables is not linear";
      return failure();
    }
    int64_t inner = 0;
    if (llvm::MulOverflow(scale, c.getValue(), inner))
      return overflow();
    return linearize(var, inner, acc, error);
  }
  default:
    error = "'mod', 'floordiv' and 'ceildiv' are not linear";
    return failure();
  }
}

FailureOr<Linear> linearForm(AffineMap map, std::string &error) {
  if (map.getNumResults() != 1) {
    error = "the map must have one result";
    return failure();
  }
  Linear l;
  l.dims.assign(map.getNumDims(), 0);
  l.syms.assign(map.getNumSymbols(), 0);
  if (failed(linearize(map.getResult(0), 1, l, error)))
    return failure();
  return l;
}

} // namespace

LogicalResult IndexAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                AffineMap map, ArrayAttr params) {
  std::string error;
  if (failed(linearForm(map, error)))
    return emitError() << "#pim.index: " << error;
  if (params.size() != map.getNumSymbols())
    return emitError() << "#pim.index: the map has " << map.getNumSymbols()
                       << " symbols but " << params.size()
                       << " parameters are bound";
  if (!llvm::all_of(params, llvm::IsaPred<FlatSymbolRefAttr>))
    return emitError() << "#pim.index: parameters must be symbol references";
  return success();
}

FailureOr<LinearIndex> pimc::pim::decomposeIndex(Attribute value,
                                                 std::string &error) {
  LinearIndex out;
  if (auto i = dyn_cast<IntegerAttr>(value)) {
    if (!i.getType().isSignlessInteger(64)) {
      error = "an integer field must be an i64";
      return failure();
    }
    out.base = i.getInt();
    return out;
  }
  auto index = dyn_cast<IndexAttr>(value);
  if (!index) {
    error = "must be an integer or a #pim.index";
    return failure();
  }
  FailureOr<Linear> l = linearForm(index.getMap(), error);
  if (failed(l))
    return failure();
  out.base = l->constant;
  for (auto [d, step] : llvm::enumerate(l->dims))
    if (step != 0)
      out.terms.push_back(
          {d == 0 ? IndexTerm::Var::Channel : IndexTerm::Var::Loop,
           unsigned(d == 0 ? 0 : d - 1),
           {},
           step});
  for (auto [s, step] : llvm::enumerate(l->syms))
    if (step != 0)
      out.terms.push_back({IndexTerm::Var::Param, 0,
                           cast<FlatSymbolRefAttr>(index.getParams()[s]),
                           step});
  return out;
}

Attribute pimc::pim::buildIndex(AffineExpr expr,
                                ArrayRef<FlatSymbolRefAttr> params) {
  MLIRContext *ctx = expr.getContext();
  unsigned numDims = 0;
  expr.walk([&](AffineExpr e) {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      numDims = std::max(numDims, d.getPosition() + 1);
  });
  Linear l;
  l.dims.assign(numDims, 0);
  l.syms.assign(params.size(), 0);
  std::string error;
  if (failed(linearize(expr, 1, l, error)))
    llvm::report_fatal_error("pim::buildIndex: " + Twine(error));
  // Only the variables with a step: trailing unused dims and unused
  // parameters are dropped, the parameters renumbered in order.
  AffineExpr result = getAffineConstantExpr(l.constant, ctx);
  unsigned usedDims = 0;
  for (auto [d, step] : llvm::enumerate(l.dims))
    if (step != 0) {
      result = result + getAffineDimExpr(d, ctx) * step;
      usedDims = d + 1;
    }
  SmallVector<Attribute> bound;
  for (auto [s, step] : llvm::enumerate(l.syms))
    if (step != 0) {
      result = result + getAffineSymbolExpr(bound.size(), ctx) * step;
      bound.push_back(params[s]);
    }
  if (usedDims == 0 && bound.empty())
    return IntegerAttr::get(IntegerType::get(ctx, 64), l.constant);
  return IndexAttr::get(ctx, AffineMap::get(usedDims, bound.size(), result),
                        ArrayAttr::get(ctx, bound));
}

unsigned pimc::pim::loopDepth(Operation *op) {
  unsigned depth = 0;
  for (Operation *p = op->getParentOp(); p && !isa<StreamOp>(p);
       p = p->getParentOp())
    depth += isa<LoopOp>(p);
  return depth;
}
