//===- HostFallback.cpp - outlining llm ops for the host ------------------===//
#include "HostFallback.h"
#include "CostModel.h"
#include "pimc/Conversion/LLMToPIM/Passes.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace pimc;
using namespace pimc::pim::detail;

namespace {

bool isF32Tensor(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && r.getElementType().isF32();
}

/// A value the host function takes or returns as an f32 tensor: an f32
/// tensor, or a recurrent state (its value, of its shape).
bool isHostValue(Type t) {
  return isF32Tensor(t) || isa<llm::RecurrentStateType>(t);
}

/// The type a host value has inside the function.
Type hostType(Type t) {
  if (auto s = dyn_cast<llm::RecurrentStateType>(t))
    return RankedTensorType::get(s.getShape(), s.getElementType());
  return t;
}

/// Multiply-adds of a projection-like op: each weight element once per
/// token row (an estimate for the host's time; MoE counts every expert).
int64_t opFlops(Operation *op) {
  int64_t flops = 0;
  for (Value r : op->getResults())
    if (auto t = dyn_cast<RankedTensorType>(r.getType()))
      flops += 4 * tokenElements(t);
  int64_t rows = 1;
  if (op->getNumOperands() > 0)
    if (auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
        in && in.getRank() > 1)
      rows = tokenElements(in) / std::max<int64_t>(1, in.getShape().back());
  for (Value v : op->getOperands())
    if (auto w = v.getDefiningOp<llm::WeightOp>())
      if (auto t = dyn_cast<ShapedType>(w.getType()); t && t.getRank() == 2)
        flops += 2 * rows * t.getNumElements();
  return flops;
}

/// The function holds the op as the interpreter runs it: without the
/// backend's decisions (pim.dispatch, pim.cost).
void stripBackendAttrs(Operation *op) {
  SmallVector<StringAttr> names;
  for (NamedAttribute a : op->getDiscardableAttrs())
    if (a.getName().getValue().starts_with("pim."))
      names.push_back(a.getName());
  for (StringAttr n : names)
    op->removeDiscardableAttr(n);
}

} // namespace

bool pimc::pim::detail::isMaterializedLazily(Operation *op) {
  return llvm::none_of(op->getResultTypes(), isF32Tensor);
}

bool pimc::pim::detail::becomesHostCall(Operation *op) {
  return isa<llm::LLMDialect>(op->getDialect()) && !hasOwnLowering(op) &&
         !isMaterializedLazily(op);
}

FailureOr<HostCall>
pimc::pim::detail::outlineHostCall(ArrayRef<Operation *> roots, Value tokens,
                                   Value offset,
                                   llvm::function_ref<bool(Value)> inAct) {
  Operation *root = roots.front();
  MLIRContext *ctx = root->getContext();
  Location loc = root->getLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder b = OpBuilder::atBlockEnd(module->getBody());
  auto fn =
      func::FuncOp::create(b, loc, "host", FunctionType::get(ctx, {}, {}));
  Block *body = fn.addEntryBlock();
  OpBuilder fb = OpBuilder::atBlockEnd(body);
  IRMapping map;
  HostCall call;

  std::function<LogicalResult(Value)> materialize =
      [&](Value v) -> LogicalResult {
    if (map.contains(v))
      return success();
    auto arg = [&](HostCall::Arg kind) {
      map.map(v, body->addArgument(hostType(v.getType()), loc));
      call.args.push_back(v);
      call.kinds.push_back(kind);
      return success();
    };
    if (v == offset)
      return arg(HostCall::Arg::Position);
    if (v == tokens)
      return arg(HostCall::Arg::Token);
    if (inAct(v) && isHostValue(v.getType()))
      return arg(HostCall::Arg::Buffer);
    Operation *def = v.getDefiningOp();
    if (!def || def->getNumRegions() != 0 || !isMemoryEffectFree(def))
      return root->emitError()
             << "host fallback: operand of type " << v.getType()
             << " has no value the host can compute"
             << (def ? " (it comes from '" +
                           def->getName().getStringRef().str() + "')"
                     : std::string());
    for (Value o : def->getOperands())
      if (failed(materialize(o)))
        return failure();
    if (auto w = dyn_cast<llm::WeightOp>(def))
      call.weightBytes += weightBytes(w.getType());
    stripBackendAttrs(fb.clone(*def, map));
    return success();
  };
  llvm::SmallPtrSet<Operation *, 8> inRun(roots.begin(), roots.end());
  SmallVector<Value> results;
  for (Operation *op : roots) {
    root = op;
    for (Value o : op->getOperands())
      if (failed(materialize(o)))
        return failure();
    Operation *clone = fb.clone(*op, map);
    stripBackendAttrs(clone);
    // A recurrent op's new state is a plain tensor value in the function.
    for (OpResult r : clone->getResults())
      r.setType(hostType(r.getType()));
    // A result only the run reads stays inside the function.
    for (auto [orig, c] : llvm::zip(op->getResults(), clone->getResults()))
      if (isHostValue(orig.getType()) &&
          llvm::any_of(orig.getUsers(),
                       [&](Operation *u) { return !inRun.contains(u); })) {
        call.results.push_back(orig);
        results.push_back(c);
      }
    call.flops += opFlops(op);
  }
  func::ReturnOp::create(fb, loc, results);
  fn.setFunctionType(FunctionType::get(ctx, body->getArgumentTypes(),
                                       ValueRange(results).getTypes()));
  llvm::raw_string_ostream os(call.text);
  module->print(os);
  return call;
}
