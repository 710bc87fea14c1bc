//===- RopeParams.cpp - an llm.rope op as the reference's RopeParams ------===//
#include "pimc/Dialect/LLM/IR/RopeParams.h"

using namespace mlir;
using namespace pimc;
using namespace pimc::llm;

ref::RopeParams pimc::llm::ropeParamsOf(RopeOp op) {
  using ref::RopeParams;
  RopeParams p;
  switch (op.getKind()) {
  case RopeKind::Default:
    p.kind = RopeParams::Kind::Default;
    break;
  case RopeKind::Linear:
    p.kind = RopeParams::Kind::Linear;
    break;
  case RopeKind::Dynamic:
    p.kind = RopeParams::Kind::Dynamic;
    break;
  case RopeKind::Yarn:
    p.kind = RopeParams::Kind::Yarn;
    break;
  case RopeKind::Llama3:
    p.kind = RopeParams::Kind::Llama3;
    break;
  case RopeKind::LongRope:
    p.kind = RopeParams::Kind::LongRope;
    break;
  }
  p.interleaved = op.getLayout() == RopeLayout::Interleaved;
  p.rotaryDim = op.getRotaryDim();
  p.theta = op.getTheta().convertToDouble();
  auto d = [](std::optional<APFloat> v, double dflt) {
    return v ? v->convertToDouble() : dflt;
  };
  p.factor = d(op.getFactor(), p.kind == RopeParams::Kind::Yarn ? 0.0 : 1.0);
  p.originalMaxPositionEmbeddings =
      op.getOriginalMaxPositionEmbeddings().value_or(0);
  p.maxPositionEmbeddings = op.getMaxPositionEmbeddings().value_or(0);
  p.lowFreqFactor = d(op.getLowFreqFactor(), p.lowFreqFactor);
  p.highFreqFactor = d(op.getHighFreqFactor(), p.highFreqFactor);
  p.betaFast = d(op.getBetaFast(), p.betaFast);
  p.betaSlow = d(op.getBetaSlow(), p.betaSlow);
  if (auto a = op.getAttentionFactor())
    p.attentionFactor = a->convertToDouble();
  if (auto m = op.getMscale())
    p.mscale = m->convertToDouble();
  if (auto m = op.getMscaleAllDim())
    p.mscaleAllDim = m->convertToDouble();
  p.truncate = op.getTruncate().value_or(true);
  if (auto f = op.getShortFactor())
    p.shortFactor.assign(f->begin(), f->end());
  if (auto f = op.getLongFactor())
    p.longFactor.assign(f->begin(), f->end());
  return p;
}
