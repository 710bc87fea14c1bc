//===- AttentionPatterns.cpp - llm attention over a KV cache to pim -------===//
//
// The attention family: a decode step's llm.kv_cache_append, the
// llm.kv_cache_read of the appended cache and the llm.attention over what
// it read become one pim.attention (append, then attend). The pattern is
// rooted at the append, the first of the three; pim-check-contract has
// checked that every cache is appended once, read once, by one attention.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace pimc;
using namespace pimc::pim;
using namespace pimc::pim::detail;

namespace {

struct CachedAttentionPattern : OpConversionPattern<llm::KVCacheAppendOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::KVCacheAppendOp append, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    llm::KVCacheReadOp read;
    for (Operation *user : append.getResult().getUsers())
      if (auto r = dyn_cast<llm::KVCacheReadOp>(user)) {
        if (read)
          return rewriter.notifyMatchFailure(append, "cache read twice");
        read = r;
      }
    if (!read || !read.getKey().hasOneUse() || !read.getValue().hasOneUse())
      return rewriter.notifyMatchFailure(append, "not read by one attention");
    auto at = dyn_cast<llm::AttentionOp>(*read.getKey().getUsers().begin());
    if (!at || at.getKey() != read.getKey() || at.getValue() != read.getValue())
      return rewriter.notifyMatchFailure(append, "not read by one attention");
    rewriter.setInsertionPoint(at);
    auto pa = AttentionOp::create(
        rewriter, at.getLoc(), at.getType(), append.getType(), at.getQuery(),
        append.getKey(), append.getValue(), append.getCache(), at.getSinks(),
        at.getScaleAttr(), rewriter.getBoolAttr(at.getCausal()),
        at.getSlidingWindowAttr(), at.getLogitSoftcapAttr(),
        at.getAlibiSlopesAttr(), at.getChunkSizeAttr(),
        at.getTemperatureFloorScaleAttr(), at.getTemperatureScaleAttr());
    copyDispatch(at, pa);
    rewriter.replaceOp(at, pa.getResult());
    rewriter.eraseOp(read);
    rewriter.replaceOp(append, pa.getNewCache());
    return success();
  }
};

} // namespace

void pimc::pim::detail::populateAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<CachedAttentionPattern>(patterns.getContext());
}
