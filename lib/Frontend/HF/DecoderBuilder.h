//===- DecoderBuilder.h - the HF importer's model builder -----*- C++ -*-===//
//
// Internal to lib/Frontend/HF: builds the llm decode step of any family of
// the registry from ModelConfig's features. HFImporter.cpp holds the
// common decoder (embedding, attention, MLP, MoE, MLA), RecurrentMixers.cpp
// the hybrid families' Mamba and DeltaNet mixers.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_FRONTEND_HF_DECODERBUILDER_H
#define PIMC_FRONTEND_HF_DECODERBUILDER_H

#include "pimc/Checkpoint/HFConfig.h"
#include "pimc/Checkpoint/Safetensors.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace pimc::hf::detail {

using namespace ::mlir;
using namespace ::pimc::ckpt;

class DecoderBuilder {
public:
  /// `weights` null: a timing-only model whose tensors take their shapes
  /// from the config and their dtype from its torch_dtype.
  DecoderBuilder(MLIRContext &ctx, const ModelConfig &cfg,
                 const WeightStore *weights, int64_t maxContext)
      : ctx(ctx), cfg(cfg), weights(weights), maxContext(maxContext), b(&ctx) {}

  llvm::Expected<OwningOpRef<ModuleOp>> build();

private:
  /// Checks a stored tensor's presence, dtype and shape (recording
  /// problems); its element type.
  Type checkTensor(StringRef name, ArrayRef<int64_t> shape);
  /// A dense weight: checks name, dtype and shape; records problems.
  Value denseWeight(StringRef name, ArrayRef<int64_t> shape);
  /// A weight read through a derived name (Safetensors.h: row views,
  /// indices, transposes) of a stored tensor already checked.
  Value derivedWeight(StringRef name, ArrayRef<int64_t> shape, Type elem);
  /// Rows [begin, begin + shape[0]) of `tensor` (already checked), as a row
  /// view (rowSliceName) of element type `elem`.
  Value rowPart(StringRef tensor, Type elem, int64_t begin,
                ArrayRef<int64_t> shape);
  /// The gate and up weights [I, H] of a fused [gate; up] tensor [2I, H]
  /// (gate rows first), as row views.
  std::pair<Value, Value> gateUpRows(StringRef tensor, int64_t I);
  struct QKV {
    Value q, k, v; // [T, heads * hd] each
    Value gate;    // attentionOutputGate: [T, heads * hd]
  };
  /// The q, k and v projections of layer prefix `p` over its attention
  /// input x: their own tensors, or rows of the fused qkv tensor.
  QKV projectQKV(StringRef p, Value x);
  /// A projection weight [N, K]: dense, or GPTQ when the config says so, or
  /// the transpose of a Conv1D weight stored [K, N] (conv1dWeights).
  Value projectionWeight(StringRef prefix, int64_t n, int64_t k);
  Type floatType(DType dtype);
  /// The element type of every tensor of a timing-only model.
  Type configFloatType();
  /// A layer's state arguments of the step (and results): its KV cache
  /// when it attends, its recurrent mixer's conv and scan states when it
  /// has one.
  struct LayerState {
    Value cache, conv, recurrent;
  };
  /// How layer `layer` attends and mixes (ModelConfig::layers; uniform
  /// when a hand-built config leaves them out).
  LayerAttention layerKind(int64_t layer) const;
  Value buildLayer(int64_t layer, Value hidden, Value offset, Value length,
                   const LayerState &in, LayerState &out);
  /// The recurrent mixer of layer `layer` over its input x, through its
  /// out_proj (RecurrentMixers.cpp): Mamba-1/2 (MambaConfig) or Gated
  /// DeltaNet (DeltaNetConfig), consuming `in`'s states into `out`'s.
  Value recurrentMixer(int64_t layer, Value x, Value offset,
                       const LayerState &in, LayerState &out);
  Value mamba2(StringRef p, Value x, Value offset, const LayerState &in,
               LayerState &out);
  Value mamba1(StringRef p, Value x, Value offset, const LayerState &in,
               LayerState &out);
  Value deltaNet(StringRef p, Value x, Value offset, const LayerState &in,
                 LayerState &out);
  /// The conv and scan state types of the model's recurrent mixer.
  llm::RecurrentStateType convStateType();
  llm::RecurrentStateType scanStateType();
  /// y = x W^T (+ b) for the weight `name` [n, k] (a derived name of a
  /// checked tensor when `elem` is given).
  Value linear(Value x, StringRef name, int64_t n, int64_t k,
               Value bias = Value(), Type elem = Type());
  /// A projection read as row ranges (Mamba's in_proj, x_proj):
  /// `<prefix>.weight` [rows, k], and `<prefix>.bias` [rows] when biased,
  /// each checked once.
  struct RowsOf {
    std::string weight, bias;
    Type elem, biasElem;
    int64_t k = 0;
  };
  RowsOf rowsOf(StringRef prefix, int64_t rows, int64_t k, bool biased);
  /// x times rows [begin, begin + n) of `t` (plus those rows of its bias).
  Value linearRows(Value x, const RowsOf &t, int64_t begin, int64_t n);
  /// Columns [begin, begin + n) of x [T, *].
  Value columns(Value x, int64_t begin, int64_t n, Location loc);
  /// The attention branch of layer `layer` over its input x, through o_proj
  /// (appending to `cache`, the updated cache in `newCache`).
  Value attention(int64_t layer, Value x, Value offset, Value length,
                  Value cache, Value &newCache);
  /// MLA's attention branch (MLAConfig), in the absorbed form over the
  /// latent cache.
  Value mlaAttention(int64_t layer, Value x, Value offset, Value length,
                     Value cache, Value &newCache);
  /// The cache type of every layer.
  llm::KVCacheType cacheType();
  Value rope(Value x, Value offset, const RopeScaling &r, Location loc);
  /// The family's RMSNorm over the last dimension of `x`.
  Value rmsNorm(Value x, Value weight, Location loc);
  /// LayerNorm over the last dimension of `x` (bias optional).
  Value layerNorm(Value x, Value weight, Value bias, Location loc);
  /// The family's norm (RMSNorm or LayerNorm, NormKind) over the last
  /// dimension (n) of x, with the tensors `<prefix>.weight` (and `.bias`).
  Value norm(Value x, StringRef prefix, int64_t n);
  /// The block norm `name` (BlockNorms) of layer prefix `layer` over x, or x
  /// when the block has no norm there.
  Value blockNorm(StringRef layer, StringRef name, Value x);
  /// LayerNorm of each head of x [T, heads, hd] with its own weight and no
  /// bias: `<prefix>.norms.<h>.weight` (stablelm), or row h of
  /// `<prefix>.weight` [heads, hd] (cohere, qkNormStacked).
  Value perHeadLayerNorm(Value x, StringRef prefix, int64_t heads);
  /// The plain MLP (PlainMlp) of layer prefix `layer` over x.
  Value plainMlp(StringRef layer, Value x);
  /// The routed experts' weights of an MoE block, and their biases.
  struct Experts {
    SmallVector<Value> gates, ups, downs;
    Value gateBias, upBias, downBias; // stacked [E, n]; null: none
  };
  /// The sparse MoE block (MoEConfig) of layer prefix `layer` over x.
  Value moeBlock(StringRef layer, Value x);
  /// Whether the file holds per-expert experts fused in transformers'
  /// in-memory layout (recording the problem).
  bool heldFusedInMemory(StringRef layer, StringRef block);
  /// The experts as save_pretrained writes them, one tensor per expert and
  /// projection.
  Experts perExpertWeights(StringRef block);
  /// Experts fused in one tensor per projection: gpt-oss's interleaved
  /// gate/up columns with biases (MoEConfig::fusedInterleaved), or Llama
  /// 4's concatenated ones (fusedConcatenated).
  Experts fusedExperts(StringRef block);
  /// Experts stacked in one tensor per projection in nn.Linear's layout
  /// (MoEConfig::stackedLinear).
  Experts stackedExperts(StringRef block);
  /// `x * factor` when the feature is set, else x.
  Value scaled(Value x, std::optional<double> factor, Location loc);
  Value softcapped(Value x, std::optional<double> cap, Location loc);

  RankedTensorType act(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  }
  Location loc(const llvm::Twine &name) {
    return NameLoc::get(b.getStringAttr(name));
  }

  MLIRContext &ctx;
  const ModelConfig &cfg;
  const WeightStore *weights;
  int64_t maxContext;
  OpBuilder b;
  std::vector<std::string> problems;
};

} // namespace pimc::hf::detail

#endif // PIMC_FRONTEND_HF_DECODERBUILDER_H
