//===- Session.cpp - running a compiled model on a Device -----------------===//
#include "pimc/Runtime/Session.h"

#include "pimc/Support/JSON.h"
#include "llvm/Support/FileSystem.h"

#include "pimc/Checkpoint/Safetensors.h"

#include "pimc/Checkpoint/GPTQ.h"
#include "pimc/Checkpoint/HFConfig.h"
#include "pimc/Support/Shape.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"

#include <set>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

using namespace llvm;

namespace pimc::rt {

namespace {

bool sameOrganization(const pimsim::Organization &a,
                      const pimsim::Organization &b) {
  return a.stacks == b.stacks && a.channels == b.channels &&
         a.pseudoChannels == b.pseudoChannels && a.sids == b.sids &&
         a.bankGroups == b.bankGroups && a.banks == b.banks &&
         a.rows == b.rows && a.columns == b.columns &&
         a.accessBytes == b.accessBytes;
}

} // namespace

//===----------------------------------------------------------------------===//
// gemv_rows weight bindings (docs/backend-abi.md, "Weight bindings")
//===----------------------------------------------------------------------===//

Expected<GemvRowsLayout> parseGemvRows(const pimsim::WeightBinding &w,
                                       const pimsim::Program &program,
                                       const pimsim::Target &target) {
  if (w.layout != "gemv_rows")
    return createStringError(
        formatv("layout '{0}' is not supported (the runtime places "
                "'gemv_rows')",
                w.layout));
  if (w.format != "fp16" && w.format != "bf16")
    return createStringError(
        formatv("format '{0}' is not supported (fp16 or bf16 on the device)",
                w.format));
  if (w.format != target.pim.inputFormat)
    return createStringError(
        formatv("format '{0}' is not the target's PIM input format '{1}'",
                w.format, target.pim.inputFormat));
  if (w.shape.size() != 2 || w.shape[0] < 1 || w.shape[1] < 1)
    return createStringError("gemv_rows needs a shape [N, K], not " +
                             shapeString(w.shape));
  if (!w.gemvRows)
    return createStringError(
        "the gemv_rows binding has no typed parameters (a program before "
        "format 1.6 wrote them as JSON): recompile it");
  GemvRowsLayout g;
  static_cast<pimsim::GemvRows &>(g) = *w.gemvRows;
  // The values' domains are pimsim::checkProgram's; what depends on the
  // shape, the target and the region is checked here.
  int64_t N = w.shape[0], K = w.shape[1];
  if (g.k0 >= K)
    return createStringError(
        formatv("'k0' is {0}, the rows have K = {1} elements", g.k0, K));
  if (g.kLen > K - g.k0)
    return createStringError(
        formatv("'k0' {0} + 'k_len' {1} is past the rows' K = {2} elements",
                g.k0, g.kLen, K));
  if (g.source == pimsim::GemvRows::Source::Gptq) {
    ckpt::GptqScheme scheme;
    scheme.bits = unsigned(g.bits);
    scheme.groupSize = g.groupSize == -1 ? K : g.groupSize;
    if (scheme.groupSize < 1 || K % scheme.groupSize)
      return createStringError(formatv(
          "'source': group_size {0} does not divide K = {1}", g.groupSize, K));
    scheme.symmetric = g.sym;
    scheme.zeroMinusOne = g.packing == "gptq";
    if (!g.scaleType.empty())
      scheme.scaleDType = g.scaleType == "f16"    ? ckpt::DType::F16
                          : g.scaleType == "bf16" ? ckpt::DType::BF16
                                                  : ckpt::DType::F32;
    // (K * bits) % 32, without the product (the shape comes from the file).
    if (K % 32 * g.bits % 32 || N % 32 * g.bits % 32)
      return createStringError(
          formatv("GPTQ [{0}, {1}] at {2} bits does not fill int32 words", N, K,
                  g.bits));
    g.gptq = scheme;
  }

  // Placement against the device and the binding's region.
  const pimsim::Organization &org = target.org;
  int64_t B = org.banksPerChannel();
  int64_t lanes = target.pim.lanes;
  int64_t E = org.columns * lanes;
  int64_t kChunks = g.kLen / E + (g.kLen % E != 0);
  if (g.kRows < kChunks)
    return createStringError(
        formatv("k_rows {0} is less than the {1} DRAM rows {2} elements of a "
                "row need ({3} per DRAM row)",
                g.kRows, kChunks, g.kLen, E));
  int64_t total = org.totalChannels();
  if (g.ch0 >= total || g.nch > total - g.ch0)
    return createStringError(
        formatv("{0} channels from channel {1} are outside the device ({2} "
                "channels)",
                g.nch, g.ch0, total));
  // n0, row0 and k_rows come from the file: the last row is computed with
  // checked arithmetic (anything that overflows is outside the device).
  int64_t groups = 0, lastRow = 0, span = 0;
  bool overflow = llvm::AddOverflow(g.n0, N - 1, groups);
  groups /= g.nch * B;
  overflow |= llvm::MulOverflow(groups, g.kRows, span) ||
              llvm::AddOverflow(g.row0, span, lastRow) ||
              llvm::AddOverflow(lastRow, kChunks - 1, lastRow);
  if (overflow)
    return createStringError(
        formatv("DRAM rows from {0} ({1} rows per output group, output rows "
                "from {2}) are outside the device ({3} rows)",
                g.row0, g.kRows, g.n0, org.rows));
  if (lastRow >= org.rows)
    return createStringError(
        formatv("DRAM rows {0}..{1} are outside the device ({2} rows)", g.row0,
                lastRow, org.rows));
  if (w.region >= 0 && w.region < int64_t(program.regions.size())) {
    const pimsim::Region &r = program.regions[w.region];
    bool banksOk = r.banks.first == 0 && r.banks.count == B;
    if (g.ch0 < r.channels.first || g.ch0 + g.nch > r.channels.end() ||
        g.row0 < r.rows.first || lastRow >= r.rows.end() || !banksOk)
      return createStringError(formatv(
          "placement (channels {0}..{1}, all {2} banks, rows {3}..{4}) is "
          "outside region '{5}'",
          g.ch0, g.ch0 + g.nch - 1, B, g.row0, lastRow, r.name));
  }
  return g;
}

namespace {

/// A weight's checkpoint tensors, checked against the binding.
struct WeightSource {
  const ckpt::TensorView *dense = nullptr;
  std::optional<ckpt::GptqTensors> gptq;
};

Expected<WeightSource> checkSource(const pimsim::WeightBinding &w,
                                   const GemvRowsLayout &g,
                                   const ckpt::WeightStore &store) {
  WeightSource s;
  if (!g.gptq) {
    const ckpt::TensorView *t = store.lookup(w.tensor);
    if (!t)
      return createStringError("checkpoint has no tensor '" + w.tensor +
                               "' that the program needs");
    if (ArrayRef<int64_t>(t->shape) != ArrayRef<int64_t>(w.shape))
      return createStringError(
          formatv("checkpoint tensor '{0}' has shape {1}, the program was "
                  "compiled for {2}",
                  w.tensor, shapeString(t->shape), shapeString(w.shape)));
    if (!ckpt::floatStorage(t->dtype) && t->dtype != ckpt::DType::F64)
      return createStringError(
          formatv("checkpoint tensor '{0}' has dtype {1}, expected F32, F16, "
                  "BF16 or F64",
                  w.tensor, ckpt::dtypeName(t->dtype)));
    s.dense = t;
    return s;
  }
  int64_t N = w.shape[0], K = w.shape[1];
  auto parts = ckpt::findGptqTensors(store, w.tensor, N, K, *g.gptq);
  if (!parts)
    return createStringError("checkpoint does not match the program: " +
                             toString(parts.takeError()));
  s.gptq = *parts;
  return s;
}

/// Rows of a weight as f32, one at a time.
class RowReader {
public:
  static Expected<RowReader>
  create(const WeightSource &s, const GemvRowsLayout &g, int64_t N, int64_t K) {
    RowReader r;
    r.src = s;
    r.K = K;
    if (s.gptq) {
      auto q = ckpt::unpackGptq(*s.gptq, N, K, *g.gptq);
      if (!q)
        return q.takeError();
      r.quant = std::make_shared<ref::QuantMatrix>(std::move(*q));
    }
    return r;
  }

  void row(int64_t n, float *out) const {
    if (quant) {
      const ref::QuantMatrix &q = *quant;
      int64_t groups = K / q.groupSize;
      const uint8_t *codes = q.codes.data() + n * K;
      for (int64_t k = 0; k < K; ++k) {
        int64_t g = k / q.groupSize;
        out[k] = q.scales[n * groups + g] *
                 float(int32_t(codes[k]) - q.zeros[n * groups + g]);
      }
      return;
    }
    const ckpt::TensorView *t = src.dense;
    if (t->dtype == ckpt::DType::F64) {
      for (int64_t k = 0; k < K; ++k) {
        double d;
        std::memcpy(&d, t->data + 8 * (n * K + k), 8);
        out[k] = float(d);
      }
      return;
    }
    ref::StorageType st = *ckpt::floatStorage(t->dtype);
    size_t elem = st == ref::StorageType::F32 ? 4 : 2;
    ref::widenToF32(st, t->data + size_t(n * K) * elem, K, out);
  }

private:
  WeightSource src;
  int64_t K = 0;
  std::shared_ptr<ref::QuantMatrix> quant;
};

} // namespace

//===----------------------------------------------------------------------===//
// Target identity
//===----------------------------------------------------------------------===//

std::string describeOrganization(const pimsim::Organization &org) {
  return formatv("{0} stack{1} x {2} channels x {3} banks, {4} rows x {5} "
                 "columns of {6} B",
                 org.stacks, org.stacks == 1 ? "" : "s", org.channels,
                 org.banksPerChannel(), org.rows, org.columns, org.accessBytes)
      .str();
}

/// The keys whose values differ between two canonical config JSONs, as
/// "key: checkpoint <v>, program <v>" (nested objects by dotted key).
static void configDifferences(const json::Object &have,
                              const json::Object &want,
                              const std::string &prefix,
                              std::vector<std::string> &out) {
  std::set<std::string> keys;
  for (const auto &kv : have)
    keys.insert(kv.first.str());
  for (const auto &kv : want)
    keys.insert(kv.first.str());
  for (const std::string &k : keys) {
    const json::Value *a = have.get(k), *b = want.get(k);
    if (a && b && a->getAsObject() && b->getAsObject()) {
      configDifferences(*a->getAsObject(), *b->getAsObject(), prefix + k + ".",
                        out);
      continue;
    }
    if (a && b && *a == *b)
      continue;
    auto show = [](const json::Value *v) {
      return v ? formatv("{0}", *v).str() : std::string("absent");
    };
    out.push_back(formatv("{0}{1}: checkpoint {2}, program {3}", prefix, k,
                          show(a), show(b)));
  }
}

Error checkModelIdentity(const pimsim::ModelIdentity &id, StringRef dir,
                         const ckpt::WeightStore &store) {
  if (id.empty())
    return Error::success(); // not recorded (hand-written, before 1.5)
  std::vector<std::string> diffs;
  if (!id.config.empty()) {
    SmallString<256> configPath(dir);
    sys::path::append(configPath, "config.json");
    Expected<ckpt::ModelConfig> cfg = ckpt::parseModelConfig(configPath);
    if (!cfg)
      return cfg.takeError();
    Expected<json::Value> have =
        pimc::parseJSON(ckpt::semanticConfigJSON(*cfg));
    Expected<json::Value> want = pimc::parseJSON(id.config);
    if (!have || !want || !have->getAsObject() || !want->getAsObject()) {
      consumeError(have.takeError());
      consumeError(want.takeError());
      return createStringError("the program's recorded model config is not a "
                               "JSON object");
    }
    configDifferences(*have->getAsObject(), *want->getAsObject(), "", diffs);
  }
  if (!id.tensors.empty() && store.tableDigest() != id.tensors)
    diffs.push_back("tensor table (names, dtypes, shapes): checkpoint " +
                    store.tableDigest() + ", program " + id.tensors);
  if (diffs.empty())
    return Error::success();
  std::string msg = formatv("checkpoint '{0}' is not the {1} model the program "
                            "was compiled from ({2} difference(s)):",
                            dir, id.modelType, diffs.size());
  for (const std::string &d : diffs)
    msg += "\n  " + d;
  return createStringError(msg);
}

Error checkTargetIdentity(const pimsim::Program &program,
                          const pimsim::Target &target,
                          bool allowNameMismatch) {
  const pimsim::TargetIdentity &id = program.target;
  bool orgOk = sameOrganization(id.org, target.org);
  if (orgOk && (id.name == target.name || allowNameMismatch))
    return Error::success();
  if (!orgOk && id.name == target.name)
    return createStringError(formatv(
        "program was compiled for target '{0}' ({1}), but this '{0}' target "
        "has a different organisation ({2})",
        id.name, describeOrganization(id.org),
        describeOrganization(target.org)));
  return createStringError(formatv(
      "program was compiled for target '{0}' ({1}), this target is '{2}' "
      "({3}){4}",
      id.name, describeOrganization(id.org), target.name,
      describeOrganization(target.org),
      orgOk ? " (same organisation: --allow-target-mismatch accepts it)" : ""));
}

//===----------------------------------------------------------------------===//
// Sampling
//===----------------------------------------------------------------------===//

/// A number as printf's %g writes it ("0.7", "2", "1e-09").
static std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

Error SamplingOptions::validate() const {
  if (!std::isfinite(temperature) || temperature < 0)
    return createStringError("temperature " + num(temperature) +
                             " must be >= 0 (0: greedy)");
  if (topK < 0)
    return createStringError(
        formatv("top-k {0} must be >= 0 (0: no limit)", topK));
  if (!(topP > 0 && topP <= 1))
    return createStringError("top-p " + num(topP) + " must be in (0, 1]");
  return Error::success();
}

Expected<int64_t> Sampler::sample(ArrayRef<float> logits) {
  if (logits.empty())
    return createStringError("no logits to sample from");
  for (size_t i = 0; i < logits.size(); ++i)
    if (std::isnan(logits[i]))
      return createStringError(formatv("logit {0} is NaN", i));
  if (opts.greedy()) {
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i)
      if (logits[i] > logits[best])
        best = i;
    return int64_t(best);
  }
  std::vector<int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  auto before = [&](int64_t a, int64_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  };
  size_t keep = order.size();
  if (opts.topK > 0 && size_t(opts.topK) < keep) {
    keep = size_t(opts.topK);
    std::partial_sort(order.begin(), order.begin() + keep, order.end(), before);
    order.resize(keep);
  } else {
    std::sort(order.begin(), order.end(), before);
  }
  // Softmax of logit / T over the candidates, in double.
  double top = double(logits[order[0]]) / opts.temperature;
  std::vector<double> p(keep);
  double total = 0;
  for (size_t i = 0; i < keep; ++i) {
    double z = double(logits[order[i]]) / opts.temperature;
    p[i] = std::isinf(top) ? (z == top ? 1.0 : 0.0) : std::exp(z - top);
    total += p[i];
  }
  if (opts.topP < 1) {
    double cum = 0;
    size_t n = 0;
    while (n < keep) {
      cum += p[n++] / total;
      if (cum >= opts.topP)
        break;
    }
    keep = n;
    total = 0;
    for (size_t i = 0; i < keep; ++i)
      total += p[i];
  }
  double u = double(rng() >> 11) * 0x1.0p-53 * total;
  double cum = 0;
  for (size_t i = 0; i < keep; ++i) {
    cum += p[i];
    if (cum > u)
      return order[i];
  }
  return order[keep - 1];
}

//===----------------------------------------------------------------------===//
// ModelSession
//===----------------------------------------------------------------------===//

ModelSession::ModelSession(Device &device, HostOps ops,
                           std::unique_ptr<ckpt::WeightStore> weights)
    : dev(device), ops(std::move(ops)), weights(std::move(weights)) {}

ModelSession::~ModelSession() = default;

Expected<std::unique_ptr<ModelSession>>
ModelSession::open(Device &device, pimsim::Program program,
                   StringRef checkpointDir, SessionOptions options) {
  std::unique_ptr<ckpt::WeightStore> store;
  if (!checkpointDir.empty()) {
    // A checkpoint directory, or the one safetensors file of a graph
    // import (graph.safetensors, no config.json).
    bool file = sys::fs::is_regular_file(checkpointDir);
    if (file && !program.model.config.empty())
      return createStringError(formatv(
          "'{0}': the program was compiled from a {1} checkpoint; give its "
          "directory (with config.json)",
          checkpointDir, program.model.modelType));
    auto s = file ? ckpt::WeightStore::openFiles({checkpointDir.str()})
                  : ckpt::WeightStore::openDirectory(checkpointDir);
    if (!s)
      return s.takeError();
    store = std::move(*s);
    if (Error e = checkModelIdentity(program.model, checkpointDir, *store))
      return e;
  }
  return create(device, std::move(program), std::move(store), options);
}

Expected<std::unique_ptr<ModelSession>>
ModelSession::create(Device &device, pimsim::Program program,
                     std::unique_ptr<ckpt::WeightStore> weights,
                     SessionOptions options) {
  const pimsim::Target &target = device.target();
  if (Error e =
          checkTargetIdentity(program, target, options.allowTargetNameMismatch))
    return e;
  if (device.functional() && !weights)
    return createStringError(
        "a functional device needs the checkpoint's weights");
  if (2 * target.pim.lanes > target.org.accessBytes)
    return createStringError(
        formatv("target '{0}': {1} lanes of 2 B do not fit a {2} B column",
                target.name, target.pim.lanes, target.org.accessBytes));

  // The ABI: an entry `decode` with input parameters `pos` and `token`.
  if (!llvm::any_of(program.entries,
                    [](const pimsim::Entry &e) { return e.name == "decode"; }))
    return createStringError("the program has no entry point 'decode'");
  int64_t posMin = 0, posMax = -1, tokMin = 0, tokMax = -1;
  for (const pimsim::Param &p : program.params) {
    if (!p.isInput())
      continue;
    if (p.name == "pos") {
      posMin = p.min;
      posMax = p.max;
    } else if (p.name == "token") {
      tokMin = p.min;
      tokMax = p.max;
    } else {
      return createStringError(
          "the program has an input parameter '" + p.name +
          "'; the runtime supplies only 'pos' and 'token'");
    }
  }
  if (posMax < posMin || tokMax < tokMin)
    return createStringError(
        "the program needs input parameters 'pos' and 'token' (.param without "
        "src)");

  auto ops = HostOps::parse(program);
  if (!ops)
    return ops.takeError();
  if (!ops->functions().empty() && options.hostFunctions)
    ops->setFunctionRunner(options.hostFunctions());

  // Weight bindings: layout, placement and (with a checkpoint) tensors.
  std::vector<std::string> problems;
  for (const pimsim::WeightBinding &w : program.weights) {
    auto g = parseGemvRows(w, program, target);
    if (!g) {
      problems.push_back(
          formatv("weight '{0}': {1}", w.tensor, toString(g.takeError()))
              .str());
      continue;
    }
    if (weights)
      if (auto s = checkSource(w, *g, *weights); !s)
        problems.push_back(toString(s.takeError()));
  }
  if (weights)
    if (Error e = ops->bindTensors(*weights))
      problems.push_back(toString(std::move(e)));
  if (!problems.empty()) {
    std::string msg = problems.front();
    if (problems.size() > 1)
      msg += formatv(" (and {0} more problem{1})", problems.size() - 1,
                     problems.size() > 2 ? "s" : "");
    return createStringError(msg);
  }
  if (device.functional() && !ops->logits())
    return createStringError("the program marks no logits (no 'logits' host "
                             "op)");

  int64_t vocab = ops->logits() ? ops->logits()->elements : 0;
  if (Error e = device.loadProgram(std::move(program)))
    return e;
  std::unique_ptr<ModelSession> session(
      new ModelSession(device, std::move(*ops), std::move(weights)));
  session->vocab = vocab;
  session->posMin = posMin;
  session->posMax = posMax;
  session->tokenMin = tokMin;
  session->tokenMax = tokMax;
  if (device.functional())
    if (Error e = session->placeWeights())
      return e;
  return session;
}

Error ModelSession::placeWeights() {
  const pimsim::Program &prog = program();
  const pimsim::Target &target = dev.target();
  const pimsim::Organization &org = target.org;
  const int64_t B = org.banksPerChannel(), lanes = target.pim.lanes;
  const int64_t E = org.columns * lanes, access = org.accessBytes;
  for (const pimsim::WeightBinding &w : prog.weights) {
    auto g = parseGemvRows(w, prog, target);
    if (!g)
      return g.takeError();
    auto src = checkSource(w, *g, *weights);
    if (!src)
      return src.takeError();
    const int64_t N = w.shape[0], K = w.shape[1];
    auto reader = RowReader::create(*src, *g, N, K);
    if (!reader)
      return createStringError(
          formatv("weight '{0}': {1}", w.tensor, toString(reader.takeError())));
    ElemFormat fmt = w.format == "fp16" ? ElemFormat::FP16 : ElemFormat::BF16;
    std::vector<float> row(static_cast<size_t>(K));
    std::vector<uint8_t> bytes;
    for (int64_t n = 0; n < N; ++n) {
      reader->row(n, row.data());
      int64_t gr = g->n0 + n;
      int64_t i = gr / (g->nch * B), r = gr % (g->nch * B);
      int64_t channel = g->ch0 + r / B, bank = r % B;
      // Element k0 + k of the row is local element k of the binding.
      for (int64_t first = 0, j = 0; first < g->kLen; first += E, ++j) {
        int64_t count = std::min(E, g->kLen - first);
        int64_t columns = (count + lanes - 1) / lanes;
        bytes.assign(size_t(columns * access), 0);
        for (int64_t k = 0; k < count; ++k)
          encodeElement(fmt, row[size_t(g->k0 + first + k)],
                        bytes.data() + (k / lanes) * access + (k % lanes) * 2);
        int64_t dramRow = g->row0 + i * g->kRows + j;
        // Whole columns; runs of consecutive addresses in one write.
        for (int64_t c = 0; c < columns;) {
          uint64_t addr = dev.address(channel, bank, dramRow, c);
          int64_t run = 1;
          while (c + run < columns &&
                 dev.address(channel, bank, dramRow, c + run) ==
                     addr + uint64_t(run * access))
            ++run;
          if (Error e = dev.writeMemory(
                  addr, ArrayRef<uint8_t>(bytes).slice(size_t(c * access),
                                                       size_t(run * access))))
            return createStringError(
                formatv("weight '{0}': {1}", w.tensor, toString(std::move(e))));
          c += run;
        }
      }
    }
  }
  return Error::success();
}

Expected<StepResult> ModelSession::step(int64_t token, int64_t pos,
                                        bool prefill) {
  if (pos < posMin || pos > posMax)
    return createStringError(
        formatv("position {0} is outside the program's context [{1}, {2}]", pos,
                posMin, posMax));
  if (token < tokenMin || token > tokenMax)
    return createStringError(
        formatv("token {0} is outside the program's vocabulary [{1}, {2}]",
                token, tokenMin, tokenMax));
  ParamInputs inputs{{"pos", pos}, {"token", token}};
  KernelRunner runner;
  if (dev.functional())
    runner = [this](int64_t k, const pimsim::HostKernel &,
                    ArrayRef<int64_t> params) -> Error {
      return ops.run(dev, k, params);
    };
  auto start = std::chrono::steady_clock::now();
  auto report = dev.run("decode", inputs, runner);
  if (!report)
    return createStringError(formatv("decode at position {0} (token {1}): {2}",
                                     pos, token, toString(report.takeError())));
  StepResult result;
  if (dev.functional() && ops.logits()) {
    BufferRef b = *ops.logits();
    auto bytes = dev.readRegion("act", uint64_t(b.offset), size_t(b.bytes()));
    if (!bytes)
      return createStringError("reading the logits: " +
                               toString(bytes.takeError()));
    result.logits.resize(size_t(b.elements));
    for (size_t i = 0; i < result.logits.size(); ++i)
      result.logits[i] =
          decodeElement(b.format, bytes->data() + formatBytes(b.format) * i);
  }
  result.record.wallSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  result.record.pos = pos;
  result.record.token = token;
  result.record.prefill = prefill;
  result.record.report = std::move(*report);
  return result;
}

Expected<GenerationResult>
ModelSession::generate(ArrayRef<int64_t> prompt,
                       const GenerateOptions &options) {
  if (prompt.empty())
    return createStringError("the prompt is empty");
  if (options.maxNewTokens < 1)
    return createStringError("max new tokens must be at least 1");
  if (Error e = options.sampling.validate())
    return e;
  int64_t last =
      options.startPos + int64_t(prompt.size()) + options.maxNewTokens - 2;
  if (options.startPos < posMin || last > posMax)
    return createStringError(formatv(
        "{0} prompt token(s) and {1} new token(s) from position {2} need "
        "positions {2}..{3}; the program's context is [{4}, {5}]",
        prompt.size(), options.maxNewTokens, options.startPos, last, posMin,
        posMax));
  for (int64_t t : prompt)
    if (t < tokenMin || t > tokenMax)
      return createStringError(
          formatv("prompt token {0} is outside the vocabulary [{1}, {2}]", t,
                  tokenMin, tokenMax));

  GenerationResult result;
  result.prompt.assign(prompt.begin(), prompt.end());
  result.computed = dev.functional();
  Sampler sampler(options.sampling);
  int64_t pos = options.startPos;
  // One call per Hugging Face forward call (the prompt, then each new
  // token), run a token per step; a call that first takes the sequence past
  // longrope's L0 runs the whole context again (ref::longRopeRecomputes).
  std::vector<int64_t> context; // tokens whose keys are cached
  auto call = [&](ArrayRef<int64_t> tokens,
                  bool prefill) -> Expected<std::vector<float>> {
    std::vector<int64_t> run(tokens.begin(), tokens.end());
    size_t fresh = 0; // run[fresh..] are this call's own tokens
    if (ref::longRopeRecomputes(ops.longRopeL0(), pos, int64_t(run.size()))) {
      if (options.startPos != 0)
        return createStringError(formatv(
            "position {0} crosses longrope's L0 = {1}: the whole context "
            "must be run again, but generation started at position {2}",
            pos, ops.longRopeL0(), options.startPos));
      result.recomputedTokens += int64_t(context.size());
      fresh = context.size();
      run.insert(run.begin(), context.begin(), context.end());
      context.clear();
      pos = 0; // the cache is written again from the start
    }
    ops.setRopeCallLength(pos + int64_t(run.size()));
    std::vector<float> logits;
    for (auto [i, t] : enumerate(run)) {
      auto r = step(t, pos++, prefill || i < fresh);
      if (!r)
        return r.takeError();
      if (options.onStep)
        options.onStep(r->record);
      result.steps.push_back(std::move(r->record));
      logits = std::move(r->logits);
    }
    context.insert(context.end(), run.begin(), run.end());
    return logits;
  };
  auto first = call(prompt, /*prefill=*/true);
  if (!first)
    return first.takeError();
  std::vector<float> logits = std::move(*first);
  while (true) {
    int64_t next = 0; // timing: tokens are not computed
    if (result.computed) {
      auto s = sampler.sample(logits);
      if (!s)
        return createStringError(formatv("sampling token {0}: {1}",
                                         result.tokens.size(),
                                         toString(s.takeError())));
      next = *s;
      if (options.keepLogits)
        result.logits.push_back(logits);
    }
    result.tokens.push_back(next);
    if (int64_t(result.tokens.size()) >= options.maxNewTokens)
      break;
    auto l = call(next, /*prefill=*/false);
    if (!l)
      return l.takeError();
    logits = std::move(*l);
  }
  return result;
}

} // namespace pimc::rt
