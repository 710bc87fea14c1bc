//===- CheckContract.cpp - pim-check-contract -----------------------------===//
//
// What convert-llm-to-pim accepts, checked before it starts (Passes.td).
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "pimc/Conversion/LLMToPIM/Passes.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace pimc::pim {
#define GEN_PASS_DEF_PIMCHECKCONTRACT
#include "pimc/Conversion/LLMToPIM/Passes.h.inc"
} // namespace pimc::pim

using namespace mlir;
using namespace pimc;
using namespace pimc::pim;

bool pimc::pim::isVectorLayerNorm(Operation *op) {
  auto n = dyn_cast<llm::LayerNormOp>(op);
  if (!n)
    return false;
  auto rank1Weight = [](Value v) {
    auto w = v ? v.getDefiningOp<llm::WeightOp>() : llm::WeightOp();
    return w && cast<ShapedType>(w.getType()).getRank() == 1;
  };
  auto in = dyn_cast<RankedTensorType>(n.getInput().getType());
  return in && n.getNormalizedAxis() == in.getRank() - 1 &&
         rank1Weight(n.getWeight()) &&
         (!n.getBias() || rank1Weight(n.getBias()));
}

/// An add of two activations (the vector unit's `add`); an add of a constant
/// or a weight is a host call, which holds the constant.
static bool isActivationAdd(Operation *op) {
  auto add = dyn_cast<llm::AddOp>(op);
  auto isStored = [](Value v) {
    return v.getDefiningOp<arith::ConstantOp>() ||
           v.getDefiningOp<llm::WeightOp>();
  };
  return add && !isStored(add.getLhs()) && !isStored(add.getRhs());
}

/// A one-token MoE the PIM units take (docs/backend.md, "MoE on PIM").
static bool isPIMMoE(Operation *op) {
  auto moe = dyn_cast<llm::MoEOp>(op);
  return moe && !dispatchedToHost(op) && pim::detail::moeMapsToPIM(moe);
}

bool pimc::pim::hasOwnLowering(Operation *op) {
  return isVectorLayerNorm(op) || isActivationAdd(op) || isPIMMoE(op) ||
         isa<arith::ConstantOp, arith::AddIOp, tensor::DimOp, func::ReturnOp,
             llm::WeightOp, llm::EmbeddingOp, llm::RMSNormOp, llm::LinearOp,
             llm::LMHeadOp, llm::GatedMLPOp, llm::ReshapeOp, llm::RopeOp,
             llm::KVCacheAppendOp, llm::KVCacheReadOp, llm::AttentionOp,
             llm::SliceOp, llm::GeluOp>(op);
}

bool pimc::pim::isLowerableOp(Operation *op) {
  // Every other llm op runs on the host (HostFallback.h).
  return hasOwnLowering(op) || isa<llm::LLMDialect>(op->getDialect());
}

/// One token (an integer tensor of one element).
static bool isOneInteger(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && r.hasStaticShape() && r.getNumElements() == 1 &&
         isa<IntegerType>(r.getElementType());
}

bool pimc::pim::isStateStep(func::FuncOp forward) {
  FunctionType type = forward.getFunctionType();
  if (type.getNumInputs() < 2 || !isOneInteger(type.getInput(0)) ||
      !(isOneInteger(type.getInput(1)) || type.getInput(1).isIndex()) ||
      type.getNumResults() != type.getNumInputs() - 1)
    return false;
  for (unsigned i = 2; i < type.getNumInputs(); ++i) {
    auto state = dyn_cast<RankedTensorType>(type.getInput(i));
    if (!state || !state.hasStaticShape() || !state.getElementType().isF32() ||
        type.getResult(i - 1) != state)
      return false;
  }
  return true;
}

namespace {

/// The backend contract: @forward is a language model's step, as the HF
/// importer writes it (token ids, their offset, one KV cache per layer;
/// logits first), with an embedding and a vocabulary head. A graph from the
/// FX or ONNX importers (plain tensors in and out) is not, and would
/// otherwise fail deep inside the lowering.
LogicalResult checkDecodeContract(func::FuncOp forward) {
  FunctionType type = forward.getFunctionType();
  auto describe = [&] {
    std::string s;
    llvm::raw_string_ostream os(s);
    llvm::interleaveComma(type.getInputs(), os);
    return s;
  };
  auto tokens = type.getNumInputs() > 0
                    ? dyn_cast<RankedTensorType>(type.getInput(0))
                    : RankedTensorType();
  bool ok = tokens && tokens.getRank() == 1 &&
            tokens.getElementType().isInteger() && type.getNumInputs() >= 2 &&
            type.getInput(1).isIndex();
  for (Type t :
       type.getInputs().drop_front(std::min<size_t>(2, type.getNumInputs())))
    ok &= isa<llm::KVCacheType, llm::RecurrentStateType>(t);
  bool hasEmbedding = false, hasHead = false;
  forward.walk([&](Operation *op) {
    hasEmbedding |= isa<llm::EmbeddingOp>(op);
    hasHead |= isa<llm::LMHeadOp>(op);
  });
  if (ok && hasEmbedding && hasHead)
    return success();
  if (hasEmbedding && isStateStep(forward))
    return success();
  return forward.emitError()
         << "PIM lowering expects a language model's decode step: "
            "@forward(token ids, offset, one KV cache per attention layer "
            "and the recurrent layers' states) with an "
            "llm.embedding and an llm.lm_head (as the Hugging Face importer "
            "writes it), or a static-cache step (token, position, state "
            "tensors) -> (logits, the updated states); this @forward takes ("
         << describe() << ")"
         << (ok ? (hasEmbedding ? " and has no llm.lm_head"
                                : " and has no llm.embedding")
                : "");
}

/// Every op without a lowering, in one error on the first of them.
LogicalResult checkLowerable(Block &body) {
  std::map<std::string, std::pair<int, Operation *>> unsupported;
  for (Operation &op : body) {
    if (isLowerableOp(&op))
      continue;
    auto &u = unsupported[op.getName().getStringRef().str()];
    if (u.first++ == 0)
      u.second = &op;
  }
  if (unsupported.empty())
    return success();
  std::string list;
  for (auto &[name, u] : unsupported)
    list +=
        llvm::formatv("{0}'{1}' x{2}", list.empty() ? "" : ", ", name, u.first)
            .str();
  unsupported.begin()->second.second->emitError()
      << "PIM lowering does not support: " << list;
  return failure();
}

/// The KV caches as convert-llm-to-pim maps them: each appended once, from
/// a @forward argument; the appended cache read once; what it read used
/// only by one llm.attention (as key and value).
LogicalResult checkCaches(Block &body) {
  for (Operation &op : body) {
    if (auto a = dyn_cast<llm::KVCacheAppendOp>(op)) {
      auto arg = dyn_cast<BlockArgument>(a.getCache());
      if (!arg || arg.getOwner() != &body || !arg.hasOneUse())
        return a.emitError("PIM lowering: each KV cache must be appended "
                           "once, from a function argument");
      int reads = llvm::count_if(a.getResult().getUsers(), [](Operation *u) {
        return isa<llm::KVCacheReadOp>(u);
      });
      if (reads != 1)
        return a.emitError() << "PIM lowering: an appended KV cache must be "
                                "read once, it is read "
                             << reads << " times";
    }
    if (auto r = dyn_cast<llm::KVCacheReadOp>(op))
      if (!r.getCache().getDefiningOp<llm::KVCacheAppendOp>())
        return r.emitError("PIM lowering: KV cache read before append");
    if (auto at = dyn_cast<llm::AttentionOp>(op)) {
      auto key = at.getKey().getDefiningOp<llm::KVCacheReadOp>();
      if (!key || at.getValue().getDefiningOp() != key ||
          !key.getKey().hasOneUse() || !key.getValue().hasOneUse())
        return at.emitError("PIM lowering: attention key and value must come "
                            "from one llm.kv_cache_read that only it uses");
    }
  }
  return success();
}

struct CheckContractPass
    : public pimc::pim::impl::PIMCheckContractBase<CheckContractPass> {
  void runOnOperation() override {
    if (failed(checkBackendContract(getOperation())))
      signalPassFailure();
  }
};

} // namespace

LogicalResult pimc::pim::checkBackendContract(ModuleOp module) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("no func.func @forward to compile");
  if (failed(checkLowerable(forward.getBody().front())))
    return failure();
  if (failed(checkDecodeContract(forward)))
    return failure();
  return checkCaches(forward.getBody().front());
}
