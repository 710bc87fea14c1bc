//===- RaiseRope.cpp - x*cos + rotate_half(x)*sin -> llm.rope -------------===//
//
// Rotary embedding as models write it,
//   q * cos + rotate_half(q) * sin,  rotate_half(x) = cat(-x2, x1)  (HF), or
//   q * cos + rotate_every_two(q) * sin  (GPT-J / Meta, interleaved pairs),
// with cos/sin computed in the graph from inv_freq and positions, or stored
// as tables (torch.onnx.export folds registered cos/sin buffers into
// initializers, which arrive as constants or llm.weight). The pattern does
// not trust how the tables are spelled: it evaluates them (they depend only
// on constants once the importer has folded arange), recovers theta and the
// position offset from the angle table (or, for stored tables, from the
// angles atan2(sin, cos) advances by per position), and checks every cos/sin
// entry against cos/sin((offset + t) * inv_freq) computed in f32 as llm.rope
// computes it. Anything else is left alone.
//
//===----------------------------------------------------------------------===//
#include "GraphMatch.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"
#include "pimc/Numerics/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace pimc::llm {

namespace {

/// Largest |table - expected| accepted: the f32 rounding of the angle
/// (p * inv_freq, |angle| <= ~T) and of libm cos/sin when the graph computes
/// inv_freq in another order than llm.rope does.
constexpr double kTableTolerance = 1e-4;

RankedTensorType rankedType(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

/// rot = cat(-x[..., d/2:], x[..., :d/2], -1); returns x.
Value matchRotateHalf(Value rot) {
  auto cat = defOp<ConcatOp>(rot);
  auto type = rankedType(rot);
  if (!cat || !type || cat.getInputs().size() != 2 ||
      !isLastAxis(cat.getAxis(), type.getRank()))
    return {};
  int64_t d = type.getShape().back();
  if (d % 2 != 0)
    return {};
  auto neg = defOp<NegOp>(cat.getInputs()[0]);
  if (!neg)
    return {};
  auto hi = defOp<SliceOp>(neg.getInput());
  auto lo = defOp<SliceOp>(cat.getInputs()[1]);
  if (!hi || !lo || hi.getInput() != lo.getInput())
    return {};
  int64_t rank = type.getRank();
  auto isHalf = [&](SliceOp s, int64_t start) {
    return isLastAxis(s.getAxis(), rank) && s.getSize() == d / 2 &&
           (s.getStart() == start || s.getStart() == start - d);
  };
  if (!isHalf(hi, d / 2) || !isHalf(lo, 0))
    return {};
  return lo.getInput();
}

/// True if `indices` is the constant arithmetic sequence start, start + 2,
/// ... of length n.
bool isStrided(Value indices, int64_t start, int64_t n) {
  std::optional<ConstTensor> c = evaluateConstant(indices);
  if (!c || c->numElements() != n)
    return false;
  for (int64_t i = 0; i < n; ++i)
    if (c->data[i] != static_cast<double>(start + 2 * i))
      return false;
  return true;
}

/// x[..., start::2] as the FX importer spells a strided slice: a gather of
/// the constant positions along the last axis.
Value matchEveryOther(Value v, int64_t start, int64_t d) {
  auto g = defOp<GatherOp>(v);
  if (!g)
    return {};
  auto in = rankedType(g.getInput());
  if (!in || in.getShape().back() != d ||
      !isLastAxis(g.getAxis(), in.getRank()) ||
      !isStrided(g.getIndices(), start, d / 2))
    return {};
  return g.getInput();
}

/// rot = stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2) (GPT-J's
/// rotate_every_two); returns x. The stack is a concat of [..., d/2, 1]
/// views along a new last axis, the flatten a reshape.
Value matchRotateEveryTwo(Value rot) {
  auto type = rankedType(rot);
  auto flat = defOp<ReshapeOp>(rot);
  if (!type || !flat)
    return {};
  int64_t d = type.getShape().back();
  auto cat = defOp<ConcatOp>(flat.getInput());
  auto ct = cat ? rankedType(cat.getResult()) : RankedTensorType();
  if (!cat || d % 2 != 0 || cat.getInputs().size() != 2 ||
      ct.getRank() != type.getRank() + 1 ||
      !isLastAxis(cat.getAxis(), ct.getRank()) || ct.getShape().back() != 2 ||
      ct.getDimSize(ct.getRank() - 2) != d / 2)
    return {};
  // Drops the [..., d/2] -> [..., d/2, 1] view; the negation may sit on
  // either side of it.
  auto unview = [](Value v) -> Value {
    if (auto r = defOp<ReshapeOp>(v))
      return r.getInput();
    return v;
  };
  Value odd = unview(cat.getInputs()[0]);
  auto neg = defOp<NegOp>(odd);
  if (!neg) {
    if (auto n2 = defOp<NegOp>(cat.getInputs()[0]))
      odd = unview(n2.getInput());
    else
      return {};
  } else {
    odd = neg.getInput();
  }
  Value x1 = matchEveryOther(odd, 1, d);
  Value x0 = matchEveryOther(unview(cat.getInputs()[1]), 0, d);
  if (!x0 || x0 != x1 || x0.getType() != rot.getType())
    return {};
  return x0;
}

/// The llm.cos / llm.sin feeding a table through layout-only ops.
template <typename OpTy> OpTy findTrig(Value v) {
  for (int depth = 0; v && depth < 16; ++depth) {
    if (auto op = defOp<OpTy>(v))
      return op;
    // YaRN's cos * attention_scaling: the angles sit behind the scale (the
    // tables themselves, scale included, are what the caller checks).
    if (auto mul = defOp<MulOp>(v)) {
      if (evaluateConstant(mul.getRhs()))
        v = mul.getLhs();
      else if (evaluateConstant(mul.getLhs()))
        v = mul.getRhs();
      else
        return {};
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (!def || def->getNumOperands() < 1 ||
        !isa<BroadcastOp, ReshapeOp, TransposeOp, SliceOp, GatherOp, CastOp,
             ConcatOp, ScaleOp>(def))
      return {};
    v = def->getOperand(0);
  }
  return {};
}

/// The inverse frequencies llm.rope uses for `params` (the reference
/// kernels' own computation, so a match is a match with the interpreter).
std::vector<float> ropeInvFreq(const ref::RopeParams &params, int64_t seqLen,
                               float &attentionFactor) {
  std::vector<float> inv;
  attentionFactor = 1.0f;
  ref::ropeFrequencies(params, seqLen, inv, attentionFactor);
  return inv;
}

/// Whether an angle table of width d repeats each frequency in place
/// (columns 2i, 2i + 1) rather than as cat(freqs, freqs) (columns i and
/// i + d/2). Interleaved pairs usually come with in-place angles, but a
/// graph may compute cat(freqs, freqs) and repeat-interleave the cos/sin
/// afterwards (GLM): the table says which; `layout` breaks ties.
bool inPlaceAngles(const ConstTensor &x, int64_t d, RopeLayout layout) {
  int64_t width = x.shape.empty() ? 0 : x.shape.back();
  bool preferred = layout == RopeLayout::Interleaved;
  if (width != d || d < 2)
    return false;
  auto holds = [&](bool inPlace) {
    for (int64_t r = 0; r < x.numElements() / width; ++r)
      for (int64_t i = 0; i < d / 2; ++i) {
        const double *row = x.data.data() + r * width;
        if (inPlace ? row[2 * i] != row[2 * i + 1] : row[i] != row[i + d / 2])
          return false;
      }
    return true;
  };
  return holds(preferred)    ? preferred
         : holds(!preferred) ? !preferred
                             : preferred;
}

/// What the angle table says about the rope: base, first position and
/// linear position scaling (HF's "linear" rope_scaling divides inv_freq by
/// `factor`).
struct RopeEstimate {
  double theta;
  int64_t offset;
  double factor;
};

/// Theta, offset and linear factor read off an angle table whose last dim
/// holds p * inv_freq[j] (j < d/2, possibly repeated as cat(freqs, freqs)
/// or in place). Column 0 is p / factor (inv_freq[0] = 1 / factor), the
/// ratio of the last column to it is theta^(-(d-2)/d).
std::optional<RopeEstimate> estimateRope(const ConstTensor &x, int64_t d,
                                         RopeLayout layout) {
  int64_t width = x.shape.empty() ? 0 : x.shape.back();
  if ((width != d && width != d / 2) || d < 4)
    return std::nullopt;
  // Column holding the last frequency d/2 - 1: duplicated in place
  // (interleaved) or as cat(freqs, freqs) (half-split) when width = d.
  int64_t m = d / 2 - 1;
  int64_t col = inPlaceAngles(x, d, layout) ? 2 * m : m;
  int64_t rows = x.numElements() / width;
  double theta = 0;
  std::vector<double> firsts;
  for (int64_t r = 0; r < rows; ++r) {
    double p = x.data[r * width];
    firsts.push_back(p);
    if (p != 0 && theta == 0) {
      double f = x.data[r * width + col] / p;
      if (!(f > 0 && f < 1))
        return std::nullopt;
      theta = std::pow(f, -static_cast<double>(d) / (2.0 * m));
    }
  }
  if (theta <= 1 || !std::isfinite(theta))
    return std::nullopt;
  // Rope bases are integers in practice; snap the f32-rounded estimate.
  double rounded = std::round(theta);
  if (std::fabs(rounded - theta) <= 1e-3 * theta)
    theta = rounded;
  // Positions step by one: the step between distinct first-column values
  // is 1 / factor.
  llvm::sort(firsts);
  firsts.erase(std::unique(firsts.begin(), firsts.end()), firsts.end());
  double factor = 1.0;
  if (firsts.size() > 1) {
    factor = 1.0 / (firsts[1] - firsts[0]);
    double nice = std::round(factor * 4) / 4;
    if (std::fabs(nice - factor) <= 1e-3 * factor)
      factor = nice;
  }
  if (!(factor > 0) || !std::isfinite(factor))
    return std::nullopt;
  double offset = firsts.front() * factor;
  if (offset < -1e-3 || std::fabs(offset - std::round(offset)) > 1e-3)
    return std::nullopt;
  return RopeEstimate{theta, static_cast<int64_t>(std::round(offset)), factor};
}

/// The per-dimension frequencies f_i = angle / position (i < d/2) of an
/// angle table, read off its row with the largest position p (the
/// best-resolved).
struct TableFrequencies {
  double position;
  std::vector<double> f;
};

/// The frequencies f_i = angle_i / p of the angle table `x` ([.., d] or
/// [.., d/2] columns in `layout`) at its largest position p, which must be
/// an integer >= `offset`. Column 0 holds p / `factor` (inv_freq[0] is
/// 1 / factor: 1 for every kind but linear).
std::optional<TableFrequencies> tableFrequencies(const ConstTensor &x,
                                                 int64_t d, RopeLayout layout,
                                                 int64_t offset,
                                                 double factor = 1.0) {
  int64_t width = x.shape.empty() ? 0 : x.shape.back();
  if ((width != d && width != d / 2) || d < 2)
    return std::nullopt;
  int64_t half = d / 2, rows = x.numElements() / width;
  bool inPlace = inPlaceAngles(x, d, layout);
  auto colOf = [&](int64_t i) { return inPlace ? 2 * i : i; };
  int64_t best = -1;
  for (int64_t r = 0; r < rows; ++r)
    if (x.data[r * width] > 0 &&
        (best < 0 || x.data[r * width] > x.data[best * width]))
      best = r;
  if (best < 0)
    return std::nullopt;
  double p = x.data[best * width] * factor;
  if (std::fabs(p - std::round(p)) > 1e-3 || std::round(p) < offset)
    return std::nullopt;
  TableFrequencies t{p, std::vector<double>(half)};
  for (int64_t i = 0; i < half; ++i)
    t.f[i] = x.data[best * width + colOf(i)] / p;
  return t;
}

/// Positions over which a rope raised from a table computed in the graph
/// must agree with the graph: every position of a model with up to 2^20
/// tokens of context.
constexpr double kPositionRange = 1 << 20;

/// True if a kind's frequencies `invFreq` reproduce the graph's angle table
/// `t` at every position p < kPositionRange, not only at the traced ones:
/// the angles p * f and p * invFreq drift apart by at most kTableTolerance
/// plus f32 rounding of the frequency (2^-18 relative: the graph and the
/// reference kernels may compute the same formula in another order). A
/// table is p * f exactly (the graph multiplies positions by constant
/// frequencies), so comparing the frequencies is evaluating the table over
/// the whole range; f is read at the largest traced position, where the f32
/// angle pins it best.
bool holdsOverPositionRange(const TableFrequencies &t,
                            const std::vector<float> &invFreq) {
  if (invFreq.size() != t.f.size())
    return false;
  for (size_t i = 0; i < t.f.size(); ++i) {
    double drift = kPositionRange * std::fabs(t.f[i] - invFreq[i]);
    double rounding = kPositionRange * std::fabs(invFreq[i]) * 0x1p-18;
    if (!(drift <= kTableTolerance + rounding))
      return false;
  }
  return true;
}

/// Candidate llama3 parameters for an angle table whose frequencies
/// f_i = angle / position are theta^(-2i/d) for the high frequencies, that
/// divided by `factor` for the low ones and blended in between. theta comes
/// from the second frequency, factor from the lowest; low/high_freq_factor
/// are taken as Llama 3.x's 1 and 4 and original_max_position_embeddings
/// is solved from the blended frequencies (or, without any, the smallest
/// power of two that separates the bands). The caller checks the whole
/// table against these parameters.
std::optional<ref::RopeParams> estimateLlama3(const ConstTensor &x, int64_t d,
                                              RopeLayout layout,
                                              int64_t offset) {
  if (d < 8)
    return std::nullopt;
  std::optional<TableFrequencies> freqs =
      tableFrequencies(x, d, layout, offset);
  if (!freqs)
    return std::nullopt;
  const std::vector<double> &f = freqs->f;
  int64_t half = d / 2;
  if (!(f[1] > 0 && f[1] < 1))
    return std::nullopt;
  ref::RopeParams params;
  params.kind = ref::RopeParams::Kind::Llama3;
  params.rotaryDim = d;
  params.interleaved = layout == RopeLayout::Interleaved;
  params.theta = std::round(std::pow(f[1], -static_cast<double>(d) / 2.0));
  params.lowFreqFactor = 1.0;
  params.highFreqFactor = 4.0;
  std::vector<double> def(half), ratio(half);
  for (int64_t i = 0; i < half; ++i) {
    def[i] = std::pow(params.theta, -2.0 * i / d);
    ratio[i] = def[i] / f[i];
  }
  double factor = *std::max_element(ratio.begin(), ratio.end());
  factor = std::round(factor * 4) / 4;
  if (factor <= 1.0)
    return std::nullopt;
  params.factor = factor;
  const double twoPi = 2.0 * 3.14159265358979323846;
  // Blended: s = (L0 / wavelen - low) / (high - low) from
  // f = ((1 - s) / factor + s) * def.
  std::vector<double> l0s;
  double maxHigh = 0, minLow = INFINITY;
  for (int64_t i = 0; i < half; ++i) {
    double wavelen = twoPi / def[i];
    if (std::fabs(ratio[i] - 1.0) < 1e-4) {
      maxHigh = std::max(maxHigh, wavelen);
    } else if (std::fabs(ratio[i] - factor) < 1e-4 * factor) {
      minLow = std::min(minLow, wavelen);
    } else {
      double smooth = (1.0 / ratio[i] - 1.0 / factor) / (1.0 - 1.0 / factor);
      l0s.push_back(wavelen * (3.0 * smooth + 1.0));
    }
  }
  double l0 = 0;
  if (!l0s.empty()) {
    for (double v : l0s)
      l0 += v;
    l0 = std::round(l0 / l0s.size());
  } else {
    // Bands: high wavelens < L0 / 4, low wavelens > L0.
    for (double cand = 1024; cand <= (1 << 24); cand *= 2)
      if (maxHigh < cand / 4 && cand < minLow) {
        l0 = cand;
        break;
      }
  }
  if (l0 <= 0)
    return std::nullopt;
  params.originalMaxPositionEmbeddings = static_cast<int64_t>(l0);
  return params;
}

/// Layout of the rotated operand: which axis is the sequence and which the
/// heads, in [1, h, T, d], [1, T, h, d], [T, h, d] or [h, T, d].
struct RopeLayoutGuess {
  int64_t seqAxis;
};

/// The angle table [T, d] behind stored cos/sin tables (right-aligned with
/// `xShape`, sequence along `seqAxis` of x): each column's angle advances by
/// its frequency per position, read as the unwrapped atan2(sin, cos) over
/// the T rows (frequencies are at most 1 < pi per step, so the step is
/// unambiguous), and the first row gives the offset through the lowest
/// frequency. Returns (offset + t) * step[j], the form estimateRope reads;
/// the caller checks the tables entry by entry against the estimate.
std::optional<ConstTensor> anglesFromTables(const ConstTensor &c,
                                            const ConstTensor &s,
                                            ArrayRef<int64_t> xShape,
                                            int64_t seqAxis) {
  int64_t rank = c.shape.size();
  int64_t lead = static_cast<int64_t>(xShape.size()) - rank;
  int64_t seq = seqAxis - lead;
  if (c.shape != s.shape || lead < 0 || seq < 0 || seq >= rank - 1 || rank < 2)
    return std::nullopt;
  int64_t T = c.shape[seq], d = c.shape.back();
  if (T < 2 || T != xShape[seqAxis] || d != xShape.back())
    return std::nullopt;
  int64_t stride = 1;
  for (int64_t a = rank - 1; a > seq; --a)
    stride *= c.shape[a];
  const double pi = 3.14159265358979323846;
  auto rawAngle = [&](int64_t t, int64_t j) {
    int64_t i = t * stride + j;
    return std::atan2(s.data[i], c.data[i]);
  };
  std::vector<double> step(d), first(d);
  for (int64_t j = 0; j < d; ++j) {
    double prev = rawAngle(0, j), total = 0;
    for (int64_t t = 1; t < T; ++t) {
      double cur = rawAngle(t, j);
      double delta = std::remainder(cur - prev, 2 * pi);
      total += delta;
      prev = cur;
    }
    step[j] = total / (T - 1);
    // First angle in [0, 2 pi); f32 noise around 0 is 0.
    double a0 = rawAngle(0, j);
    if (a0 < 0)
      a0 = a0 > -1e-6 ? 0 : a0 + 2 * pi;
    first[j] = a0;
  }
  int64_t low = 0;
  for (int64_t j = 1; j < d; ++j)
    if (step[j] > 0 && (step[low] <= 0 || step[j] < step[low]))
      low = j;
  if (!(step[low] > 0))
    return std::nullopt;
  double offset = std::round(first[low] / step[low]);
  ConstTensor angles;
  angles.shape = {T, d};
  angles.data.resize(T * d);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < d; ++j)
      angles.data[t * d + j] = (offset + t) * step[j];
  return angles;
}

/// True if `table` (the operand's table before its final broadcast, so
/// right-aligned with the `xShape` it multiplies) is
/// `fn((offset + t) * inv_freq[j mod d/2]) * scale` along the sequence axis of
/// `layout`, constant over every other axis. The table must not be
/// broadcast along the sequence (that would give every token one angle).
bool tableMatches(const ConstTensor &table, ArrayRef<int64_t> xShape,
                  RopeLayoutGuess layout, RopeLayout pairs,
                  const std::vector<float> &invFreq, float scale,
                  int64_t offset, float (*fn)(float)) {
  int64_t rank = table.shape.size(), d = table.shape.back();
  int64_t lead = static_cast<int64_t>(xShape.size()) - rank;
  int64_t seq = layout.seqAxis - lead;
  int64_t T = xShape[layout.seqAxis];
  if (lead < 0 || d != xShape.back() ||
      (T > 1 && (seq < 0 || table.shape[seq] != T)))
    return false;
  SmallVector<int64_t> idx(rank, 0);
  for (int64_t i = 0, n = table.numElements(); i < n; ++i) {
    int64_t rem = i;
    for (int64_t a = rank - 1; a >= 0; --a) {
      idx[a] = rem % table.shape[a];
      rem /= table.shape[a];
    }
    float pos = static_cast<float>(offset + (seq >= 0 ? idx[seq] : 0));
    int64_t j = idx[rank - 1];
    int64_t freq = pairs == RopeLayout::Interleaved ? j / 2 : j % (d / 2);
    float want = fn(pos * invFreq[freq]) * scale;
    if (std::fabs(table.data[i] - want) > kTableTolerance)
      return false;
  }
  return true;
}

float cosf32(float x) { return std::cos(x); }
float sinf32(float x) { return std::sin(x); }

/// A recognised rotary embedding: `x` rotated by a default rope of `theta`
/// at positions offset + t along `layout.seqAxis`, with `pairs`.
struct RopeMatch {
  Value x;
  RopeLayout pairs;
  ref::RopeParams params;
  int64_t offset;
  RopeLayoutGuess layout;
};

/// The mean sqrt(cos^2 + sin^2) of two tables of the same size: the factor
/// that scales both (YaRN's and longrope's attention factor).
double tableAmplitude(const ConstTensor &cosT, const ConstTensor &sinT) {
  double amp = 0;
  for (int64_t i = 0, n = cosT.numElements(); i < n; ++i)
    amp += std::hypot(cosT.data[i], sinT.data[i]);
  return amp / static_cast<double>(cosT.numElements());
}

/// HF's get_mscale: the attention factor 0.1 * m * ln(s) + 1 of a YaRN
/// factor s (1 for s <= 1).
double yarnMscaleOf(double s, double m) {
  return s <= 1.0 ? 1.0 : 0.1 * m * std::log(s) + 1.0;
}

/// `v` rounded to `digits` significant digits.
double roundSignificant(double v, int digits) {
  if (v == 0 || !std::isfinite(v))
    return v;
  double scale = std::pow(10.0, digits - 1 - std::floor(std::log10(v)));
  return std::round(v * scale) / scale;
}

/// YaRN (DeepSeek-V2/V3, Qwen2.5 long context, gpt-oss): inv_freq_i =
/// theta_i * (1 - r_i + r_i / s), theta_i = theta^(-2i/d), with the ramp
/// r_i = clamp((i - lo) / (hi - lo), 0, 1) between the correction dims
/// lo = corr(beta_fast), hi = corr(beta_slow) (floored / ceiled when
/// `truncate`), corr(r) = d ln(L0 / (2 pi r)) / (2 ln theta), and cos and
/// sin scaled by the attention factor. Candidate parameter sets are read
/// off the angle table `x` (frequencies f_i = angle / position) and the
/// tables' amplitude sqrt(cos^2 + sin^2); each candidate whose frequencies
/// are close is handed to `accept`, which checks every table entry against
/// the reference kernels. Returns the first accepted match.
std::optional<RopeMatch> estimateYarn(
    const ConstTensor &x, const ConstTensor &cosT, const ConstTensor &sinT,
    int64_t d, RopeLayout layout, int64_t offset,
    llvm::function_ref<std::optional<RopeMatch>(const ref::RopeParams &)>
        accept) {
  if (d < 8 || cosT.numElements() != sinT.numElements() ||
      cosT.numElements() == 0)
    return std::nullopt;
  std::optional<TableFrequencies> freqs =
      tableFrequencies(x, d, layout, offset);
  if (!freqs)
    return std::nullopt;
  const std::vector<double> &f = freqs->f;
  double p = freqs->position;
  int64_t half = d / 2;
  for (int64_t i = 0; i < half; ++i)
    if (!(f[i] > 0))
      return std::nullopt;
  // The highest frequency is never scaled (the ramp starts at lo >= 0).
  if (std::fabs(f[0] - 1.0) > 1e-3)
    return std::nullopt;
  // Amplitude of the tables: the attention factor when it scales both.
  double amp = tableAmplitude(cosT, sinT);

  // theta from a ratio of neighbouring frequencies where the ramp is flat:
  // the head (unscaled, when lo >= 1) or the tail (fully interpolated, when
  // hi <= d/2 - 2); rope bases are round numbers.
  std::vector<double> thetas;
  auto addTheta = [&](double raw) {
    if (!(raw > 1) || !std::isfinite(raw))
      return;
    // The roundest value near the estimate first.
    for (auto [c, tol] : {std::pair{roundSignificant(raw, 2), 1e-3},
                          std::pair{roundSignificant(raw, 3), 1e-3},
                          std::pair{std::round(raw), 2e-2}})
      if (c > 1 && std::fabs(c - raw) <= tol * raw &&
          llvm::find(thetas, c) == thetas.end())
        thetas.push_back(c);
  };
  for (int64_t i : {int64_t(0), int64_t(1), half - 3, half - 2})
    if (i >= 0 && i + 1 < half)
      addTheta(std::pow(f[i + 1] / f[i], -static_cast<double>(d) / 2.0));

  const double twoPi = 2.0 * 3.14159265358979323846;
  // Cheap screen before the full table check: the frequencies and the
  // amplitude agree with the reference kernels' to well within what the
  // table check accepts.
  auto close = [&](const ref::RopeParams &params) {
    float af = 1.0f;
    std::vector<float> inv = ropeInvFreq(params, 0, af);
    if (static_cast<int64_t>(inv.size()) != half || std::fabs(af - amp) > 1e-3)
      return false;
    for (int64_t i = 0; i < half; ++i)
      if (std::fabs(inv[i] - f[i]) * p > 1e-3)
        return false;
    return true;
  };
  std::vector<double> pow2L0;
  for (int64_t l0 = 16; l0 <= (int64_t(1) << 24); l0 *= 2)
    pow2L0.push_back(static_cast<double>(l0));

  for (double theta : thetas) {
    const double k = 2.0 * std::log(theta) / static_cast<double>(d);
    std::vector<double> g(half);
    double gmin = 1.0;
    for (int64_t i = 0; i < half; ++i) {
      g[i] = f[i] / std::pow(theta, -2.0 * i / d);
      gmin = std::min(gmin, g[i]);
    }
    // The factor: the lowest frequency's unscaled / scaled when the ramp
    // ends inside the rotary dims, else the one HF's default attention
    // factor 0.1 ln(s) + 1 says.
    std::vector<double> factors;
    auto addFactor = [&](double raw) {
      if (!(raw > 1.0 + 1e-3) || !std::isfinite(raw))
        return;
      for (double c : {std::round(raw * 4) / 4, std::round(raw)})
        if (c > 1 && std::fabs(c - raw) <= 2e-2 * raw &&
            llvm::find(factors, c) == factors.end())
          factors.push_back(c);
    };
    addFactor(1.0 / gmin);
    if (amp > 1.0 + 1e-4)
      addFactor(std::exp((amp - 1.0) * 10.0));

    for (double s : factors) {
      ref::RopeParams base;
      base.kind = ref::RopeParams::Kind::Yarn;
      base.rotaryDim = d;
      base.interleaved = layout == RopeLayout::Interleaved;
      base.theta = theta;
      base.factor = s;
      // HF's default attention factor, else the measured one (the tables
      // only say mscale / mscale_all_dim as their ratio).
      if (std::fabs(amp - yarnMscaleOf(s, 1.0)) > 1e-4)
        base.attentionFactor = roundSignificant(amp, 6);

      auto tryParams =
          [&](const ref::RopeParams &params) -> std::optional<RopeMatch> {
        if (!close(params))
          return std::nullopt;
        return accept(params);
      };

      // The ramp r_i = (1 - g_i) / (1 - 1/s), read as lo and hi.
      std::vector<double> r(half);
      for (int64_t i = 0; i < half; ++i)
        r[i] = (1.0 - g[i]) / (1.0 - 1.0 / s);
      SmallVector<std::pair<double, double>> ramps;
      SmallVector<int64_t> interior;
      for (int64_t i = 0; i < half; ++i)
        if (r[i] > 1e-2 && r[i] < 1 - 1e-2)
          interior.push_back(i);
      const double defaultWidth = std::log(32.0) / k;
      if (interior.size() >= 2) {
        double n = interior.size(), si = 0, sr = 0, sii = 0, sir = 0;
        for (int64_t i : interior) {
          si += i;
          sr += r[i];
          sii += double(i) * i;
          sir += double(i) * r[i];
        }
        double slope = (n * sir - si * sr) / (n * sii - si * si);
        double icpt = (sr - slope * si) / n;
        if (slope > 0)
          ramps.push_back({-icpt / slope, -icpt / slope + 1.0 / slope});
      } else if (interior.size() == 1) {
        int64_t i = interior[0];
        ramps.push_back({double(i - 1), double(i + 1)});
        ramps.push_back(
            {i - r[i] * defaultWidth, i - r[i] * defaultWidth + defaultWidth});
      } else {
        int64_t lastZero = 0;
        for (int64_t i = 0; i < half; ++i)
          if (r[i] < 0.5)
            lastZero = i;
        ramps.push_back({double(lastZero), double(lastZero + 1)});
      }

      // HF's defaults beta_fast 32, beta_slow 1 first: only L0 is free,
      // solved from the ramp's ends or a power of two.
      for (bool truncate : {true, false}) {
        std::vector<double> l0s = pow2L0;
        for (auto [lo, hi] : ramps) {
          if (lo > 0)
            l0s.push_back(std::round(twoPi * 32.0 * std::exp(k * lo)));
          if (hi < d - 1)
            l0s.push_back(std::round(twoPi * std::exp(k * hi)));
        }
        for (double l0 : l0s) {
          if (!(l0 >= 1) || l0 > 1e12)
            continue;
          ref::RopeParams params = base;
          params.truncate = truncate;
          params.originalMaxPositionEmbeddings = static_cast<int64_t>(l0);
          if (std::optional<RopeMatch> m = tryParams(params))
            return m;
        }
      }

      // Other betas, solved from the ramp for each power-of-two L0: beta
      // = L0 / (2 pi) * exp(-k * corr). Without truncation the ends are the
      // correction dims themselves; with it any beta in the interval that
      // floors / ceils to them, a power of two first, else an integer.
      // The table fixes only floor / ceil of the truncated correction dims:
      // the first pass takes the smallest power-of-two L0 with betas >= 1,
      // the second allows fractional betas. Every choice gives the same
      // frequencies.
      auto niceIn = [](double lo, double hi, bool open,
                       double least) -> std::optional<double> {
        // (lo, hi] when `open` at lo, else [lo, hi).
        auto inside = [&](double v) {
          return open ? (v > lo && v <= hi) : (v >= lo && v < hi);
        };
        for (double v = least; v <= 4096; v *= 2)
          if (inside(v))
            return v;
        for (double v = std::max(1.0, std::ceil(lo)); v <= std::min(hi, 1e6);
             v += 1)
          if (inside(v))
            return v;
        return std::nullopt;
      };
      for (double least : {1.0, 1.0 / 64})
        for (auto [lo, hi] : ramps) {
          for (double l0 : pow2L0) {
            double c = l0 / twoPi;
            ref::RopeParams params = base;
            params.originalMaxPositionEmbeddings = static_cast<int64_t>(l0);
            // Not truncated.
            {
              params.truncate = false;
              std::optional<double> bf =
                  lo > 1e-6
                      ? std::optional<double>(c * std::exp(-k * lo))
                      : (c <= 32 ? std::optional<double>(32.0) : std::nullopt);
              std::optional<double> bs =
                  hi < d - 1 - 1e-6
                      ? std::optional<double>(c * std::exp(-k * hi))
                      : std::nullopt;
              if (bf && bs) {
                double nf = std::round(*bf * 4) / 4,
                       ns = std::round(*bs * 4) / 4;
                if (nf > 0 && ns > 0 && std::fabs(nf - *bf) <= 1e-4 * *bf &&
                    std::fabs(ns - *bs) <= 1e-4 * *bs) {
                  params.betaFast = nf;
                  params.betaSlow = ns;
                  if (std::optional<RopeMatch> m = tryParams(params))
                    return m;
                }
              }
            }
            // Truncated: integer ends.
            double loI = std::round(lo), hiI = std::round(hi);
            if (std::fabs(lo - loI) > 0.05 || std::fabs(hi - hiI) > 0.05 ||
                loI < 0 || hiI <= loI)
              continue;
            params.truncate = true;
            // floor(corr(bf)) = loI (any corr(bf) < 1 when loI = 0).
            std::optional<double> bf = niceIn(
                c * std::exp(-k * (loI + 1)),
                loI > 0 ? c * std::exp(-k * loI) : 1e6, /*open=*/true, least);
            // ceil(corr(bs)) = hiI (any corr(bs) > d - 2 when hiI = d - 1).
            std::optional<double> bs =
                niceIn(hiI < d - 1 ? c * std::exp(-k * hiI) : 1.0 / 64,
                       c * std::exp(-k * (hiI - 1)), /*open=*/false, least);
            if (!bf || !bs)
              continue;
            params.betaFast = *bf;
            params.betaSlow = *bs;
            if (std::optional<RopeMatch> m = tryParams(params))
              return m;
          }
        }
    }
  }
  return std::nullopt;
}

/// The select(max(position) + 1 > L0, long, short) of d/2 inverse
/// frequencies behind an angle table (transformers' longrope), with the
/// evaluated branches and L0.
struct LongRopeSelect {
  std::vector<double> shortInv, longInv;
  int64_t l0;
  bool tracedLong; // the traced call took the long branch
};

/// The first llm.select of `n` elements at most `depth` ops above `v`.
SelectOp findSelect(Value v, int64_t n, int depth = 8) {
  Operation *def = v.getDefiningOp();
  if (!def || depth == 0)
    return {};
  if (auto sel = dyn_cast<SelectOp>(def);
      sel && rankedType(sel.getResult()).getNumElements() == n)
    return sel;
  for (Value o : def->getOperands())
    if (SelectOp sel = findSelect(o, n, depth - 1))
      return sel;
  return {};
}

/// The arange 0..T-1 constants and the compare against a constant under a
/// condition.
void conditionLeaves(Value cond, int64_t T, SmallVectorImpl<Value> &aranges,
                     std::optional<double> &bound) {
  SmallVector<Value> work{cond};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto c = defOp<arith::ConstantOp>(v)) {
      std::optional<ConstTensor> t = evaluateConstant(v);
      bool arange = t && t->numElements() == T;
      for (int64_t i = 0; arange && i < T; ++i)
        arange = t->data[i] == static_cast<double>(i);
      if (arange)
        aranges.push_back(v);
      continue;
    }
    if (auto cmp = defOp<CompareOp>(v);
        cmp && cmp.getPredicate() == ComparePredicate::Gt)
      if (std::optional<ConstTensor> r = evaluateConstant(cmp.getRhs());
          r && r->numElements() == 1)
        bound = r->data[0];
    if (Operation *def = v.getDefiningOp())
      llvm::append_range(work, def->getOperands());
  }
}

/// Whether `cond`, as a function of the traced positions, is
/// max(position) + 1 > l0: evaluated with the positions moved to end at q,
/// densely around the switch and at far positions.
bool isLongRopeSwitch(Value cond, ArrayRef<Value> aranges, int64_t T,
                      int64_t l0, const ckpt::WeightStore *weights) {
  SmallVector<int64_t> ends;
  for (int64_t q = std::max(T - 1, l0 - 2 * T); q <= l0 + 2 * T; ++q)
    ends.push_back(q);
  for (int64_t q : {T - 1, 2 * l0, 16 * l0, int64_t(1) << 20})
    ends.push_back(q);
  for (int64_t q : ends) {
    llvm::DenseMap<Value, ConstTensor> bind;
    for (Value a : aranges) {
      ConstTensor t{llvm::to_vector(rankedType(a).getShape()), {}};
      for (int64_t i = 0; i < T; ++i)
        t.data.push_back(static_cast<double>(q - T + 1 + i));
      bind[a] = std::move(t);
    }
    std::optional<ConstTensor> c = evaluateConstant(cond, weights, &bind);
    if (!c || c->numElements() == 0)
      return false;
    for (double v : c->data)
      if ((v != 0) != (q + 1 > l0))
        return false;
  }
  return true;
}

std::optional<LongRopeSelect>
matchLongRopeSelect(Value angles, int64_t d, int64_t T,
                    const ckpt::WeightStore *weights) {
  SelectOp sel = findSelect(angles, d / 2);
  if (!sel)
    return std::nullopt;
  std::optional<ConstTensor> lng =
      evaluateConstant(sel.getTrueValue(), weights);
  std::optional<ConstTensor> shrt =
      evaluateConstant(sel.getFalseValue(), weights);
  std::optional<ConstTensor> cond =
      evaluateConstant(sel.getCondition(), weights);
  if (!lng || !shrt || !cond || cond->data.empty())
    return std::nullopt;
  SmallVector<Value> aranges;
  std::optional<double> bound;
  conditionLeaves(sel.getCondition(), T, aranges, bound);
  if (aranges.empty() || !bound || *bound < 1 || *bound != std::round(*bound) ||
      *bound > double(1 << 24))
    return std::nullopt;
  int64_t l0 = static_cast<int64_t>(*bound);
  if (!isLongRopeSwitch(sel.getCondition(), aranges, T, l0, weights))
    return std::nullopt;
  return LongRopeSelect{shrt->data, lng->data, l0, cond->data[0] != 0};
}

/// Phi-3's longrope as transformers computes it: per-frequency divisors
/// (short up to L0 tokens, long beyond) of theta^(-2i/d), cos and sin
/// scaled by sqrt(1 + ln(factor) / ln(L0)). Only the divisors times
/// theta^(2i/d) are observable, so theta is taken as a round base (the
/// divisors absorb the choice); `accept` checks the traced tables and the
/// other branch is checked here, so every position agrees.
std::optional<RopeMatch> estimateLongRope(
    Value angles, const ConstTensor &cosT, const ConstTensor &sinT, int64_t d,
    RopeLayout layout, int64_t T, const ckpt::WeightStore *weights,
    llvm::function_ref<std::optional<RopeMatch>(const ref::RopeParams &)>
        accept) {
  std::optional<LongRopeSelect> sel =
      matchLongRopeSelect(angles, d, T, weights);
  if (!sel || cosT.numElements() == 0)
    return std::nullopt;
  double amp = tableAmplitude(cosT, sinT);
  const double l0 = static_cast<double>(sel->l0);
  double factor = std::exp((amp * amp - 1.0) * std::log(l0));
  factor = std::max(1.0, std::round(factor * l0) / l0);
  // Configs write the divisors with a few digits: try them rounded to 6
  // significant ones first (the checks decide), then as the graph has them.
  for (double theta : {10000.0, 500000.0, 1000000.0, 250000.0, 100000.0})
    for (int digits : {6, 0}) {
      ref::RopeParams p;
      p.kind = ref::RopeParams::Kind::LongRope;
      p.interleaved = layout == RopeLayout::Interleaved;
      p.rotaryDim = d;
      p.theta = theta;
      p.factor = factor;
      p.originalMaxPositionEmbeddings = sel->l0;
      if (std::fabs(std::sqrt(1.0 + std::log(factor) / std::log(l0)) - amp) >
          1e-6)
        p.attentionFactor = static_cast<double>(static_cast<float>(amp));
      for (int64_t i = 0; i < d / 2; ++i) {
        double base = std::pow(theta, -2.0 * i / d);
        auto snap = [&](double v) {
          return digits ? roundSignificant(v, digits) : v;
        };
        p.shortFactor.push_back(snap(base / sel->shortInv[i]));
        p.longFactor.push_back(snap(base / sel->longInv[i]));
      }
      if (!ref::ropeParamsProblem(p).empty())
        return std::nullopt;
      // The branch the trace did not take, over the whole position range.
      const std::vector<double> &other =
          sel->tracedLong ? sel->shortInv : sel->longInv;
      float af = 1.0f;
      std::vector<float> inv =
          ropeInvFreq(p, sel->tracedLong ? sel->l0 : sel->l0 + 1, af);
      if (!holdsOverPositionRange(TableFrequencies{0, other}, inv))
        continue;
      if (std::optional<RopeMatch> m = accept(p))
        return m;
    }
  return std::nullopt;
}

/// Matches `op` = x * cos + rotate(x) * sin and checks the tables; the
/// failure reason is returned in `why`.
std::optional<RopeMatch> matchRope(AddOp op, const ckpt::WeightStore *weights,
                                   StringRef &why) {
  auto type = rankedType(op.getResult());
  if (!type || !type.hasStaticShape() ||
      (type.getRank() != 3 && type.getRank() != 4) ||
      (type.getRank() == 4 && type.getDimSize(0) != 1)) {
    why = "not a [1, h, T, d] / [T, h, d] tensor";
    return std::nullopt;
  }
  Value x, cosTable, sinTable;
  RopeLayout pairs = RopeLayout::HalfSplit;
  bool matched = matchEitherOrder(op, [&](Value a, Value b) {
    auto ma = defOp<MulOp>(a), mb = defOp<MulOp>(b);
    if (!ma || !mb)
      return false;
    return matchEitherOrder(ma, [&](Value xa, Value c) {
      return matchEitherOrder(mb, [&](Value rot, Value s) {
        Value xr = matchRotateHalf(rot);
        pairs = RopeLayout::HalfSplit;
        if (!xr) {
          xr = matchRotateEveryTwo(rot);
          pairs = RopeLayout::Interleaved;
        }
        if (!xr || xr != xa)
          return false;
        x = xa;
        cosTable = c;
        sinTable = s;
        return true;
      });
    });
  });
  if (!matched) {
    why = "not x * cos + rotate(x) * sin";
    return std::nullopt;
  }
  int64_t d = type.getShape().back();
  // The tables before their broadcast over the heads: h times smaller.
  std::optional<ConstTensor> c =
      evaluateConstant(stripBroadcast(cosTable), weights);
  std::optional<ConstTensor> s =
      evaluateConstant(stripBroadcast(sinTable), weights);
  if (!c || !s) {
    why = "cos/sin tables are not constant";
    return std::nullopt;
  }
  SmallVector<RopeLayoutGuess> guesses =
      type.getRank() == 4 ? SmallVector<RopeLayoutGuess>{{2}, {1}}
                          : SmallVector<RopeLayoutGuess>{{1}, {0}};
  // Angle tables to estimate the parameters from: the llm.cos operand when
  // the graph computes the tables, else the angles recovered from the
  // stored tables for each candidate sequence axis.
  SmallVector<ConstTensor> angleTables;
  auto cosOp = findTrig<CosOp>(cosTable);
  const bool computed = static_cast<bool>(cosOp);
  if (cosOp) {
    std::optional<ConstTensor> angles =
        evaluateConstant(cosOp.getInput(), weights);
    if (!angles) {
      why = "cos/sin tables are not constant";
      return std::nullopt;
    }
    angleTables.push_back(std::move(*angles));
  } else {
    for (RopeLayoutGuess g : guesses)
      if (std::optional<ConstTensor> a =
              anglesFromTables(*c, *s, type.getShape(), g.seqAxis))
        angleTables.push_back(std::move(*a));
    if (angleTables.empty()) {
      why = "stored cos/sin tables do not vary along a sequence axis";
      return std::nullopt;
    }
  }
  // The sequence length only matters for the dynamic kind, never produced.
  const int64_t seqLen = 0;
  bool estimated = false, rangeFailed = false;
  for (const ConstTensor &angles : angleTables) {
    auto est = estimateRope(angles, d, pairs);
    if (!est)
      continue;
    estimated = true;
    // A table the graph computes is a function of the position: the kind
    // must reproduce it over the whole position range, not only at the
    // traced positions (8 traced positions fit a llama3 rope to a YaRN
    // table within the tolerance). Stored tables define the rope only at
    // their rows, which the entry check covers.
    std::optional<TableFrequencies> graphFreqs;
    if (computed) {
      graphFreqs = tableFrequencies(angles, d, pairs, est->offset, est->factor);
      if (!graphFreqs)
        continue;
    }
    auto check =
        [&](const ref::RopeParams &params) -> std::optional<RopeMatch> {
      float scale = 1.0f;
      std::vector<float> invFreq = ropeInvFreq(params, seqLen, scale);
      if (graphFreqs && !holdsOverPositionRange(*graphFreqs, invFreq)) {
        rangeFailed = true;
        return std::nullopt;
      }
      for (RopeLayoutGuess g : guesses)
        if (tableMatches(*c, type.getShape(), g, pairs, invFreq, scale,
                         est->offset, cosf32) &&
            tableMatches(*s, type.getShape(), g, pairs, invFreq, scale,
                         est->offset, sinf32))
          return RopeMatch{x, pairs, params, est->offset, g};
      return std::nullopt;
    };
    ref::RopeParams params;
    params.rotaryDim = d;
    params.interleaved = pairs == RopeLayout::Interleaved;
    params.theta = est->theta;
    if (est->factor != 1.0) {
      params.kind = ref::RopeParams::Kind::Linear;
      params.factor = est->factor;
    }
    if (std::optional<RopeMatch> m = check(params))
      return m;
    // Llama 3's frequency-dependent scaling leaves the high frequencies and
    // divides the low ones by the factor.
    if (std::optional<ref::RopeParams> l3 =
            estimateLlama3(angles, d, pairs, est->offset))
      if (std::optional<RopeMatch> m = check(*l3))
        return m;
    // YaRN blends interpolated and extrapolated frequencies along a ramp and
    // scales cos and sin by the attention factor.
    if (std::optional<RopeMatch> m =
            estimateYarn(angles, *c, *s, d, pairs, est->offset, check))
      return m;
    // Longrope's per-frequency divisors, switched at L0 in the graph.
    if (computed && est->factor == 1.0)
      if (std::optional<RopeMatch> m = estimateLongRope(
              cosOp.getInput(), *c, *s, d, pairs,
              angles.numElements() / angles.shape.back(), weights, check))
        return m;
  }
  why = rangeFailed ? "no rope kind reproduces the computed table over the "
                      "whole position range (only at the traced positions)"
        : estimated ? "tables are not a default, linear, llama3 or yarn rope"
                    : "angles are not p * theta^(-2i/d)";
  return std::nullopt;
}

/// llm.rope of `x` (in the layout of `m`) rotating its first `rotaryDim`
/// features, converted to and from llm.rope's [T, heads, d].
Value buildRope(PatternRewriter &rewriter, Location loc, Value x,
                const RopeMatch &m, int64_t rotaryDim) {
  MLIRContext *ctx = rewriter.getContext();
  int64_t rank = rankedType(x).getRank();
  Value seqMajor = x;
  if (rank == 4) {
    if (m.layout.seqAxis == 2)
      seqMajor = transposeBy(rewriter, loc, x, {0, 2, 1, 3});
    auto sh = rankedType(seqMajor).getShape();
    seqMajor = reshapeTo(rewriter, loc, seqMajor, {sh[1], sh[2], sh[3]});
  } else if (m.layout.seqAxis == 1) {
    seqMajor = transposeBy(rewriter, loc, x, {1, 0, 2});
  }
  Value off = arith::ConstantIndexOp::create(rewriter, loc, m.offset);
  const ref::RopeParams &p = m.params;
  RopeKind kind = p.kind == ref::RopeParams::Kind::Linear   ? RopeKind::Linear
                  : p.kind == ref::RopeParams::Kind::Llama3 ? RopeKind::Llama3
                  : p.kind == ref::RopeParams::Kind::Yarn   ? RopeKind::Yarn
                  : p.kind == ref::RopeParams::Kind::LongRope
                      ? RopeKind::LongRope
                      : RopeKind::Default;
  SmallVector<NamedAttribute> attrs = {
      rewriter.getNamedAttr("kind", RopeKindAttr::get(ctx, kind)),
      rewriter.getNamedAttr("layout", RopeLayoutAttr::get(ctx, m.pairs)),
      rewriter.getNamedAttr("theta", rewriter.getF64FloatAttr(p.theta)),
      rewriter.getNamedAttr("rotary_dim",
                            rewriter.getI64IntegerAttr(rotaryDim))};
  if (kind != RopeKind::Default)
    attrs.push_back(
        rewriter.getNamedAttr("factor", rewriter.getF64FloatAttr(p.factor)));
  auto f64 = [&](StringRef name, double v) {
    attrs.push_back(rewriter.getNamedAttr(name, rewriter.getF64FloatAttr(v)));
  };
  if (kind == RopeKind::Llama3 || kind == RopeKind::Yarn ||
      kind == RopeKind::LongRope)
    attrs.push_back(rewriter.getNamedAttr(
        "original_max_position_embeddings",
        rewriter.getI64IntegerAttr(p.originalMaxPositionEmbeddings)));
  if (kind == RopeKind::Llama3) {
    f64("low_freq_factor", p.lowFreqFactor);
    f64("high_freq_factor", p.highFreqFactor);
  }
  if (kind == RopeKind::Yarn) {
    f64("beta_fast", p.betaFast);
    f64("beta_slow", p.betaSlow);
    if (!p.truncate)
      attrs.push_back(
          rewriter.getNamedAttr("truncate", rewriter.getBoolAttr(false)));
  }
  if (kind == RopeKind::LongRope) {
    attrs.push_back(rewriter.getNamedAttr(
        "short_factor", rewriter.getDenseF64ArrayAttr(p.shortFactor)));
    attrs.push_back(rewriter.getNamedAttr(
        "long_factor", rewriter.getDenseF64ArrayAttr(p.longFactor)));
  }
  if (p.attentionFactor &&
      (kind == RopeKind::Yarn || kind == RopeKind::LongRope))
    f64("attention_factor", *p.attentionFactor);
  auto rope = RopeOp::create(rewriter, loc, TypeRange{seqMajor.getType()},
                             ValueRange{seqMajor, off}, attrs);
  Value back = rope.getResult();
  if (rank == 4) {
    auto sh = rankedType(back).getShape();
    back = reshapeTo(rewriter, loc, back, {1, sh[0], sh[1], sh[2]});
    if (m.layout.seqAxis == 2)
      back = transposeBy(rewriter, loc, back, {0, 2, 1, 3});
  } else if (m.layout.seqAxis == 1) {
    back = transposeBy(rewriter, loc, back, {1, 0, 2});
  }
  return back;
}

/// Partial rotary (GPT-NeoX, Phi): cat(rope(x[..., :r]), x[..., r:]).
/// Returns the full x and r when `cat` has that shape around `rotated`.
std::optional<std::pair<Value, int64_t>> matchPartialRotary(ConcatOp cat,
                                                            Value rotated) {
  auto type = rankedType(cat.getResult());
  if (!type || cat.getInputs().size() != 2 ||
      !isLastAxis(cat.getAxis(), type.getRank()) ||
      cat.getInputs()[0] != rotated)
    return std::nullopt;
  auto pass = defOp<SliceOp>(cat.getInputs()[1]);
  if (!pass || !isLastAxis(pass.getAxis(), type.getRank()))
    return std::nullopt;
  Value full = pass.getInput();
  int64_t d = type.getShape().back();
  int64_t r = rankedType(rotated).getShape().back();
  if (full.getType() != type || pass.getStart() != r || pass.getSize() != d - r)
    return std::nullopt;
  return std::make_pair(full, r);
}

/// `x` = x_full[..., :r] for a last-axis slice from 0.
Value rotaryPartOf(Value x) {
  auto sl = defOp<SliceOp>(x);
  auto t = sl ? rankedType(sl.getInput()) : RankedTensorType();
  if (!sl || !t || !isLastAxis(sl.getAxis(), t.getRank()) || sl.getStart() != 0)
    return {};
  return sl.getInput();
}

struct RaiseRope : OpRewritePattern<AddOp> {
  RaiseRope(MLIRContext *ctx, const ckpt::WeightStore *weights)
      : OpRewritePattern(ctx), weights(weights) {}
  const ckpt::WeightStore *weights;

  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    StringRef why;
    std::optional<RopeMatch> m = matchRope(op, weights, why);
    if (!m)
      return rewriter.notifyMatchFailure(op, why);
    // A partial rotary is raised whole by RaisePartialRope.
    if (Value full = rotaryPartOf(m->x))
      for (Operation *user : op->getUsers())
        if (auto cat = dyn_cast<ConcatOp>(user))
          if (auto partial = matchPartialRotary(cat, op.getResult());
              partial && partial->first == full)
            return rewriter.notifyMatchFailure(op, "part of a partial rotary");
    int64_t d = rankedType(op.getResult()).getShape().back();
    rewriter.replaceOp(op, buildRope(rewriter, op.getLoc(), m->x, *m, d));
    return success();
  }
};

/// cat(rope(x[..., :r]), x[..., r:]) -> llm.rope of x with rotary_dim r
/// (the frequencies use r, as HF computes them for partial rotary).
struct RaisePartialRope : OpRewritePattern<ConcatOp> {
  RaisePartialRope(MLIRContext *ctx, const ckpt::WeightStore *weights)
      : OpRewritePattern(ctx), weights(weights) {}
  const ckpt::WeightStore *weights;

  LogicalResult matchAndRewrite(ConcatOp cat,
                                PatternRewriter &rewriter) const override {
    if (cat.getInputs().size() != 2)
      return failure();
    auto add = defOp<AddOp>(cat.getInputs()[0]);
    if (!add)
      return failure();
    auto partial = matchPartialRotary(cat, add.getResult());
    if (!partial)
      return failure();
    StringRef why;
    std::optional<RopeMatch> m = matchRope(add, weights, why);
    if (!m)
      return rewriter.notifyMatchFailure(cat, why);
    if (rotaryPartOf(m->x) != partial->first)
      return rewriter.notifyMatchFailure(cat, "rotates another tensor");
    rewriter.replaceOp(cat, buildRope(rewriter, cat.getLoc(), partial->first,
                                      *m, partial->second));
    return success();
  }
};

} // namespace

void populateRaiseRopePatterns(RewritePatternSet &patterns,
                               const ckpt::WeightStore *weights) {
  patterns.add<RaiseRope, RaisePartialRope>(patterns.getContext(), weights);
}

} // namespace pimc::llm
