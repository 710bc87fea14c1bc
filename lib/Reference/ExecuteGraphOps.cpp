//===- ExecuteGraphOps.cpp - the graph frontends' primitive ops -----------===//
//
// The interpreter's semantics of the primitive ops the FX and ONNX importers
// produce (docs/frontend-graphs.md); the model-level ops are in
// Interpreter.cpp.
//
//===----------------------------------------------------------------------===//
#include "InterpreterImpl.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstring>
#include <numeric>

using namespace mlir;
using namespace pimc;
using namespace pimc::ref;
using namespace pimc::ref::detail;
using llvm::Error;
using llvm::Expected;

namespace {
/// For every element of a tensor of shape `out`, the linear index of the
/// element of a tensor of shape `in` that numpy broadcasting reads (`in`
/// right-aligned; its size-1 and missing dimensions repeat). Fails when a
/// dimension of `in` is neither 1 nor the matching one of `out`.
Expected<std::vector<int64_t>> broadcastSource(ArrayRef<int64_t> in,
                                               ArrayRef<int64_t> out) {
  int64_t rank = out.size(), lead = rank - static_cast<int64_t>(in.size());
  if (lead < 0)
    return llvm::createStringError(
        llvm::formatv("cannot broadcast {0} to the lower rank {1}",
                      shapeString(in), shapeString(out)));
  SmallVector<int64_t, 4> stride(rank, 0);
  int64_t step = 1;
  for (int64_t i = in.size() - 1; i >= 0; --i) {
    if (in[i] != 1 && in[i] != out[lead + i])
      return llvm::createStringError(llvm::formatv(
          "cannot broadcast {0} to {1}", shapeString(in), shapeString(out)));
    stride[lead + i] = in[i] == 1 ? 0 : step;
    step *= in[i];
  }
  int64_t numel = std::accumulate(out.begin(), out.end(), int64_t(1),
                                  std::multiplies<int64_t>());
  std::vector<int64_t> source(numel);
  SmallVector<int64_t, 4> idx(rank, 0);
  int64_t at = 0;
  for (int64_t lin = 0; lin < numel; ++lin) {
    source[lin] = at;
    for (int64_t i = rank - 1; i >= 0; --i) {
      at += stride[i];
      if (++idx[i] < out[i])
        break;
      at -= stride[i] * out[i];
      idx[i] = 0;
    }
  }
  return source;
}

LinearWeight linearWeight(const WeightBinding *w) {
  LinearWeight lw;
  if (w->quant)
    lw.quant = w->quant.get();
  else
    lw.dense = &w->dense;
  return lw;
}

GatedActivation gatedActivationOf(llm::MoEOp m) {
  GatedActivation act;
  switch (m.getActivation()) {
  case llm::Activation::Silu:
    act.fn = GateActivation::Silu;
    break;
  case llm::Activation::Gelu:
    act.fn = GateActivation::Gelu;
    break;
  case llm::Activation::GeluTanh:
    act.fn = GateActivation::GeluTanh;
    break;
  case llm::Activation::ClampedSwiglu:
    act.fn = GateActivation::ClampedSwiglu;
    act.limit = m.getSwigluLimit()->convertToFloat();
    act.alpha = m.getSwigluAlpha()->convertToFloat();
    break;
  }
  return act;
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}
} // namespace

Error Interpreter::Impl::executeGraphOp(Operation *op, Env &env) {
  auto tensorOf = [&](Value v) -> Tensor & { return detail::tensorOf(env, v); };
  auto setTensor = [&](Value v, TensorPtr t) { env[v].tensor = std::move(t); };
  std::vector<std::unique_ptr<WeightBinding>> temps;
  auto weightOf = [&](Value v) { return this->weightOf(env, v, temps); };

  return llvm::TypeSwitch<Operation *, Error>(op)
      .Case([&](llm::MatmulOp m) -> Error {
        Tensor &a = tensorOf(m.getLhs());
        Tensor &b = tensorOf(m.getRhs());
        int64_t ra = a.shape.size(), rb = b.shape.size();
        int64_t M = a.shape[ra - 2], K = a.shape[ra - 1];
        int64_t N = b.shape[rb - 1];
        if (b.shape[rb - 2] != K)
          return opError(op, llvm::formatv("contraction sizes differ at run "
                                           "time: {0} x {1}",
                                           shapeString(a.shape),
                                           shapeString(b.shape)));
        ArrayRef<int64_t> batchA = ArrayRef<int64_t>(a.shape).drop_back(2);
        ArrayRef<int64_t> batchB = ArrayRef<int64_t>(b.shape).drop_back(2);
        auto batch = llm::broadcastShapes(batchA, batchB);
        if (failed(batch))
          return opError(op, llvm::formatv("batch dimensions of {0} and {1} "
                                           "do not broadcast",
                                           shapeString(a.shape),
                                           shapeString(b.shape)));
        auto srcA = broadcastSource(batchA, *batch);
        auto srcB = broadcastSource(batchB, *batch);
        if (!srcA || !srcB) {
          llvm::consumeError(srcA.takeError());
          llvm::consumeError(srcB.takeError());
          return opError(op, "batch dimensions do not broadcast");
        }
        SmallVector<int64_t, 4> shape(batch->begin(), batch->end());
        shape.push_back(M);
        shape.push_back(N);
        auto out = makeF32(shape);
        for (size_t bi = 0; bi < srcA->size(); ++bi) {
          const float *A = a.f.data() + (*srcA)[bi] * M * K;
          const float *B = b.f.data() + (*srcB)[bi] * K * N;
          float *C = out->f.data() + bi * M * N;
          // k outermost per row: each C[m, n] sums its products in
          // increasing k.
          for (int64_t i = 0; i < M; ++i)
            for (int64_t k = 0; k < K; ++k) {
              float av = A[i * K + k];
              for (int64_t j = 0; j < N; ++j)
                C[i * N + j] += av * B[k * N + j];
            }
        }
        setTensor(m.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::BroadcastOp b) -> Error {
        Tensor &x = tensorOf(b.getInput());
        auto type = cast<RankedTensorType>(b.getType());
        // Dynamic result dimensions take the input's size (or 1 if the
        // input lacks the dimension).
        SmallVector<int64_t, 4> shape;
        int64_t lead = type.getRank() - static_cast<int64_t>(x.shape.size());
        for (int64_t i = 0; i < type.getRank(); ++i)
          shape.push_back(!type.isDynamicDim(i) ? type.getDimSize(i)
                          : i >= lead           ? x.shape[i - lead]
                                                : 1);
        auto source = broadcastSource(x.shape, shape);
        if (!source)
          return opError(op, llvm::toString(source.takeError()));
        auto out = makeLike(x, shape);
        onData(x, *out, [&](const auto &in, auto &o) {
          for (size_t i = 0; i < source->size(); ++i)
            o[i] = in[(*source)[i]];
        });
        setTensor(b.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::CompareOp c) -> Error {
        Tensor &a = tensorOf(c.getLhs());
        Tensor &b = tensorOf(c.getRhs());
        if (a.shape != b.shape)
          return opError(op, "operand shapes differ at run time");
        auto out = std::make_shared<Tensor>();
        out->isInt = true;
        out->shape = a.shape;
        out->i.resize(a.numel());
        llm::ComparePredicate pred = c.getPredicate();
        auto cmp = [pred](auto x, auto y) -> bool {
          switch (pred) {
          case llm::ComparePredicate::Eq:
            return x == y;
          case llm::ComparePredicate::Ne:
            return x != y;
          case llm::ComparePredicate::Lt:
            return x < y;
          case llm::ComparePredicate::Le:
            return x <= y;
          case llm::ComparePredicate::Gt:
            return x > y;
          case llm::ComparePredicate::Ge:
            return x >= y;
          }
          return false;
        };
        for (int64_t i = 0; i < a.numel(); ++i)
          out->i[i] = a.isInt ? cmp(a.i[i], b.i[i]) : cmp(a.f[i], b.f[i]);
        setTensor(c.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::SelectOp sel) -> Error {
        Tensor &cond = tensorOf(sel.getCondition());
        Tensor &a = tensorOf(sel.getTrueValue());
        Tensor &b = tensorOf(sel.getFalseValue());
        if (cond.shape != a.shape || a.shape != b.shape)
          return opError(op, "operand shapes differ at run time");
        auto out = makeLike(a, a.shape);
        for (int64_t i = 0; i < a.numel(); ++i) {
          if (a.isInt)
            out->i[i] = cond.i[i] ? a.i[i] : b.i[i];
          else
            out->f[i] = cond.i[i] ? a.f[i] : b.f[i];
        }
        setTensor(sel.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::ConvertOp c) -> Error {
        Tensor &x = tensorOf(c.getInput());
        Type elem = cast<RankedTensorType>(c.getType()).getElementType();
        auto out = std::make_shared<Tensor>();
        out->shape = x.shape;
        int64_t n = x.numel();
        if (elem.isF32()) {
          out->f.resize(n);
          for (int64_t i = 0; i < n; ++i)
            out->f[i] = x.isInt ? static_cast<float>(x.i[i]) : x.f[i];
        } else if (elem.isInteger(1)) {
          out->isInt = true;
          out->i.resize(n);
          for (int64_t i = 0; i < n; ++i)
            out->i[i] = x.isInt ? x.i[i] != 0 : x.f[i] != 0.0f;
        } else {
          out->isInt = true;
          out->i.resize(n);
          for (int64_t i = 0; i < n; ++i) {
            if (x.isInt) {
              out->i[i] = x.i[i];
              continue;
            }
            float v = x.f[i];
            // [-2^63, 2^63) is exactly the range that truncates into i64.
            if (!(v >= -0x1p63f && v < 0x1p63f))
              return opError(op, llvm::formatv("element {0} = {1} does not "
                                               "fit in i64",
                                               i, v));
            out->i[i] = static_cast<int64_t>(v);
          }
        }
        setTensor(c.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::NonzeroOp nz) -> Error {
        Tensor &x = tensorOf(nz.getInput());
        int64_t rank = x.shape.size(), n = x.numel();
        auto want = cast<RankedTensorType>(nz.getType()).getDimSize(0);
        auto out = std::make_shared<Tensor>();
        out->isInt = true;
        out->shape = {want, rank};
        out->i.assign(want * rank, 0);
        int64_t count = 0;
        for (int64_t e = 0; e < n; ++e) {
          bool set = x.isInt ? x.i[e] != 0 : x.f[e] != 0.0f;
          if (!set)
            continue;
          if (count < want) {
            // The row-major multi-index of element e.
            int64_t rest = e;
            for (int64_t d = rank - 1; d >= 0; --d) {
              out->i[count * rank + d] = rest % x.shape[d];
              rest /= x.shape[d];
            }
          }
          ++count;
        }
        if (count != want)
          return opError(
              op, llvm::formatv("{0} nonzero elements, the graph was traced "
                                "with {1} (its shape is specialised to the "
                                "traced data; raise the graph or re-trace "
                                "with these inputs)",
                                count, want));
        setTensor(nz.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::TopkOp t) -> Error {
        Tensor &x = tensorOf(t.getInput());
        int64_t axis = normalizeAxis(t.getAxis(), x.shape.size());
        AxisView v = axisView(x.shape, axis);
        int64_t k = t.getK();
        if (k > v.n)
          return opError(
              op, llvm::formatv("k = {0} exceeds the axis size {1}", k, v.n));
        SmallVector<int64_t, 4> shape(x.shape);
        shape[axis] = k;
        auto values = makeF32(shape);
        auto indices = std::make_shared<Tensor>();
        indices->isInt = true;
        indices->shape = shape;
        indices->i.resize(values->numel());
        topk(x.f.data(), v.outer, v.n, v.inner, k, t.getLargest(),
             values->f.data(), indices->i.data());
        setTensor(t.getValues(), values);
        setTensor(t.getIndices(), indices);
        return Error::success();
      })
      .Case([&](llm::CumsumOp c) -> Error {
        Tensor &x = tensorOf(c.getInput());
        int64_t axis = normalizeAxis(c.getAxis(), x.shape.size());
        AxisView v = axisView(x.shape, axis);
        auto out = makeLike(x, x.shape);
        bool exclusive = c.getExclusive(), reverse = c.getReverse();
        onData(x, *out, [&](const auto &in, auto &o) {
          using T = typename std::decay_t<decltype(in)>::value_type;
          // i64 sums wrap like numpy; unsigned arithmetic avoids UB.
          using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, T>;
          for (int64_t oi = 0; oi < v.outer; ++oi)
            for (int64_t ii = 0; ii < v.inner; ++ii) {
              Acc acc = 0;
              for (int64_t s = 0; s < v.n; ++s) {
                int64_t j = reverse ? v.n - 1 - s : s;
                int64_t at = (oi * v.n + j) * v.inner + ii;
                Acc e = static_cast<Acc>(in[at]);
                if (!exclusive)
                  acc += e;
                o[at] = static_cast<T>(acc);
                if (exclusive)
                  acc += e;
              }
            }
        });
        setTensor(c.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::LayerNormOp ln) -> Error {
        Tensor &x = tensorOf(ln.getInput());
        int64_t axis = normalizeAxis(ln.getAxis(), x.shape.size());
        int64_t n = 1;
        for (size_t i = axis; i < x.shape.size(); ++i)
          n *= x.shape[i];
        const float *w = nullptr, *b = nullptr;
        for (auto [v, ptr] :
             {std::pair<Value, const float **>{ln.getWeight(), &w},
              {ln.getBias(), &b}}) {
          if (!v)
            continue;
          Tensor &t = tensorOf(v);
          if (t.numel() != n)
            return opError(op, llvm::formatv("weight/bias has {0} elements, "
                                             "the normalised shape {1}",
                                             t.numel(), n));
          *ptr = t.f.data();
        }
        auto out = makeF32(x.shape);
        layerNorm(x.f.data(), n ? x.numel() / n : 0, n, w, b,
                  ln.getEpsilon().convertToFloat(), out->f.data());
        setTensor(ln.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::MoEOp m) -> Error {
        Tensor &x = tensorOf(m.getInput());
        int64_t T = x.shape[0], H = x.shape[1];
        const WeightBinding *router = weightOf(m.getRouterWeight());
        int64_t E = m.getNumExperts();
        if (router->dense.cols != H || router->dense.rows != E)
          return opError(op, llvm::formatv("router weight is [{0}, {1}], "
                                           "expected [{2}, {3}]",
                                           router->dense.rows,
                                           router->dense.cols, E, H));
        const float *bias = nullptr;
        if (Value b = m.getRouterBias()) {
          const WeightBinding *bw = weightOf(b);
          if (static_cast<int64_t>(bw->vector.size()) != E)
            return opError(op, llvm::formatv("router bias has {0} elements "
                                             "for {1} experts",
                                             bw->vector.size(), E));
          bias = bw->vector.data();
        }
        std::vector<ExpertWeights> experts;
        for (int64_t e = 0; e < E; ++e)
          experts.push_back({linearWeight(weightOf(m.getGate()[e])),
                             linearWeight(weightOf(m.getUp()[e])),
                             linearWeight(weightOf(m.getDown()[e]))});
        // With a dynamic hidden size the verifier could not tie the expert
        // weights to the input; check before the GEMVs read them.
        auto fits = [&](const ExpertWeights &w) {
          return w.gate.cols() == H && w.up.cols() == H && w.down.rows() == H &&
                 w.up.rows() == w.gate.rows() && w.down.cols() == w.gate.rows();
        };
        for (auto [e, w] : llvm::enumerate(experts))
          if (!fits(w))
            return opError(op, llvm::formatv("expert {0} weights do not fit "
                                             "the hidden size {1}",
                                             e, H));
        // Expert biases: row e of the stacked [E, n] tensors, widened.
        std::vector<float> bg, bu, bd;
        if (m.hasExpertBiases()) {
          int64_t I = experts[0].gate.rows();
          for (auto [v, out, n, what] :
               {std::tuple<Value, std::vector<float> *, int64_t, StringRef>{
                    m.getGateBias(), &bg, I, "gate"},
                {m.getUpBias(), &bu, I, "up"},
                {m.getDownBias(), &bd, H, "down"}}) {
            const DenseMatrix &d = weightOf(v)->dense;
            if (d.rows != E || d.cols != n)
              return opError(op, llvm::formatv("{0} biases are [{1}, {2}], "
                                               "expected [{3}, {4}]",
                                               what, d.rows, d.cols, E, n));
            out->resize(size_t(E * n));
            widenToF32(d.storage, d.data, E * n, out->data());
          }
          for (int64_t e = 0; e < E; ++e) {
            experts[size_t(e)].gateBias = bg.data() + e * I;
            experts[size_t(e)].upBias = bu.data() + e * I;
            experts[size_t(e)].downBias = bd.data() + e * H;
          }
        }
        std::optional<ExpertWeights> shared;
        if (m.hasSharedExpert())
          shared = ExpertWeights{linearWeight(weightOf(m.getSharedGate())),
                                 linearWeight(weightOf(m.getSharedUp())),
                                 linearWeight(weightOf(m.getSharedDown()))};
        if (shared && !fits(*shared))
          return opError(op, llvm::formatv("shared expert weights do not fit "
                                           "the hidden size {0}",
                                           H));
        std::optional<LinearWeight> sharedGate;
        if (Value g = m.getSharedExpertGate()) {
          if (!shared)
            return opError(op, "shared_expert_gate without a shared expert");
          sharedGate = linearWeight(weightOf(g));
          if (sharedGate->rows() != 1 || sharedGate->cols() != H)
            return opError(op, llvm::formatv("shared_expert_gate weight is "
                                             "[{0}, {1}], expected [1, {2}]",
                                             sharedGate->rows(),
                                             sharedGate->cols(), H));
        }
        MoEParams p;
        p.topK = m.getTopK();
        p.sigmoidScoring = m.getScoring() == llm::MoEScoring::Sigmoid;
        p.topkThenScore = m.getOrder() == llm::MoERoutingOrder::TopkThenScore;
        p.renormalize = m.getRenormalize();
        p.routedScalingFactor = m.getRoutedScalingFactor().convertToFloat();
        p.weightOnInput = m.getWeightOnInput();
        p.activation = gatedActivationOf(m);
        if (Value cb = m.getScoreCorrectionBias()) {
          const WeightBinding *w = weightOf(cb);
          if (int64_t(w->vector.size()) != E)
            return opError(op, llvm::formatv("score_correction_bias has {0} "
                                             "elements for {1} experts",
                                             w->vector.size(), E));
          p.correctionBias = w->vector;
        }
        p.nGroup = m.getNGroup();
        p.topkGroup = m.getTopkGroup().value_or(p.nGroup);
        p.groupScoreTopk = m.getGroupScoreTopk();
        p.renormalizeEpsilon = m.getRenormalizeEpsilon().convertToFloat();
        auto out = makeF32(x.shape);
        moe(x.f.data(), T, H, linearWeight(router), bias, experts,
            shared ? &*shared : nullptr, p, out->f.data(),
            sharedGate ? &*sharedGate : nullptr);
        setTensor(m.getResult(), out);
        return Error::success();
      })
      .Default([&](Operation *) -> Error {
        return opError(op, "is not supported by the reference interpreter");
      });
}

Expected<GenerationResult> pimc::ref::generateGreedy(Interpreter &interp,
                                                     ArrayRef<int64_t> prompt,
                                                     int64_t maxNewTokens,
                                                     bool keepLogits) {
  using Clock = std::chrono::steady_clock;
  GenerationResult result;
  if (prompt.empty())
    return llvm::createStringError("the prompt is empty");
  if (static_cast<int64_t>(prompt.size()) + maxNewTokens - 1 >
      interp.maxContext())
    return llvm::createStringError(llvm::formatv(
        "prompt ({0} tokens) + {1} new tokens exceed the maximum context of "
        "{2}",
        prompt.size(), maxNewTokens, interp.maxContext()));
  interp.resetCaches();
  // Each call stands for one of Hugging Face's forward calls: the prompt,
  // then one token per step. A one-token step (a synthesized decode step)
  // takes a call's tokens one at a time, its RoPE told the call's length.
  // A call that first takes the sequence past longrope's L0 recomputes the
  // whole context, as Phi-3's generation does (longRopeRecomputes).
  const bool oneTokenSteps = interp.tokensPerStep() == 1;
  std::vector<int64_t> context; // the tokens whose keys are cached
  auto hfCall = [&](ArrayRef<int64_t> tokens) -> Expected<std::vector<float>> {
    std::vector<int64_t> run(tokens.begin(), tokens.end());
    if (longRopeRecomputes(interp.longRopeL0(), int64_t(context.size()),
                           int64_t(run.size()))) {
      interp.resetCaches();
      result.recomputedTokens += int64_t(context.size());
      run.insert(run.begin(), context.begin(), context.end());
      context.clear();
    }
    int64_t offset = int64_t(context.size());
    context.insert(context.end(), run.begin(), run.end());
    interp.setRopeCallLength(int64_t(context.size()));
    if (!oneTokenSteps)
      return interp.forward(run, offset);
    std::vector<float> last;
    for (int64_t t : run) {
      auto logits = interp.forward(t, offset++);
      if (!logits)
        return logits.takeError();
      last = std::move(*logits);
    }
    return last;
  };
  std::vector<int64_t> step(prompt.begin(), prompt.end());
  for (int64_t i = 0; i < maxNewTokens; ++i) {
    auto start = Clock::now();
    auto logits = hfCall(step);
    if (!logits)
      return logits.takeError();
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    (i == 0 ? result.prefillSeconds : result.decodeSeconds) += secs;
    int64_t next =
        std::max_element(logits->begin(), logits->end()) - logits->begin();
    result.tokens.push_back(next);
    if (keepLogits)
      result.logits.push_back(std::move(*logits));
    step.assign(1, next);
  }
  return result;
}
