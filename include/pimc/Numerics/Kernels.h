//===- Kernels.h - numeric kernels of the reference interpreter -*- C++ -*-===//
//
// Plain C++ implementations of the numerics every llm op documents
// (specs/llm-architectures.md sections 1 and 3). Activations are f32; weights
// are read in their stored format (f32, f16, bf16, or GPTQ-style integer
// codes) and widened to f32 inside the loop; every reduction accumulates in
// f32. No MLIR here: the interpreter maps ops onto these functions.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_NUMERICS_KERNELS_H
#define PIMC_NUMERICS_KERNELS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pimc::ref {

//===-- Scalar formats ----------------------------------------------------===//
float bf16ToFloat(uint16_t bits);
uint16_t floatToBf16(float value); // round to nearest even, NaN preserved
float f16ToFloat(uint16_t bits);
uint16_t floatToF16(float value); // round to nearest even
/// `value` rounded to bf16 / f16 and widened back: llm.cast to a narrow
/// float (the interpreter, the constant evaluator and the importers' folds).
float roundToBf16(float value);
float roundToF16(float value);

//===-- Weights -----------------------------------------------------------===//
enum class StorageType { F32, F16, BF16 };

/// A dense row-major matrix [rows, cols] in its stored format (not owned).
struct DenseMatrix {
  StorageType storage = StorageType::F32;
  const void *data = nullptr;
  int64_t rows = 0, cols = 0;
};

/// Reads element `i` of a dense buffer as f32.
float loadElement(StorageType storage, const void *data, int64_t i);
/// Widens `count` elements starting at `data` into `out`.
void widenToF32(StorageType storage, const void *data, int64_t count,
                float *out);

/// A quantized [N, K] weight in the interpreter's canonical unpacked form:
/// one unsigned code per element (row-major [N, K]), and per (row, group)
/// a scale and an integer zero point. W[n,k] = scale[n,g] * (q[n,k] -
/// zero[n,g]) with g = k / groupSize, computed in f32.
struct QuantMatrix {
  int64_t rows = 0, cols = 0, groupSize = 0;
  int bits = 4;
  std::vector<uint8_t> codes; // [N, K]
  std::vector<float> scales;  // [N, K / groupSize]
  std::vector<int32_t> zeros; // [N, K / groupSize]
};

/// Unpacks a GPTQ ("gptq" / "gptq_v2") linear: qweight int32 [K*bits/32, N]
/// packed along K LSB first, qzeros int32 [K/G, N*bits/32] packed along N,
/// scales [K/G, N] in `scaleStorage`. `zeroMinusOne` is true for "gptq"
/// (stored zero = z - 1). groupSize == K means one group per row.
llvm::Expected<QuantMatrix>
unpackGptq(const int32_t *qweight, const int32_t *qzeros, const void *scales,
           StorageType scaleStorage, int64_t N, int64_t K, int64_t groupSize,
           int bits, bool zeroMinusOne);

//===-- Linear / embedding -----------------------------------------------===//
/// y[t, n] = sum_k x[t, k] * W[n, k] (+ bias[n]), f32 accumulation.
/// x is [T, K], y is [T, N]; bias may be null. Parallel over N.
void linear(const float *x, int64_t T, const DenseMatrix &w, const float *bias,
            float *y);
/// llm.head_linear: y[t, h, n] = sum_k x[t, h, k] * w[h, n, k], or
/// w[h, k, n] when `transposed`; x [T, heads, K], w widened to f32, y
/// [T, heads, N], f32 sums in increasing k.
void headLinear(const float *x, int64_t T, int64_t heads, int64_t K, int64_t N,
                const float *w, bool transposed, float *y);
void linear(const float *x, int64_t T, const QuantMatrix &w, const float *bias,
            float *y);

/// out[t, :] = table[ids[t], :] widened to f32. Fails, naming the id, when an
/// id is outside [0, rows).
llvm::Error embedding(const DenseMatrix &table, const int64_t *ids, int64_t T,
                      float *out);

//===-- Norms and activations ---------------------------------------------===//
/// RMS norm over the last dimension n of `rows` vectors. Llama style:
/// y = w * (x * rsqrt(mean(x^2) + eps)); Gemma style multiplies by (1 + w).
/// A null `w` gives the weightless L2 norm (Llama 4 QK norm).
void rmsNorm(const float *x, int64_t rows, int64_t n, const float *w, float eps,
             bool gemmaStyle, float *y);

float silu(float x); // x * sigmoid(x)
float sigmoid(float x);
float geluErf(float x);  // 0.5 x (1 + erf(x / sqrt 2))
float geluTanh(float x); // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
/// ONNX Mod: with `fmod`, C fmodf (the sign of x); else the floor remainder
/// x - floor(x / y) y (the sign of y; llm.mod).
float floorOrTruncMod(float x, float y, bool fmod);

/// Numerically stable softmax over each row of [rows, n], in place. A row
/// that is entirely -inf (every key masked) becomes all zeros, not NaN.
void softmaxRows(float *x, int64_t rows, int64_t n);

//===-- Rotary embedding
//---------------------------------------------------===//
struct RopeParams {
  enum class Kind { Default, Linear, Dynamic, Yarn, Llama3, LongRope };
  Kind kind = Kind::Default;
  bool interleaved =
      false;             // false: half-split (HF/NeoX); true: pairs (2j, 2j+1)
  int64_t rotaryDim = 0; // d <= head dim, even; dims >= d pass through
  double theta = 10000.0;
  double factor = 1.0;
  int64_t originalMaxPositionEmbeddings = 0; // llama3, yarn, longrope (L0)
  int64_t maxPositionEmbeddings = 0;         // dynamic; yarn factor fallback
  double lowFreqFactor = 1.0, highFreqFactor = 4.0; // llama3
  double betaFast = 32.0, betaSlow = 1.0;           // yarn
  std::optional<double> attentionFactor;            // yarn override
  std::optional<double> mscale, mscaleAllDim;       // yarn
  bool truncate = true;                             // yarn
  /// longrope: the d/2 per-frequency divisors, short while the sequence
  /// stays within L0, long beyond it; attentionFactor overrides
  /// sqrt(1 + ln(factor) / ln(L0)).
  std::vector<double> shortFactor, longFactor;
};

/// Why `p` is not a valid rotary embedding, or "" when it is: the one place
/// the value rules live (theta and factors positive, rotary_dim positive and
/// even, llama3's band low_freq_factor <= high_freq_factor with an original
/// context, dynamic's and yarn's context). The HF config reader, the
/// llm.rope verifier and the runtime's host-op parser all ask it.
std::string ropeParamsProblem(const RopeParams &p);

/// The d/2 inverse frequencies for a sequence of total length `seqLen`
/// (seqLen matters only for Kind::Dynamic and Kind::LongRope), and the factor
/// that multiplies cos and sin (1 except for YaRN and LongRope). Computed as
/// Hugging Face does, in f32.
void ropeFrequencies(const RopeParams &p, int64_t seqLen,
                     std::vector<float> &invFreq, float &attentionFactor);

/// Rotates x [T, H, headDim] in place; token t sits at position offset + t.
/// The frequencies use the length of the forward call the tokens belong to:
/// max(offset + T, callLength) (Hugging Face: max(position_ids) + 1; a
/// driver that feeds a call's tokens one at a time passes the call's end).
void applyRope(float *x, int64_t T, int64_t H, int64_t headDim, int64_t offset,
               const RopeParams &p, int64_t callLength = 0);

/// Whether a generation step of T tokens after `past` cached ones makes
/// Hugging Face's Phi-3 recompute the whole context (its
/// prepare_inputs_for_generation drops the cache when the sequence first
/// exceeds longrope's L0, so every position is rotated again with the long
/// factors): l0 > 0 and past <= l0 < past + T, past > 0.
bool longRopeRecomputes(int64_t l0, int64_t past, int64_t T);

//===-- Attention
//-----------------------------------------------------------===//
struct AttentionParams {
  float scale = 1.0f;
  bool causal = true;
  int64_t slidingWindow = 0; // 0: none; else key s visible iff s > pos - W
  float logitSoftcap = 0.0f; // 0: none; else S = c * tanh(S / c) before mask
  /// ALiBi: one slope per query head (empty: none). The score of key s is
  /// (q . k + alibiBias(m_h, s)) * scale: the bias before the scale.
  std::vector<float> alibiSlopes;
  /// Attention sinks (gpt-oss): one logit per query head (empty: none). The
  /// softmax of head h runs over its visible scores and sinks[h]; the
  /// sink's weight is dropped, so P[s] = exp(S_s - m) / (exp(z - m) +
  /// sum exp(S - m)), m the maximum of the scores and z.
  std::vector<float> sinks;
  /// Chunked attention (Llama 4): 0 none; else key s visible iff s / C ==
  /// pos / C.
  int64_t chunkSize = 0;
  /// Temperature tuning (Llama 4's NoPE layers): 0 none; else the query at
  /// pos is multiplied by attentionTemperature(pos, floor, scale).
  int64_t temperatureFloorScale = 0;
  float temperatureScale = 0.0f;
};

/// Llama 4's attention temperature at position pos: log1p(floor((pos + 1) /
/// floorScale)) * scale + 1, in f32 as transformers computes it.
float attentionTemperature(int64_t pos, int64_t floorScale, float scale);

/// ALiBi's slopes for `heads` query heads as transformers' Falcon / BLOOM
/// build_alibi_tensor computes them: with n the largest power of two <=
/// heads, m_h = 2^(-8h/n) for h = 1..n, then the remaining heads take the
/// odd powers 2^(-4h/n), h = 1, 3, 5, ...; each an f32 rounded to bf16.
std::vector<float> alibiSlopes(int64_t heads);

/// ALiBi's bias of the key at absolute position `key` for slope m:
/// bf16(m * bf16(key)), as transformers builds the bias tensor (bf16 slopes
/// times the integer positions: a bfloat16 product of the position
/// converted to bfloat16, exact below 257, and the slope).
float alibiBias(float slope, int64_t key);

/// q [T, nh, hd], k [S, nkv, hd], v [S, nkv, hdv] -> out [T, nh, hdv].
/// Query t sits at position S - T + t (queries are the last T positions of
/// the key sequence); query head h reads kv head h / (nh / nkv). Scores,
/// softmax and the weighted sum are f32. Parallel over heads.
void attention(const float *q, const float *k, const float *v, int64_t T,
               int64_t S, int64_t nh, int64_t nkv, int64_t hd, int64_t hdv,
               const AttentionParams &p, float *out);

//===-- Primitive ops of the graph frontends
//-------------------------------===//
/// The k largest (`largest`) or smallest elements of each row along the
/// middle dimension of x viewed as [outer, n, inner], sorted (descending for
/// largest, ascending otherwise); equal values keep index order (lower index
/// first) and NaN orders above every number. values and indices are
/// [outer, k, inner].
void topk(const float *x, int64_t outer, int64_t n, int64_t inner, int64_t k,
          bool largest, float *values, int64_t *indices);

/// Layer norm of each of `rows` rows of n elements: biased variance computed
/// in two passes, y = (x - mean) * (1 / sqrt(var + eps)) (* w) (+ b); null w
/// or b are skipped. All f32.
void layerNorm(const float *x, int64_t rows, int64_t n, const float *w,
               const float *b, float eps, float *y);

/// A linear layer's weight [N, K]: dense or quantized (exactly one set).
struct LinearWeight {
  const DenseMatrix *dense = nullptr;
  const QuantMatrix *quant = nullptr;
  int64_t rows() const { return dense ? dense->rows : quant->rows; }
  int64_t cols() const { return dense ? dense->cols : quant->cols; }
};
void linear(const float *x, int64_t T, const LinearWeight &w, const float *bias,
            float *y);

enum class GateActivation { Silu, Gelu, GeluTanh, ClampedSwiglu };
float gateActivation(GateActivation act, float x);

/// A gated MLP's activation: act(g) * u, or gpt-oss's clamped SwiGLU
/// (u' + 1) * g' * sigmoid(alpha g') with g' = min(g, limit) and u' =
/// clamp(u, -limit, limit), in f32 (llm.moe's description).
struct GatedActivation {
  GateActivation fn = GateActivation::Silu;
  float limit = 0.0f, alpha = 0.0f; // ClampedSwiglu only
  float operator()(float g, float u) const;
};

/// One gated MLP: down(act(gate x + bg, up x + bu)) + bd; gate/up [I, H],
/// down [H, I]; each bias null (none) or [I], [I], [H].
struct ExpertWeights {
  LinearWeight gate, up, down;
  const float *gateBias = nullptr, *upBias = nullptr, *downBias = nullptr;
};
/// The gated MLP `w` on x [T, H] into y [T, H].
void gatedMLP(const float *x, int64_t T, const ExpertWeights &w,
              const GatedActivation &act, float *y);

struct MoEParams {
  int64_t topK = 1;
  bool sigmoidScoring = false; // false: softmax
  bool topkThenScore = false;  // false: score all experts, then top-k
  bool renormalize = false;
  float routedScalingFactor = 1.0f;
  bool weightOnInput = false;
  GatedActivation activation;
  /// DeepSeek's selection (llm.moe's description): a correction bias [E]
  /// added to the scores for choosing only (empty: none), groups of E /
  /// nGroup experts of which the topkGroup best (each the sum of its
  /// groupScoreTopk largest choice scores) are eligible, and an epsilon in
  /// the renormalisation's denominator.
  std::vector<float> correctionBias;
  int64_t nGroup = 1, topkGroup = 1, groupScoreTopk = 1;
  float renormalizeEpsilon = 0.0f;
};

/// The routing of one token: the selected experts (ascending index) and
/// their final weights (after scoring, renormalisation and scaling).
struct MoERoute {
  std::vector<int64_t> experts;
  std::vector<float> weights;
};
/// Routes one token from its router logits [E] per llm.moe's description.
MoERoute routeToken(const float *logits, int64_t E, const MoEParams &p);

/// llm.moe on x [T, H]: router [E, H] (bias [E] or null), `experts` E gated
/// MLPs, `shared` null or the shared expert, `sharedGate` null (the shared
/// expert ungated) or its gate [1, H]: the shared output of token t is
/// scaled by sigmoid(sharedGate x_t) (Qwen2-MoE). y [T, H].
void moe(const float *x, int64_t T, int64_t H, const LinearWeight &router,
         const float *routerBias, llvm::ArrayRef<ExpertWeights> experts,
         const ExpertWeights *shared, const MoEParams &p, float *y,
         const LinearWeight *sharedGate = nullptr);

} // namespace pimc::ref

#endif // PIMC_NUMERICS_KERNELS_H
