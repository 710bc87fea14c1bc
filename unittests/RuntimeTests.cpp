//===- RuntimeTests.cpp - the runtime (lib/Runtime) and `pimc run` --------===//
//
// A hand-written compiled model (text form): embedding -> rms_norm -> pack
// (fp16/bf16) on the host, one GEMV (wr_gb, mac_ab, rd_acc) of lm_head in
// the gemv_rows layout on the device, logits. It runs on hbm3-pim and
// gddr6-aim from a tiny safetensors checkpoint written here, and the logits
// are compared bit for bit with a naive C++ computation that rounds the
// same way (the norm uses the reference kernel the runtime uses; the format
// conversions and the MAC reduction are independent re-implementations).
// Each host op is checked against a direct computation; sampling is
// deterministic; mismatches between program, checkpoint and target are
// reported by name; `pimc run` fails cleanly on bad input.
//
//===----------------------------------------------------------------------===//
#include "RunCommand.h"

#include "pimc/Checkpoint/Safetensors.h"
#include "pimc/Numerics/Kernels.h"
#include "pimc/Runtime/Device.h"
#include "pimc/Runtime/HostOps.h"
#include "pimc/Runtime/Report.h"
#include "pimc/Runtime/Session.h"

#include "pimsim/Functional.h"
#include "pimsim/Program.h"
#include "pimsim/Target.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <set>

using namespace llvm;
using namespace pimc;
using namespace pimc::rt;

namespace {

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "'" << (haystack) << "' does not contain '" << (needle) << "'"

pimsim::Target loadShipped(StringRef name) {
  auto t = pimsim::loadTarget((Twine(PIMC_TARGETS_DIR) + "/" + name).str());
  if (!t) {
    ADD_FAILURE() << toString(t.takeError());
    return pimsim::Target();
  }
  return std::move(*t);
}

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

struct TensorData {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

TensorData f32Tensor(std::string name, std::vector<int64_t> shape,
                     ArrayRef<float> values) {
  TensorData t{std::move(name), "F32", std::move(shape), {}};
  t.bytes.resize(values.size() * 4);
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

TensorData halfTensor(std::string name, std::string dtype,
                      std::vector<int64_t> shape, ArrayRef<uint16_t> values) {
  TensorData t{std::move(name), std::move(dtype), std::move(shape), {}};
  for (uint16_t h : values) {
    t.bytes.push_back(uint8_t(h));
    t.bytes.push_back(uint8_t(h >> 8));
  }
  return t;
}

TensorData i32Tensor(std::string name, std::vector<int64_t> shape,
                     ArrayRef<int32_t> values) {
  TensorData t{std::move(name), "I32", std::move(shape), {}};
  t.bytes.resize(values.size() * 4);
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

/// Writes `dir`/model.safetensors.
void writeSafetensors(StringRef dir, const std::vector<TensorData> &tensors) {
  json::Object header;
  uint64_t offset = 0;
  std::string data;
  for (const TensorData &t : tensors) {
    header[t.name] = json::Object{
        {"dtype", t.dtype},
        {"shape", json::Array(t.shape)},
        {"data_offsets", json::Array{offset, offset + t.bytes.size()}}};
    data.append(reinterpret_cast<const char *>(t.bytes.data()), t.bytes.size());
    offset += t.bytes.size();
  }
  std::string h = formatv("{0}", json::Value(std::move(header))).str();
  while (h.size() % 8)
    h += ' ';
  std::string file;
  for (int i = 0; i < 8; ++i)
    file += char((uint64_t(h.size()) >> (8 * i)) & 0xff);
  file += h + data;
  SmallString<128> path(dir);
  sys::path::append(path, "model.safetensors");
  std::error_code ec;
  raw_fd_ostream os(path, ec);
  ASSERT_FALSE(ec) << ec.message();
  os << file;
}

/// A temporary directory, removed at the end of the test.
class TempDir {
public:
  TempDir() {
    std::error_code ec = sys::fs::createUniqueDirectory("pimc-runtime", dir);
    EXPECT_FALSE(ec) << ec.message();
  }
  ~TempDir() { sys::fs::remove_directories(dir); }
  std::string path(StringRef name = "") const {
    SmallString<128> p(dir);
    if (!name.empty())
      sys::path::append(p, name);
    return p.str().str();
  }

private:
  SmallString<128> dir;
};

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

/// A string as the text form spells it: bare when it is a word, else quoted.
std::string textWord(StringRef v, bool forceQuotes = false) {
  bool bare = !forceQuotes && !v.empty() &&
              all_of(v, [](char c) { return llvm::isAlnum(c) || c == '_'; });
  if (bare)
    return v.str();
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out + "\"";
}

/// A host-op field value in the text form (a buffer FMT[N]@OFF, a host
/// tensor's quoted name, a number, a word); host tensors go to `tensors`.
std::string fieldText(const json::Value &v, std::string &tensors) {
  if (const json::Object *o = v.getAsObject()) {
    if (o->get("tensor")) {
      std::string name = o->getString("tensor")->str(), dims;
      for (const json::Value &d : *o->getArray("shape"))
        dims += (dims.empty() ? "" : "x") + std::to_string(*d.getAsInteger());
      std::string line =
          ".host_tensor " + textWord(name, true) + " shape=" + dims + "\n";
      if (tensors.find(line) == std::string::npos)
        tensors += line;
      return textWord(name, true);
    }
    return formatv("{0}[{1}]@{2}", *o->getString("fmt"), *o->getInteger("n"),
                   *o->getInteger("off"))
        .str();
  }
  if (std::optional<int64_t> i = v.getAsInteger())
    return std::to_string(*i);
  if (std::optional<double> d = v.getAsNumber())
    return formatv("{0:e16}", *d).str();
  if (std::optional<bool> b = v.getAsBoolean())
    return *b ? "true" : "false";
  return textWord(*v.getAsString());
}

/// Host ops written as the pim dialect's dictionaries ({"ops": [{"op":
/// "rms_norm", "in": {off, n, fmt}, ...}]}) in the text form: the lines
/// that follow a .kernel. Host tensors are declared in `tensors`.
std::string opsText(const json::Value &params, std::string &tensors) {
  std::string text;
  for (const json::Value &op : *params.getAsObject()->getArray("ops")) {
    const json::Object &o = *op.getAsObject();
    text += "  " + o.getString("op")->str();
    for (const auto &kv : o) {
      StringRef key = kv.first;
      if (key == "op")
        continue;
      if (key == "rope") {
        for (const auto &r : *kv.second.getAsObject())
          text += " " +
                  (r.first == "kind" ? std::string("rope") : r.first.str()) +
                  "=" + fieldText(r.second, tensors);
      } else if (key == "args" || key == "results") {
        for (const json::Value &e : *kv.second.getAsArray()) {
          const json::Object &c = *e.getAsObject();
          std::string value = c.get("buffer")
                                  ? fieldText(*c.get("buffer"), tensors)
                                  : c.getString("param")->str();
          std::string dims;
          for (const json::Value &d : *c.getArray("shape"))
            dims +=
                (dims.empty() ? "" : "x") + std::to_string(*d.getAsInteger());
          text += " " + key.drop_back().str() + "=" + value +
                  (dims.empty() ? "" : ":" + dims);
        }
      } else if (key == "mlir" || key == "source") {
        text +=
            " " + key.str() + "=" + textWord(*kv.second.getAsString(), true);
      } else {
        text += " " + key.str() + "=" + fieldText(kv.second, tensors);
      }
    }
    text += "\n";
  }
  return text;
}

/// `.kernel HEAD` with `params`' ops, after the host tensors they declare.
std::string kernelText(StringRef head, const json::Value &params) {
  std::string tensors;
  std::string ops = opsText(params, tensors);
  return tensors + ".kernel " + head.str() + "\n" + ops;
}

json::Value buf(int64_t off, int64_t n, StringRef fmt) {
  return json::Object{{"off", off}, {"n", n}, {"fmt", fmt}};
}

json::Value tensorRef(StringRef name, std::vector<int64_t> shape) {
  return json::Object{{"tensor", name}, {"shape", json::Array(shape)}};
}

std::string header(const pimsim::Target &t, StringRef name = "") {
  const pimsim::Organization &o = t.org;
  return formatv(".version 2.0\n.target {0} hash=sha256:0\n"
                 ".org stacks={1} channels={2} pseudo_channels={3} sids={4} "
                 "bank_groups={5} banks={6} rows={7} columns={8} "
                 "access_bytes={9}\n",
                 name.empty() ? StringRef(t.name) : name, o.stacks, o.channels,
                 o.pseudoChannels, o.sids, o.bankGroups, o.banks, o.rows,
                 o.columns, o.accessBytes)
      .str();
}

pimsim::Program assemble(const std::string &text) {
  auto p = pimsim::parseProgramText(text, "test.pimasm");
  if (!p) {
    ADD_FAILURE() << toString(p.takeError()) << "\n" << text;
    return pimsim::Program();
  }
  return std::move(*p);
}

// The tiny model: vocabulary V, hidden H; act layout (bytes):
//   0     embedding out (f32 [H])
//   256   rms_norm out (f32 [H])
//   512   packed x (device format [H])
//   1024  logits (f32 [V])
constexpr int64_t V = 128, H = 64;
constexpr int64_t kEmbedOff = 0, kNormOff = 256, kPackOff = 512,
                  kLogitsOff = 1024;

struct ModelSpec {
  int64_t nch = 1;                     // channels of the GEMV group
  std::string source = "source=dense"; // the .weight line's source keys
  std::string lmHead = "lm_head.weight";
  std::string embedName = "model.embed_tokens.weight";
  std::vector<int64_t> lmShape = {V, H};
};

/// The model program for target `t` (which decides format and banks).
std::string modelText(const pimsim::Target &t, const ModelSpec &m = {},
                      StringRef targetName = "") {
  const int64_t B = t.org.banksPerChannel();
  const int64_t groups = (V + m.nch * B - 1) / (m.nch * B);
  const std::string fmt = t.pim.inputFormat;
  json::Value embed = json::Object{
      {"ops",
       json::Array{json::Object{{"op", "embedding"},
                                {"table", tensorRef(m.embedName, {V, H})},
                                {"out", buf(kEmbedOff, H, "f32")}},
                   json::Object{{"op", "rms_norm"},
                                {"in", buf(kEmbedOff, H, "f32")},
                                {"out", buf(kNormOff, H, "f32")},
                                {"weight", tensorRef("model.norm.weight", {H})},
                                {"eps", 1e-5}},
                   json::Object{{"op", "pack"},
                                {"in", buf(kNormOff, H, "f32")},
                                {"out", buf(kPackOff, H, fmt)},
                                {"blocks", 1},
                                {"block", H},
                                {"in_stride", H},
                                {"out_stride", H}}}}};
  json::Value head = json::Object{
      {"ops", json::Array{json::Object{{"op", "logits"},
                                       {"in", buf(kLogitsOff, V, "f32")}}}}};
  std::string layout =
      formatv("n0=0 ch0=0 nch={0} row0=0 k_rows=1 k0=0 k_len={1} {2}", m.nch,
              m.lmShape[1], m.source)
          .str();
  int64_t rowBytes = t.org.rowBytes();
  int64_t wBytes = m.nch * B * groups * rowBytes;
  std::string shape = formatv("{0}x{1}", m.lmShape[0], m.lmShape[1]).str();
  std::string text = header(t, targetName);
  text += formatv(".param pos min=0 max=15\n"
                  ".param token min=0 max={0}\n",
                  V - 1)
              .str();
  text += formatv(".region w kind=weights channels=0-{0} banks=0-{1} "
                  "rows=0-{2} bytes={3}\n",
                  m.nch - 1, B - 1, groups - 1, wBytes)
              .str();
  text += formatv(".region act kind=activations channels=0-{0} banks=0-{1} "
                  "rows=100 bytes=4096\n",
                  m.nch - 1, B - 1)
              .str();
  text += formatv(".memory max_context=16 weight_bytes={0} act_bytes=4096\n",
                  m.lmShape[0] * m.lmShape[1] * 2)
              .str();
  text += formatv(".weight \"{0}\" region=w format={1} shape={2} rows=0-{3} "
                  "bytes={4} layout=gemv_rows {5}\n",
                  m.lmHead, fmt, shape, groups - 1, wBytes, layout)
              .str();
  text += kernelText("embed kind=embedding", embed);
  text += kernelText("head kind=other", head);
  text += formatv(".stream gemv channels=0-{0}\n"
                  "  wr_gb offset=0 bytes={1} data=act+{2}\n"
                  "  barrier\n"
                  "  loop i {3} {\n"
                  "    mac_ab row=i col=0 count={4}\n"
                  "    barrier\n"
                  "    rd_acc count={5} data=act+{6}+{7}*i+{8}*ch\n"
                  "    barrier\n"
                  "  }\n",
                  m.nch - 1, 2 * H, kPackOff, groups, H / t.pim.lanes, B / 8,
                  kLogitsOff, 4 * m.nch * B, 4 * B)
              .str();
  text += ".entry decode = embed, barrier, gemv, barrier, head\n";
  return text;
}

/// The model's checkpoint tensors (lm_head dense f32 unless replaced).
struct ModelWeights {
  std::vector<uint16_t> embed; // bf16 [V, H]
  std::vector<float> norm;     // [H]
  std::vector<float> lmHead;   // [V, H] (dense) or dequantized GPTQ
};

ModelWeights randomWeights(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1), w(0.5f, 1.5f);
  ModelWeights m;
  for (int64_t i = 0; i < V * H; ++i)
    m.embed.push_back(ref::floatToBf16(u(rng)));
  for (int64_t i = 0; i < H; ++i)
    m.norm.push_back(w(rng));
  for (int64_t i = 0; i < V * H; ++i)
    m.lmHead.push_back(u(rng));
  return m;
}

std::vector<TensorData> denseTensors(const ModelWeights &m) {
  return {halfTensor("model.embed_tokens.weight", "BF16", {V, H}, m.embed),
          f32Tensor("model.norm.weight", {H}, m.norm),
          f32Tensor("lm_head.weight", {V, H}, m.lmHead)};
}

// Independent format conversions (pimsim's, not the runtime's reference
// kernels) and the PIM unit's reduction, as docs/pimsim-isa.md states them.
uint16_t toDevice(float v, bool bf16) {
  return bf16 ? pimsim::floatToBf16(v) : pimsim::floatToFp16(v);
}
float fromDevice(uint16_t h, bool bf16) {
  return bf16 ? pimsim::bf16ToFloat(h) : pimsim::fp16ToFloat(h);
}
float tree(const float *v, int n) {
  if (n == 1)
    return v[0];
  return tree(v, n / 2) + tree(v + n / 2, n / 2);
}

/// The logits of `token`, computed naively.
std::vector<float> naiveLogits(const pimsim::Target &t, const ModelWeights &m,
                               int64_t token) {
  bool bf16 = t.pim.inputFormat == "bf16";
  const int lanes = int(t.pim.lanes);
  std::vector<float> e(H), y(H);
  for (int64_t i = 0; i < H; ++i)
    e[i] = pimsim::bf16ToFloat(m.embed[token * H + i]);
  ref::rmsNorm(e.data(), 1, H, m.norm.data(), 1e-5f, false, y.data());
  std::vector<float> x(H);
  for (int64_t i = 0; i < H; ++i)
    x[i] = fromDevice(toDevice(y[i], bf16), bf16);
  std::vector<float> logits(V);
  for (int64_t n = 0; n < V; ++n) {
    std::vector<float> acc(lanes, 0.0f);
    float acc0 = 0;
    for (int64_t c = 0; c < H / lanes; ++c) {
      std::vector<float> p(lanes);
      for (int l = 0; l < lanes; ++l) {
        int64_t k = c * lanes + l;
        p[l] = fromDevice(toDevice(m.lmHead[n * H + k], bf16), bf16) * x[k];
      }
      if (t.pim.reduction == "lanes")
        for (int l = 0; l < lanes; ++l)
          acc[l] += p[l];
      else
        acc0 += tree(p.data(), lanes);
    }
    logits[n] = t.pim.reduction == "lanes" ? tree(acc.data(), lanes) : acc0;
  }
  return logits;
}

int64_t argmax(ArrayRef<float> v) {
  int64_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[best])
      best = int64_t(i);
  return best;
}

std::unique_ptr<ckpt::WeightStore> openStore(const TempDir &dir) {
  auto s = ckpt::WeightStore::openDirectory(dir.path());
  if (!s) {
    ADD_FAILURE() << toString(s.takeError());
    return nullptr;
  }
  return std::move(*s);
}

/// A session over `text` on a fresh device (the device outlives it).
struct Setup {
  std::unique_ptr<SimDevice> device;
  std::unique_ptr<ModelSession> session;
};

Expected<Setup> makeSession(const pimsim::Target &t, const std::string &text,
                            const TempDir *weights, bool functional,
                            SessionOptions options = {}) {
  Setup s;
  s.device = std::make_unique<SimDevice>(t, functional);
  auto program = pimsim::parseProgramText(text, "test.pimasm");
  if (!program)
    return program.takeError();
  std::unique_ptr<ckpt::WeightStore> store;
  if (weights) {
    auto st = ckpt::WeightStore::openDirectory(weights->path());
    if (!st)
      return st.takeError();
    store = std::move(*st);
  }
  auto session = ModelSession::create(*s.device, std::move(*program),
                                      std::move(store), options);
  if (!session)
    return session.takeError();
  s.session = std::move(*session);
  return s;
}

std::string sessionError(const pimsim::Target &t, const std::string &text,
                         const TempDir *weights, bool functional = true,
                         SessionOptions options = {}) {
  auto s = makeSession(t, text, weights, functional, options);
  if (s)
    return "(no error)";
  return toString(s.takeError());
}

//===----------------------------------------------------------------------===//
// The model, end to end
//===----------------------------------------------------------------------===//

class ModelTest : public ::testing::TestWithParam<const char *> {};

TEST_P(ModelTest, LogitsMatchNaiveComputationBitForBit) {
  pimsim::Target t = loadShipped(GetParam());
  TempDir dir;
  ModelWeights m = randomWeights(7);
  writeSafetensors(dir.path(), denseTensors(m));
  // gddr6-aim: two channels (16 banks each); hbm3-pim: one (64 banks).
  ModelSpec spec;
  spec.nch = t.org.banksPerChannel() >= 64 ? 1 : 2;
  auto s = makeSession(t, modelText(t, spec), &dir, true);
  ASSERT_TRUE(bool(s)) << toString(s.takeError());
  EXPECT_EQ(s->session->vocabSize(), V);
  for (int64_t token : {0, 5, 77, 127}) {
    auto r = s->session->step(token, 3, false);
    ASSERT_TRUE(bool(r)) << toString(r.takeError());
    std::vector<float> want = naiveLogits(t, m, token);
    ASSERT_EQ(r->logits.size(), size_t(V));
    for (int64_t n = 0; n < V; ++n)
      ASSERT_EQ(bitsOf(r->logits[n]), bitsOf(want[n]))
          << "token " << token << ", logit " << n << ": " << r->logits[n]
          << ", naive " << want[n];
    EXPECT_GT(r->record.report.pim.cycles, 0);
    EXPECT_GT(r->record.report.seconds, 0);
  }

  // Greedy generation follows the naive chain.
  GenerateOptions gen;
  gen.maxNewTokens = 4;
  gen.keepLogits = true;
  auto g = s->session->generate({3, 9}, gen);
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  std::vector<int64_t> want;
  int64_t last = 9;
  for (int i = 0; i < 4; ++i) {
    last = argmax(naiveLogits(t, m, last));
    want.push_back(last);
  }
  EXPECT_EQ(g->tokens, want);
  ASSERT_EQ(g->steps.size(), 5u); // 2 prefill + 3 decode
  EXPECT_TRUE(g->steps[0].prefill && g->steps[1].prefill);
  EXPECT_FALSE(g->steps[2].prefill);
  EXPECT_EQ(g->steps[4].pos, 4);
  EXPECT_EQ(g->logits.size(), 4u);

  // Timing mode: no weights, same cycles per step, tokens not computed.
  auto timing = makeSession(t, modelText(t, spec), nullptr, false);
  ASSERT_TRUE(bool(timing)) << toString(timing.takeError());
  auto tg = timing->session->generate({3, 9}, gen);
  ASSERT_TRUE(bool(tg)) << toString(tg.takeError());
  EXPECT_FALSE(tg->computed);
  ASSERT_EQ(tg->steps.size(), g->steps.size());
  for (size_t i = 0; i < tg->steps.size(); ++i) {
    EXPECT_EQ(tg->steps[i].report.pim.cycles, g->steps[i].report.pim.cycles);
    EXPECT_EQ(tg->steps[i].report.seconds, g->steps[i].report.seconds);
  }
  EXPECT_EQ(tg->tokens, std::vector<int64_t>(4, 0));

  // The report over the functional run.
  PerfReport report = buildReport(*s->device, s->session->program(), g->steps);
  EXPECT_EQ(report.prefill.tokens, 2);
  EXPECT_EQ(report.decode.tokens, 3);
  EXPECT_EQ(report.footprint.weightBytes, double(V * H * 2));
  EXPECT_EQ(report.channelsUsed, spec.nch);
  EXPECT_GT(report.decode.bytesMac, 0);
  EXPECT_GT(report.decode.rooflineSeconds, 0);
  EXPECT_LT(report.decode.rooflineSeconds, report.decode.meanSeconds);
  ASSERT_FALSE(report.decode.streams.empty());
  EXPECT_EQ(report.decode.streams[0].name, "gemv");
  ASSERT_EQ(report.decode.kernels.size(), 2u);
  std::string text;
  raw_string_ostream os(text);
  printReport(report, os);
  EXPECT_CONTAINS(text, "decode");
  EXPECT_CONTAINS(text, "roofline");
  EXPECT_CONTAINS(text, "gemv");
  json::Value stats = reportJSON(report, *g, s->session->program());
  ASSERT_TRUE(stats.getAsObject());
  EXPECT_EQ(stats.getAsObject()->getArray("steps")->size(), 5u);
  json::Value trace = traceJSON(s->session->program(), t, g->steps);
  EXPECT_GT(trace.getAsObject()->getArray("traceEvents")->size(), 10u);
}

INSTANTIATE_TEST_SUITE_P(Targets, ModelTest,
                         ::testing::Values("hbm3-pim.json", "gddr6-aim.json"));

TEST(SessionTest, GptqLmHeadIsDequantizedAndPlaced) {
  pimsim::Target t = loadShipped("hbm3-pim.json");
  TempDir dir;
  ModelWeights m = randomWeights(11);
  const int bits = 4, G = 32, perWord = 8, groups = H / G;
  std::mt19937 rng(3);
  std::vector<uint8_t> codes(V * H), zeros(V * groups);
  std::vector<uint16_t> scales(groups * V);
  for (uint8_t &c : codes)
    c = uint8_t(rng() % 16);
  for (uint8_t &z : zeros)
    z = uint8_t(1 + rng() % 15); // stored z - 1 ("gptq" packing)
  for (uint16_t &s : scales)
    s = ref::floatToF16(0.01f + 0.001f * float(rng() % 50));
  std::vector<int32_t> qweight(H / perWord * V, 0), qzeros(groups * V / 8, 0);
  for (int64_t n = 0; n < V; ++n)
    for (int64_t k = 0; k < H; ++k)
      qweight[(k / perWord) * V + n] |=
          int32_t(uint32_t(codes[n * H + k]) << (bits * (k % perWord)));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t n = 0; n < V; ++n)
      qzeros[g * (V / 8) + n / 8] |=
          int32_t(uint32_t(zeros[n * groups + g] - 1) << (bits * (n % 8)));
  for (int64_t n = 0; n < V; ++n)
    for (int64_t k = 0; k < H; ++k) {
      float scale = ref::f16ToFloat(scales[(k / G) * V + n]);
      m.lmHead[n * H + k] =
          scale * float(int32_t(codes[n * H + k]) - zeros[n * groups + k / G]);
    }
  writeSafetensors(
      dir.path(),
      {halfTensor("model.embed_tokens.weight", "BF16", {V, H}, m.embed),
       f32Tensor("model.norm.weight", {H}, m.norm),
       i32Tensor("lm_head.qweight", {H / perWord, V}, qweight),
       i32Tensor("lm_head.qzeros", {groups, V / 8}, qzeros),
       halfTensor("lm_head.scales", "F16", {groups, V}, scales)});
  // As the backend emits it: the IR's name of the quantized linear.
  ModelSpec spec;
  spec.lmHead = "lm_head";
  spec.source = "source=gptq bits=4 group_size=32 sym=false packing=gptq "
                "scale_type=f16";
  auto s = makeSession(t, modelText(t, spec), &dir, true);
  ASSERT_TRUE(bool(s)) << toString(s.takeError());
  auto r = s->session->step(42, 0, true);
  ASSERT_TRUE(bool(r)) << toString(r.takeError());
  std::vector<float> want = naiveLogits(t, m, 42);
  ASSERT_EQ(r->logits.size(), size_t(V));
  for (int64_t n = 0; n < V; ++n)
    ASSERT_EQ(bitsOf(r->logits[n]), bitsOf(want[n])) << "logit " << n;

  // The scales' dtype must be the one compiled for.
  ModelSpec bf16Scales = spec;
  bf16Scales.source = "source=gptq bits=4 group_size=32 sym=false "
                      "packing=gptq scale_type=bf16";
  EXPECT_EQ(sessionError(t, modelText(t, bf16Scales), &dir),
            "checkpoint does not match the program: tensor 'lm_head.scales' "
            "has dtype F16, expected BF16");

  // A wrong scales shape names the component.
  TempDir bad;
  writeSafetensors(
      bad.path(),
      {halfTensor("model.embed_tokens.weight", "BF16", {V, H}, m.embed),
       f32Tensor("model.norm.weight", {H}, m.norm),
       i32Tensor("lm_head.qweight", {H / perWord, V}, qweight),
       i32Tensor("lm_head.qzeros", {groups, V / 8}, qzeros),
       halfTensor("lm_head.scales", "F16", {V, groups}, scales)});
  EXPECT_EQ(sessionError(t, modelText(t, spec), &bad),
            "checkpoint does not match the program: tensor "
            "'lm_head.scales' has shape [128, 2], expected [2, 128]");
}

// K split over two channels (as the backend tiles long rows): one binding
// per half of each row (k0 / k_len), partial sums added on the host.
TEST(SessionTest, KSplitBindingsPlaceEachHalf) {
  pimsim::Target t = loadShipped("hbm3-pim.json");
  TempDir dir;
  ModelWeights m = randomWeights(5);
  writeSafetensors(dir.path(), denseTensors(m));
  const int64_t half = H / 2, rowBytes = t.org.rowBytes();
  auto binding = [&](int64_t ch0, int64_t k0) {
    return formatv(".weight \"lm_head.weight\" region=w format=fp16 "
                   "shape={0}x{1} rows=0-1 bytes={2} layout=gemv_rows n0=0 "
                   "ch0={3} nch=1 row0=0 k_rows=1 k0={4} k_len={5} "
                   "source=dense\n",
                   V, H, 64 * 2 * rowBytes, ch0, k0, half)
        .str();
  };
  json::Value embed = json::Object{
      {"ops",
       json::Array{json::Object{{"op", "embedding"},
                                {"table", tensorRef("model.embed_tokens.weight",
                                                    {V, H})},
                                {"out", buf(kEmbedOff, H, "f32")}},
                   json::Object{{"op", "rms_norm"},
                                {"in", buf(kEmbedOff, H, "f32")},
                                {"out", buf(kNormOff, H, "f32")},
                                {"weight", tensorRef("model.norm.weight", {H})},
                                {"eps", 1e-5}},
                   json::Object{{"op", "pack"},
                                {"in", buf(kNormOff, H, "f32")},
                                {"out", buf(kPackOff, H, "fp16")},
                                {"blocks", 1},
                                {"block", H},
                                {"in_stride", H},
                                {"out_stride", H}}}}};
  json::Value head = json::Object{
      {"ops", json::Array{json::Object{{"op", "add"},
                                       {"a", buf(1024, V, "f32")},
                                       {"b", buf(1536, V, "f32")},
                                       {"out", buf(2048, V, "f32")}},
                          json::Object{{"op", "logits"},
                                       {"in", buf(2048, V, "f32")}}}}};
  std::string text =
      header(t) + ".param pos min=0 max=15\n" + ".param token min=0 max=127\n" +
      formatv(".region w kind=weights channels=0-1 banks=0-63 "
              "rows=0-1 bytes={0}\n",
              2 * 64 * 2 * rowBytes)
          .str() +
      ".region act kind=activations channels=0-1 banks=0-63 "
      "rows=100 bytes=4096\n" +
      formatv(".memory max_context=16 weight_bytes={0}\n", V * H * 2).str() +
      binding(0, 0) + binding(1, half) +
      kernelText("embed kind=embedding", embed) +
      kernelText("head kind=other", head) +
      ".stream gemv channels=0-1\n"
      "  wr_gb offset=0 bytes=64 data=act+512+64*ch\n"
      "  barrier\n"
      "  loop i 2 {\n"
      "    mac_ab row=i col=0 count=2\n"
      "    barrier\n"
      "    rd_acc count=8 data=act+1024+256*i+512*ch\n"
      "    barrier\n"
      "  }\n"
      ".entry decode = embed, barrier, gemv, barrier, head\n";
  auto s = makeSession(t, text, &dir, true);
  ASSERT_TRUE(bool(s)) << toString(s.takeError());
  auto r = s->session->step(17, 0, true);
  ASSERT_TRUE(bool(r)) << toString(r.takeError());
  ASSERT_EQ(r->logits.size(), size_t(V));
  // Naive: each half reduced by its channel (lanes, then the tree), added.
  std::vector<float> e(H), y(H), x(H);
  for (int64_t i = 0; i < H; ++i)
    e[i] = pimsim::bf16ToFloat(m.embed[17 * H + i]);
  ref::rmsNorm(e.data(), 1, H, m.norm.data(), 1e-5f, false, y.data());
  for (int64_t i = 0; i < H; ++i)
    x[i] = fromDevice(toDevice(y[i], false), false);
  for (int64_t n = 0; n < V; ++n) {
    float part[2];
    for (int p = 0; p < 2; ++p) {
      float acc[16] = {};
      for (int64_t k = p * half; k < (p + 1) * half; ++k)
        acc[k % 16] +=
            fromDevice(toDevice(m.lmHead[n * H + k], false), false) * x[k];
      part[p] = tree(acc, 16);
    }
    ASSERT_EQ(bitsOf(r->logits[n]), bitsOf(part[0] + part[1])) << "logit " << n;
  }
  // The footprint counts each half once.
  EXPECT_EQ(modelFootprint(s->session->program()).weightBytes,
            double(V * H * 2));
}

TEST(SessionTest, TimingModeStartsAtAPosition) {
  pimsim::Target t = loadShipped("hbm3-pim.json");
  auto s = makeSession(t, modelText(t), nullptr, false);
  ASSERT_TRUE(bool(s)) << toString(s.takeError());
  GenerateOptions gen;
  gen.maxNewTokens = 3;
  gen.startPos = 12;
  auto g = s->session->generate({1}, gen);
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  ASSERT_EQ(g->steps.size(), 3u);
  EXPECT_EQ(g->steps.front().pos, 12);
  EXPECT_EQ(g->steps.back().pos, 14);
  // Past the context (max pos 15): named.
  gen.startPos = 14;
  auto over = s->session->generate({1}, gen);
  ASSERT_FALSE(bool(over));
  EXPECT_CONTAINS(toString(over.takeError()), "need positions 14..16");
}

//===----------------------------------------------------------------------===//
// Mismatches
//===----------------------------------------------------------------------===//

TEST(MismatchTest, MissingTensor) {
  pimsim::Target t = loadShipped("hbm3-pim.json");
  TempDir dir;
  ModelWeights m = randomWeights(1);
  writeSafetensors(dir.path(), {halfTensor("model.embed_tokens.weight", "BF16",
                                           {V, H}, m.embed),
                                f32Tensor("lm_head.weight", {V, H}, m.lmHead)});
  EXPECT_EQ(sessionError(t, modelText(t), &dir),
            "checkpoint has no tensor 'model.norm.weight' that the program "
            "needs");
}

TEST(MismatchTest, WrongShape) {
  pimsim::Target t = loadShipped("hbm3-pim.json");
  TempDir dir;
  ModelWeights m = randomWeights(1);
  std::vector<TensorData> tensors = denseTensors(m);
  tensors[2] = f32Tensor("lm_head.weight", {H, V}, m.lmHead);
  writeSafetensors(dir.path(), tensors);
  EXPECT_EQ(sessionError(t, modelText(t), &dir),
            "checkpoint tensor 'lm_head.weight' has shape [64, 128], the "
            "program was compiled for [128, 64]");
  // Host tensors too, and every problem is counted.
  tensors[1] = f32Tensor("model.norm.weight", {H / 2},
                         ArrayRef<float>(m.norm).take_front(H / 2));
  writeSafetensors(dir.path(), tensors);
  std::string msg = sessionError(t, modelText(t), &dir);
  EXPECT_CONTAINS(msg, "'lm_head.weight' has shape [64, 128]");
  EXPECT_CONTAINS(msg, "(and 1 more problem)");
}

TEST(MismatchTest, WrongDtype) {
  pimsim::Target t = loadShipped("hbm3-pim.json");
  TempDir dir;
  ModelWeights m = randomWeights(1);
  std::vector<TensorData> tensors = denseTensors(m);
  std::vector<int32_t> ints(V * H);
  tensors[2] = i32Tensor("lm_head.weight", {V, H}, ints);
  writeSafetensors(dir.path(), tensors);
  EXPECT_EQ(sessionError(t, modelText(t), &dir),
            "checkpoint tensor 'lm_head.weight' has dtype I32, expected F32, "
            "F16, BF16 or F64");
}

TEST(MismatchTest, WrongTarget) {
  pimsim::Target hbm = loadShipped("hbm3-pim.json");
  pimsim::Target aim = loadShipped("gddr6-aim.json");
  // A program for gddr6-aim on an hbm3-pim device.
  std::string msg = sessionError(hbm, modelText(aim, ModelSpec{2}), nullptr,
                                 /*functional=*/false);
  EXPECT_CONTAINS(msg, "program was compiled for target 'gddr6-aim' (1 stack "
                       "x 32 channels x 16 banks");
  EXPECT_CONTAINS(msg, "this target is 'hbm3-pim' (5 stacks x 16 channels x "
                       "64 banks");
  // Same organisation, another name: refused unless allowed.
  std::string text = modelText(hbm, {}, "hbm3-pim-npc");
  EXPECT_CONTAINS(sessionError(hbm, text, nullptr, false),
                  "--allow-target-mismatch");
  SessionOptions allow;
  allow.allowTargetNameMismatch = true;
  EXPECT_EQ(sessionError(hbm, text, nullptr, false, allow), "(no error)");
}

TEST(MismatchTest, FunctionalNeedsWeights) {
  pimsim::Target t = loadShipped("hbm3-pim.json");
  EXPECT_CONTAINS(sessionError(t, modelText(t), nullptr, true),
                  "needs the checkpoint's weights");
}

TEST(MismatchTest, BadLayoutParams) {
  pimsim::Target t = loadShipped("hbm3-pim.json");
  ModelSpec spec;
  // The layout's values are checked when the program is read ...
  spec.source = "source=gptq bits=3 group_size=32 sym=false packing=gptq";
  EXPECT_CONTAINS(sessionError(t, modelText(t, spec), nullptr, false),
                  "gemv_rows: bits is 3, expected 4 or 8");
  // ... and against the tensor's shape when the session places it.
  spec.source = "source=gptq bits=4 group_size=48 sym=false packing=gptq";
  EXPECT_EQ(sessionError(t, modelText(t, spec), nullptr, false),
            "weight 'lm_head.weight': 'source': group_size 48 does not divide "
            "K = 64");
  // A K of INT64_MAX: no arithmetic on it overflows, the rows do not fit.
  ModelSpec huge;
  huge.lmShape = {V, INT64_MAX};
  EXPECT_CONTAINS(sessionError(t, modelText(t, huge), nullptr, false),
                  "weight 'lm_head.weight': k_rows 1 is less than the");
  huge.source = "source=gptq bits=4 group_size=-1 sym=false packing=gptq";
  EXPECT_CONTAINS(sessionError(t, modelText(t, huge), nullptr, false),
                  "does not fill int32 words");
}

TEST(MismatchTest, TokenOutsideVocabulary) {
  pimsim::Target t = loadShipped("hbm3-pim.json");
  auto s = makeSession(t, modelText(t), nullptr, false);
  ASSERT_TRUE(bool(s));
  auto r = s->session->step(V, 0, true);
  ASSERT_FALSE(bool(r));
  EXPECT_CONTAINS(toString(r.takeError()), "token 128 is outside");
  auto p = s->session->step(0, 16, true);
  ASSERT_FALSE(bool(p));
  EXPECT_CONTAINS(toString(p.takeError()), "position 16 is outside");
}

//===----------------------------------------------------------------------===//
// Host ops, one at a time
//===----------------------------------------------------------------------===//

/// A program whose kernel 0 runs `ops`; act is 8 KiB. Parameters: pos,
/// token, and slot = pos % 4.
std::string opsProgram(const pimsim::Target &t, json::Array ops) {
  json::Value params = json::Object{{"ops", std::move(ops)}};
  return header(t) +
         ".param pos min=0 max=63\n.param token min=0 max=127\n"
         ".param slot src=pos mod=4 min=0 max=3\n"
         ".region act kind=activations channels=0 banks=0-63 rows=100 "
         "bytes=8192\n" +
         kernelText("k kind=other", params) + ".entry decode = k\n";
}

std::string parseError(std::initializer_list<json::Value> ops);

class HostOpTest : public ::testing::Test {
protected:
  void SetUp() override { target = loadShipped("hbm3-pim.json"); }

  /// Parses `ops` into a program on a functional device, binds `tensors`.
  void load(std::initializer_list<json::Value> ops,
            const std::vector<TensorData> &tensors = {}) {
    program = assemble(opsProgram(target, json::Array(ops)));
    auto parsed = HostOps::parse(program);
    ASSERT_TRUE(bool(parsed)) << toString(parsed.takeError());
    hostOps = std::make_unique<HostOps>(std::move(*parsed));
    if (!tensors.empty()) {
      writeSafetensors(dir.path(), tensors);
      store = openStore(dir);
      ASSERT_TRUE(store);
      ASSERT_FALSE(bool(hostOps->bindTensors(*store)));
    }
    device = std::make_unique<SimDevice>(target, true);
    ASSERT_FALSE(bool(device->loadProgram(program)));
  }
  void writeF32(int64_t off, ArrayRef<float> v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    ASSERT_FALSE(bool(device->writeRegion("act", off, b)));
  }
  std::vector<float> readF32(int64_t off, int64_t n) {
    auto b = device->readRegion("act", off, n * 4);
    EXPECT_TRUE(bool(b));
    std::vector<float> v(n);
    if (b)
      std::memcpy(v.data(), b->data(), n * 4);
    return v;
  }
  std::vector<uint16_t> readHalves(int64_t off, int64_t n) {
    auto b = device->readRegion("act", off, n * 2);
    EXPECT_TRUE(bool(b));
    std::vector<uint16_t> v(n);
    for (int64_t i = 0; b && i < n; ++i)
      v[i] = uint16_t((*b)[2 * i] | (*b)[2 * i + 1] << 8);
    return v;
  }
  /// Runs kernel 0 at (pos, token).
  Error run(int64_t pos, int64_t token) {
    auto values =
        pimsim::resolveParams(program, {{"pos", pos}, {"token", token}});
    if (!values)
      return values.takeError();
    return hostOps->run(*device, 0, *values);
  }
  std::vector<float> random(size_t n, uint32_t seed, float lo = -2,
                            float hi = 2) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (float &x : v)
      x = u(rng);
    return v;
  }

  pimsim::Target target;
  pimsim::Program program;
  std::unique_ptr<HostOps> hostOps;
  std::unique_ptr<SimDevice> device;
  TempDir dir;
  std::unique_ptr<ckpt::WeightStore> store;
};

TEST_F(HostOpTest, Embedding) {
  std::vector<uint16_t> table;
  for (float v : random(16 * 8, 1))
    table.push_back(ref::floatToF16(v));
  load({json::Object{{"op", "embedding"},
                     {"table", tensorRef("emb", {16, 8})},
                     {"out", buf(64, 8, "f32")}}},
       {halfTensor("emb", "F16", {16, 8}, table)});
  ASSERT_FALSE(bool(run(0, 13)));
  std::vector<float> got = readF32(64, 8);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(bitsOf(got[i]), bitsOf(pimsim::fp16ToFloat(table[13 * 8 + i])));
  EXPECT_EQ(hostOps->embeddingRows(), 16);
  // A token past the table.
  Error e = run(0, 16);
  ASSERT_TRUE(bool(e));
  EXPECT_CONTAINS(toString(std::move(e)), "token 16 is outside the vocabulary");
}

TEST_F(HostOpTest, RmsNormLlamaAndGemma) {
  const int D = 16, groups = 2;
  std::vector<float> x = random(D * groups, 2), w = random(D, 3, 0.5, 1.5);
  for (bool gemma : {false, true}) {
    load({json::Object{{"op", "rms_norm"},
                       {"in", buf(0, D * groups, "f32")},
                       {"out", buf(512, D * groups, "f32")},
                       {"weight", tensorRef("norm", {D})},
                       {"eps", 1e-6},
                       {"groups", groups},
                       {"gemma", gemma}}},
         {f32Tensor("norm", {D}, w)});
    writeF32(0, x);
    ASSERT_FALSE(bool(run(0, 0)));
    std::vector<float> got = readF32(512, D * groups);
    for (int g = 0; g < groups; ++g) {
      double ss = 0;
      for (int i = 0; i < D; ++i)
        ss += double(x[g * D + i]) * x[g * D + i];
      double inv = 1 / std::sqrt(ss / D + 1e-6);
      for (int i = 0; i < D; ++i) {
        double want = x[g * D + i] * inv * (gemma ? 1 + w[i] : w[i]);
        // f32 vs double: a few ulps.
        EXPECT_NEAR(got[g * D + i], want, 1e-5 * std::fabs(want) + 1e-7)
            << "gemma " << gemma << " group " << g << " i " << i;
      }
    }
  }
}

TEST_F(HostOpTest, AddBufferAndTensor) {
  std::vector<float> a = random(8, 4), b = random(8, 5), bias = random(8, 6);
  load({json::Object{{"op", "add"},
                     {"a", buf(0, 8, "f32")},
                     {"b", buf(32, 8, "f32")},
                     {"out", buf(64, 8, "f32")}},
        json::Object{{"op", "add"},
                     {"a", buf(64, 8, "f32")},
                     {"b", tensorRef("bias", {8})},
                     {"out", buf(96, 8, "bf16")}}},
       {f32Tensor("bias", {8}, bias)});
  writeF32(0, a);
  writeF32(32, b);
  ASSERT_FALSE(bool(run(0, 0)));
  std::vector<float> sum = readF32(64, 8);
  std::vector<uint16_t> out = readHalves(96, 8);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(bitsOf(sum[i]), bitsOf(a[i] + b[i]));
    EXPECT_EQ(out[i], pimsim::floatToBf16((a[i] + b[i]) + bias[i]));
  }
}

// (2.3) An MoE slot's bias: row `row` (a parameter) of a [rows, n] tensor.
TEST_F(HostOpTest, AddSelectsATensorRow) {
  std::vector<float> a = random(8, 4), bias = random(4 * 8, 6);
  load({json::Object{{"op", "add"},
                     {"a", buf(0, 8, "f32")},
                     {"b", tensorRef("bias", {4, 8})},
                     {"out", buf(64, 8, "f32")},
                     {"row", "slot"}}},
       {f32Tensor("bias", {4, 8}, bias)});
  writeF32(0, a);
  for (int pos : {0, 2, 7}) { // slot = pos % 4
    ASSERT_FALSE(bool(run(pos, 0)));
    std::vector<float> got = readF32(64, 8);
    for (int i = 0; i < 8; ++i)
      EXPECT_EQ(bitsOf(got[i]), bitsOf(a[i] + bias[(pos % 4) * 8 + i])) << pos;
  }
}

TEST_F(HostOpTest, RopeDefaultAndInterleaved) {
  const int heads = 2, hd = 8;
  std::vector<float> x = random(heads * hd, 7);
  for (bool interleaved : {false, true}) {
    json::Object rope{{"kind", "default"},
                      {"interleaved", interleaved},
                      {"rotary_dim", hd},
                      {"theta", 10000.0}};
    load({json::Object{{"op", "rope"},
                       {"in", buf(0, heads * hd, "f32")},
                       {"out", buf(256, heads * hd, "f32")},
                       {"heads", heads},
                       {"head_dim", hd},
                       {"rope", std::move(rope)}}});
    writeF32(0, x);
    const int pos = 5;
    ASSERT_FALSE(bool(run(pos, 0)));
    std::vector<float> got = readF32(256, heads * hd);
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < hd / 2; ++i) {
        double freq = std::pow(10000.0, -2.0 * i / hd);
        double c = std::cos(pos * freq), s = std::sin(pos * freq);
        int ia = interleaved ? 2 * i : i,
            ib = interleaved ? 2 * i + 1 : i + hd / 2;
        double a = x[h * hd + ia], b = x[h * hd + ib];
        EXPECT_NEAR(got[h * hd + ia], a * c - b * s, 1e-5);
        EXPECT_NEAR(got[h * hd + ib], b * c + a * s, 1e-5);
      }
  }
}

TEST_F(HostOpTest, GatedActivations) {
  std::vector<float> gate = random(8, 8), up = random(8, 9);
  for (StringRef act : {"silu", "gelu", "gelu_tanh"}) {
    load({json::Object{{"op", "gated_act"},
                       {"gate", buf(0, 8, "f32")},
                       {"up", buf(32, 8, "f32")},
                       {"out", buf(64, 8, "f32")},
                       {"act", act}}});
    writeF32(0, gate);
    writeF32(32, up);
    ASSERT_FALSE(bool(run(0, 0)));
    std::vector<float> got = readF32(64, 8);
    for (int i = 0; i < 8; ++i) {
      double g = gate[i], a;
      if (act == "silu")
        a = g / (1 + std::exp(-g));
      else if (act == "gelu")
        a = 0.5 * g * (1 + std::erf(g / std::sqrt(2.0)));
      else
        a = 0.5 * g *
            (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g)));
      EXPECT_NEAR(got[i], a * up[i], 1e-5) << act.str() << " " << i;
    }
  }
  // (2.3) gpt-oss's clamped SwiGLU: g = min(gate, L), u = clamp(up, -L, L),
  // (u + 1) * g * sigmoid(alpha g); L = 0.5 clamps most of these values.
  load({json::Object{{"op", "gated_act"},
                     {"gate", buf(0, 8, "f32")},
                     {"up", buf(32, 8, "f32")},
                     {"out", buf(64, 8, "f32")},
                     {"act", "clamped_swiglu"},
                     {"limit", 0.5},
                     {"alpha", 1.702}}});
  writeF32(0, gate);
  writeF32(32, up);
  ASSERT_FALSE(bool(run(0, 0)));
  std::vector<float> got = readF32(64, 8);
  for (int i = 0; i < 8; ++i) {
    double g = std::min(double(gate[i]), 0.5);
    double u = std::clamp(double(up[i]), -0.5, 0.5);
    double want = (u + 1) * g / (1 + std::exp(-1.702 * g));
    EXPECT_NEAR(got[i], want, 1e-6) << i;
  }
}

TEST_F(HostOpTest, PackReplicatesScalesAndKeepsTheRest) {
  // blocks=2, block=3, in_stride=4, out_stride=8, replicate=2, scale=0.5.
  std::vector<float> in = random(8, 10);
  load({json::Object{{"op", "pack"},
                     {"in", buf(0, 8, "f32")},
                     {"out", buf(64, 16, "fp16")},
                     {"blocks", 2},
                     {"block", 3},
                     {"in_stride", 4},
                     {"out_stride", 8},
                     {"replicate", 2},
                     {"scale", 0.5}}});
  writeF32(0, in);
  std::vector<uint8_t> marker(32, 0xAB);
  ASSERT_FALSE(bool(device->writeRegion("act", 64, marker)));
  ASSERT_FALSE(bool(run(0, 0)));
  std::vector<uint16_t> out = readHalves(64, 16);
  std::vector<uint16_t> want(16, 0xABAB);
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 2; ++r)
      for (int e = 0; e < 3; ++e)
        want[b * 8 + r * 3 + e] = pimsim::floatToFp16(0.5f * in[b * 4 + e]);
  EXPECT_EQ(out, want);
}

// (2.3) Llama 4's query temperature: q times log1p(floor((pos + 1) / F)) a
// + 1 (the reference's attentionTemperature), then the scale.
TEST_F(HostOpTest, PackScalesByThePositionsTemperature) {
  std::vector<float> in = random(4, 11);
  load({json::Object{{"op", "pack"},
                     {"in", buf(0, 4, "f32")},
                     {"out", buf(64, 4, "bf16")},
                     {"blocks", 1},
                     {"block", 4},
                     {"in_stride", 4},
                     {"out_stride", 4},
                     {"scale", 0.5},
                     {"position", "pos"},
                     {"temperature_floor", 4},
                     {"temperature_scale", 0.25}}});
  writeF32(0, in);
  for (int pos : {0, 2, 3, 11}) {
    ASSERT_FALSE(bool(run(pos, 0)));
    float t = pimc::ref::attentionTemperature(pos, 4, 0.25f);
    EXPECT_EQ(t, pos < 3 ? 1.0f : std::log1p(float((pos + 1) / 4)) * 0.25f + 1);
    std::vector<uint16_t> want;
    for (float x : in)
      want.push_back(pimsim::floatToBf16(0.5f * (t * x)));
    EXPECT_EQ(readHalves(64, 4), want) << "pos " << pos;
  }
}

TEST_F(HostOpTest, VStageFillsOneLanePerPosition) {
  const int heads = 2, hd = 3, lanes = 4;
  load({json::Object{{"op", "v_stage"},
                     {"in", buf(0, heads * hd, "f32")},
                     {"out", buf(256, heads * hd * lanes, "bf16")},
                     {"heads", heads},
                     {"head_dim", hd},
                     {"lanes", lanes},
                     {"param", "slot"}}});
  std::vector<uint8_t> marker(heads * hd * lanes * 2, 0xCD);
  ASSERT_FALSE(bool(device->writeRegion("act", 256, marker)));
  std::vector<std::vector<float>> values;
  for (int pos = 0; pos < 6; ++pos) {
    values.push_back(random(heads * hd, 20 + pos));
    writeF32(0, values.back());
    ASSERT_FALSE(bool(run(pos, 0)));
    std::vector<uint16_t> got = readHalves(256, heads * hd * lanes);
    // Lane l holds the value of the latest position p <= pos with p % 4 ==
    // l in the current group of four; lanes after pos % 4 are zero.
    int group = pos / lanes * lanes;
    for (int i = 0; i < heads * hd; ++i)
      for (int l = 0; l < lanes; ++l) {
        uint16_t want =
            group + l <= pos ? pimsim::floatToBf16(values[group + l][i]) : 0;
        EXPECT_EQ(got[i * lanes + l], want)
            << "pos " << pos << " element " << i << " lane " << l;
      }
  }
}

TEST_F(HostOpTest, SumAddsPartsInOrder) {
  // Three parts of 5 elements, 8 apart.
  std::vector<float> in = random(24, 30, -1e4, 1e4);
  load({json::Object{{"op", "sum"},
                     {"in", buf(0, 21, "f32")},
                     {"out", buf(128, 5, "f32")},
                     {"parts", 3},
                     {"stride", 8}}});
  writeF32(0, in);
  ASSERT_FALSE(bool(run(0, 0)));
  std::vector<float> got = readF32(128, 5);
  for (int n = 0; n < 5; ++n)
    EXPECT_EQ(bitsOf(got[n]), bitsOf((in[n] + in[8 + n]) + in[16 + n]));
  EXPECT_EQ(parseError({json::Object{{"op", "sum"},
                                     {"in", buf(0, 20, "f32")},
                                     {"out", buf(128, 5, "f32")},
                                     {"parts", 3},
                                     {"stride", 8}}}),
            "t.s: kernel 0 (k), op 0 (sum): reads 21 elements of 'in', which "
            "has 20");
  // (2.3) With a weight per part (MoE's combine): from 0, in part order.
  std::vector<float> w = random(3, 31);
  load({json::Object{{"op", "sum"},
                     {"in", buf(0, 21, "f32")},
                     {"out", buf(128, 5, "f32")},
                     {"parts", 3},
                     {"stride", 8},
                     {"weights", buf(256, 3, "f32")}}});
  writeF32(0, in);
  writeF32(256, w);
  ASSERT_FALSE(bool(run(0, 0)));
  got = readF32(128, 5);
  for (int n = 0; n < 5; ++n)
    EXPECT_EQ(
        bitsOf(got[n]),
        bitsOf(((0.0f + w[0] * in[n]) + w[1] * in[8 + n]) + w[2] * in[16 + n]));
  EXPECT_EQ(parseError({json::Object{{"op", "sum"},
                                     {"in", buf(0, 21, "f32")},
                                     {"out", buf(128, 5, "f32")},
                                     {"parts", 3},
                                     {"stride", 8},
                                     {"weights", buf(256, 2, "f32")}}}),
            "t.s: kernel 0 (k), op 0 (sum): 'weights' has 2 elements, parts "
            "is 3");
}

TEST_F(HostOpTest, MoeRouteSelectsExpertsAsTheReference) {
  // 8 experts, top 2: Mixtral's softmax-then-top-k with renormalisation,
  // and gpt-oss-like top-k-then-softmax, and sigmoid scores scaled
  // (DeepSeek-like): experts ascending as i32, weights bit for bit.
  std::vector<float> logits = random(8, 40);
  struct Case {
    bool sigmoid, topkFirst, renormalize;
    double scale;
  };
  for (Case c : {Case{false, false, true, 1.0}, Case{false, true, false, 1.0},
                 Case{true, false, true, 2.5}}) {
    load({json::Object{{"op", "moe_route"},
                       {"in", buf(0, 8, "f32")},
                       {"out", buf(64, 2, "f32")},
                       {"experts", buf(96, 2, "i32")},
                       {"top_k", 2},
                       {"sigmoid", c.sigmoid},
                       {"topk_first", c.topkFirst},
                       {"renormalize", c.renormalize},
                       {"scale", c.scale}}});
    writeF32(0, logits);
    ASSERT_FALSE(bool(run(0, 0)));
    ref::MoEParams p;
    p.topK = 2;
    p.sigmoidScoring = c.sigmoid;
    p.topkThenScore = c.topkFirst;
    p.renormalize = c.renormalize;
    p.routedScalingFactor = float(c.scale);
    ref::MoERoute want = ref::routeToken(logits.data(), 8, p);
    auto experts = device->readRegion("act", 96, 8);
    ASSERT_TRUE(bool(experts));
    std::vector<float> weights = readF32(64, 2);
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(decodeElement(ElemFormat::I32, experts->data() + 4 * j),
                float(want.experts[j]));
      EXPECT_EQ(bitsOf(weights[j]), bitsOf(want.weights[j])) << j;
    }
    EXPECT_LT(want.experts[0], want.experts[1]);
  }
  EXPECT_EQ(parseError({json::Object{{"op", "moe_route"},
                                     {"in", buf(0, 8, "f32")},
                                     {"out", buf(64, 2, "f32")},
                                     {"experts", buf(96, 2, "f32")},
                                     {"top_k", 2}}}),
            "t.s: kernel 0 (k), op 0 (moe_route): 'experts' must be i32, not "
            "f32");
}

TEST_F(HostOpTest, MoeRouteAppendsTheSharedExpertsGate) {
  // Qwen2-MoE: the shared expert's weight sigmoid(gate logit) after the
  // top_k routed weights, bit for bit as the reference's sigmoid.
  std::vector<float> logits = random(8, 41);
  load({json::Object{{"op", "moe_route"},
                     {"in", buf(0, 8, "f32")},
                     {"out", buf(64, 3, "f32")},
                     {"experts", buf(96, 2, "i32")},
                     {"top_k", 2},
                     {"shared", buf(128, 1, "f32")}}});
  writeF32(0, logits);
  writeF32(128, {-0.75f});
  ASSERT_FALSE(bool(run(0, 0)));
  ref::MoEParams p;
  p.topK = 2;
  ref::MoERoute want = ref::routeToken(logits.data(), 8, p);
  std::vector<float> weights = readF32(64, 3);
  EXPECT_EQ(bitsOf(weights[0]), bitsOf(want.weights[0]));
  EXPECT_EQ(bitsOf(weights[1]), bitsOf(want.weights[1]));
  EXPECT_EQ(bitsOf(weights[2]), bitsOf(ref::sigmoid(-0.75f)));
  EXPECT_EQ(parseError({json::Object{{"op", "moe_route"},
                                     {"in", buf(0, 8, "f32")},
                                     {"out", buf(64, 2, "f32")},
                                     {"experts", buf(96, 2, "i32")},
                                     {"top_k", 2},
                                     {"shared", buf(128, 1, "f32")}}}),
            "t.s: kernel 0 (k), op 0 (moe_route): 'out' has 2 elements, "
            "top_k + 1 is 3");
}

TEST_F(HostOpTest, AttnCombineMergesPartialSoftmaxes) {
  // 2 heads of block 4, 3 parts of 4 keys: part p holds keys 4p .. 4p+3.
  // Each part's o_p is normalised by its own sum; the merge must equal one
  // softmax over every live key (keys <= pos), and parts past pos are
  // ignored (their stats are NaN here). (2.3) With sinks (gpt-oss): one
  // more logit z_h per head, whose weight is dropped: out = sum_k exp(s_k -
  // M) v_k / (exp(z_h - M) + sum_k exp(s_k - M)), also for one live part.
  const int heads = 2, block = 4, parts = 3, keys = 4, stride = 8;
  std::vector<float> score = random(heads * parts * keys, 40, -6, 6);
  std::vector<float> v = random(heads * parts * keys * block, 41);
  const std::vector<float> sinks = {1.5f, -0.75f};
  // exp(s_k - m) for the keys [k0, k1) of head h, and their weighted values.
  auto softmaxOver = [&](int h, int k0, int k1, float m, float &l, float *o) {
    for (int k = k0; k < k1; ++k)
      l += std::exp(score[h * parts * keys + k] - m);
    for (int j = 0; j < block; ++j) {
      o[j] = 0;
      for (int k = k0; k < k1; ++k)
        o[j] += std::exp(score[h * parts * keys + k] - m) *
                v[(h * parts * keys + k) * block + j];
    }
  };
  auto maxOver = [&](int h, int k0, int k1, float m) {
    for (int k = k0; k < k1; ++k)
      m = std::max(m, score[h * parts * keys + k]);
    return m;
  };
  for (bool withSinks : {false, true}) {
    json::Object op{{"op", "attn_combine"},
                    {"in", buf(0, (parts - 1) * stride + heads * block, "f32")},
                    {"stats", buf(512, parts * 2 * heads, "f32")},
                    {"out", buf(768, heads * block, "f32")},
                    {"parts", parts},
                    {"stride", stride},
                    {"heads", heads},
                    {"block", block},
                    {"stats_stride", 2 * heads},
                    {"part_keys", keys},
                    {"param", "pos"}};
    std::vector<TensorData> tensors;
    if (withSinks) {
      op["sinks"] = tensorRef("sinks", {heads});
      tensors.push_back(f32Tensor("sinks", {heads}, sinks));
    }
    load({std::move(op)}, tensors);
    for (int pos : {2, 5, 11}) {
      int n = pos + 1;
      std::vector<float> in((parts - 1) * stride + heads * block, 0);
      std::vector<float> st(parts * 2 * heads, NAN);
      for (int p = 0; p * keys < n; ++p)
        for (int h = 0; h < heads; ++h) {
          int k0 = p * keys, k1 = std::min(n, k0 + keys);
          float m = maxOver(h, k0, k1, -INFINITY), l = 0;
          float *o = &in[p * stride + h * block];
          softmaxOver(h, k0, k1, m, l, o);
          for (int j = 0; j < block; ++j)
            o[j] /= l;
          st[p * 2 * heads + 2 * h] = m;
          st[p * 2 * heads + 2 * h + 1] = l;
        }
      writeF32(0, in);
      writeF32(512, st);
      ASSERT_FALSE(bool(run(pos, 0))) << pos;
      std::vector<float> got = readF32(768, heads * block);
      if (n <= keys && !withSinks) { // one live part: its output, bit for bit
        for (int i = 0; i < heads * block; ++i)
          EXPECT_EQ(bitsOf(got[i]), bitsOf(in[i])) << "pos " << pos;
      }
      for (int h = 0; h < heads; ++h) {
        float m = maxOver(h, 0, n, withSinks ? sinks[h] : -INFINITY), l = 0;
        float o[block];
        softmaxOver(h, 0, n, m, l, o);
        if (withSinks)
          l += std::exp(sinks[h] - m);
        for (int j = 0; j < block; ++j)
          EXPECT_NEAR(got[h * block + j], o[j] / l,
                      1e-5f * (1 + std::fabs(o[j] / l)))
              << (withSinks ? "sinks, " : "") << "pos " << pos << " head " << h
              << " j " << j;
      }
    }
  }
  EXPECT_EQ(parseError({json::Object{{"op", "attn_combine"},
                                     {"in", buf(0, 23, "f32")},
                                     {"stats", buf(512, 12, "f32")},
                                     {"out", buf(768, 8, "f32")},
                                     {"parts", 3},
                                     {"stride", 8},
                                     {"heads", 2},
                                     {"block", 4},
                                     {"stats_stride", 4},
                                     {"part_keys", 4},
                                     {"param", "pos"}}}),
            "t.s: kernel 0 (k), op 0 (attn_combine): reads 24 elements of "
            "'in', which has 23");
  EXPECT_EQ(parseError({json::Object{{"op", "attn_combine"},
                                     {"in", buf(0, 24, "f32")},
                                     {"stats", buf(512, 12, "f32")},
                                     {"out", buf(768, 8, "f32")},
                                     {"parts", 3},
                                     {"stride", 8},
                                     {"heads", 2},
                                     {"block", 4},
                                     {"stats_stride", 4},
                                     {"part_keys", 4},
                                     {"param", "where"}}}),
            "t.s:9:111: 'param': 'where' is not a .param of the program");
}

TEST(HostOpParseTest, CallsCheckTheirBindings) {
  auto call = [](json::Array args, json::Array results) {
    return json::Object{{"op", "call"},
                        {"source", "llm.gelu"},
                        {"mlir", "module {}"},
                        {"args", std::move(args)},
                        {"results", std::move(results)},
                        {"weight_bytes", 0},
                        {"flops", 0}};
  };
  auto value = [](json::Value b, std::vector<int64_t> shape) {
    return json::Object{{"buffer", std::move(b)},
                        {"shape", json::Array(shape)}};
  };
  EXPECT_EQ(parseError({call(json::Array{value(buf(0, 4, "f32"), {1, 4})},
                             json::Array{value(buf(64, 4, "f32"), {1, 4})})}),
            "(no error)");
  EXPECT_EQ(parseError({call(json::Array{value(buf(0, 4, "f32"), {1, 3})},
                             json::Array{value(buf(64, 4, "f32"), {1, 4})})}),
            "t.s: kernel 0 (k), op 0 (call): 'args[0]': shape [1, 3] does "
            "not have the buffer's 4 elements");
  EXPECT_EQ(parseError({call(json::Array{json::Object{
                                 {"param", "where"}, {"shape", json::Array{}}}},
                             json::Array{value(buf(64, 4, "f32"), {1, 4})})}),
            "t.s:9:33: 'arg': expected FORMAT[ELEMENTS]@OFFSET, pos or token, "
            "optionally with :DIMS, found 'where'");
  EXPECT_EQ(parseError({call(json::Array{}, json::Array{json::Object{
                                                {"param", "pos"},
                                                {"shape", json::Array{}}}})}),
            "t.s:9:15: 'result': expected FORMAT[ELEMENTS]@OFFSET, optionally "
            "with :DIMS, found 'pos'");
  json::Object noText = call(json::Array{}, json::Array{});
  noText.erase("mlir");
  EXPECT_EQ(parseError({std::move(noText)}), "t.s:9:3: call needs 'mlir='");
}

TEST_F(HostOpTest, LogitsMarksTheBuffer) {
  load({json::Object{{"op", "logits"}, {"in", buf(128, 32, "f32")}}});
  ASSERT_TRUE(hostOps->logits().has_value());
  EXPECT_EQ(hostOps->logits()->offset, 128);
  EXPECT_EQ(hostOps->logits()->elements, 32);
  EXPECT_FALSE(bool(run(0, 0)));
}

/// The parse error of a one-kernel program with `ops`.
std::string parseError(std::initializer_list<json::Value> ops) {
  pimsim::Target t = loadShipped("hbm3-pim.json");
  auto p = pimsim::parseProgramText(opsProgram(t, json::Array(ops)), "t.s");
  if (!p)
    return toString(p.takeError());
  auto parsed = HostOps::parse(*p);
  if (parsed)
    return "(no error)";
  return toString(parsed.takeError());
}

TEST(HostOpParseTest, ErrorsNameTheLineOrTheKernelAndOp) {
  // The text form's errors name the line and column; the checks that need
  // the program (pimsim::hostOpProblems) name the kernel and the op.
  EXPECT_EQ(
      parseError({json::Object{{"op", "logits"}, {"in", buf(0, 4, "f32")}},
                  json::Object{{"op", "softmax"}}}),
      "t.s:10:3: unknown host op 'softmax' (host ops: embedding, rms_norm, "
      "add, rope, gated_act, pack, v_stage, sum, linear, logits, "
      "attn_combine, call, layer_norm, moe_route)");
  EXPECT_EQ(parseError({json::Object{{"op", "rms_norm"},
                                     {"in", buf(0, 4, "f32")},
                                     {"out", buf(0, 4, "f32")},
                                     {"weight", tensorRef("w", {4})}}}),
            "t.s:10:3: rms_norm needs 'eps='");
  EXPECT_EQ(
      parseError({json::Object{{"op", "logits"}, {"in", buf(0, 4, "f64")}}}),
      "t.s:9:13: 'in': expected FORMAT[ELEMENTS]@OFFSET (f32[4096]@0), found "
      "'f64[4]@0'");
  EXPECT_EQ(
      parseError({json::Object{{"op", "logits"}, {"in", buf(8190, 4, "f32")}}}),
      "t.s: kernel 0 (k), op 0 (logits): 'in' covers act bytes [8190, 8206), "
      "outside region 'act' (8192 bytes)");
  EXPECT_EQ(parseError({json::Object{
                {"op", "logits"}, {"in", buf(0, 4, "f32")}, {"extra", 1}}}),
            "t.s:9:16: unknown key 'extra' for logits (expected in)");
  EXPECT_EQ(parseError({json::Object{{"op", "add"},
                                     {"a", buf(0, 4, "f32")},
                                     {"b", buf(16, 5, "f32")},
                                     {"out", buf(64, 4, "f32")}}}),
            "t.s: kernel 0 (k), op 0 (add): 'b' has 5 elements, 'a' is 4");
  EXPECT_EQ(parseError({json::Object{{"op", "v_stage"},
                                     {"in", buf(0, 4, "f32")},
                                     {"out", buf(64, 16, "fp16")},
                                     {"heads", 1},
                                     {"head_dim", 4},
                                     {"lanes", 4},
                                     {"param", "nope"}}}),
            "t.s:9:72: 'param': 'nope' is not a .param of the program");
  EXPECT_EQ(parseError({json::Object{{"op", "rope"},
                                     {"in", buf(0, 8, "f32")},
                                     {"out", buf(0, 8, "f32")},
                                     {"heads", 1},
                                     {"head_dim", 8},
                                     {"rope", json::Object{{"kind", "ntk"}}}}}),
            "t.s:9:57: 'rope': 'ntk' is not a rope kind (default, linear, "
            "dynamic, yarn, llama3, longrope)");
  // The reference's rotary rules are the runtime's to check.
  EXPECT_EQ(parseError({json::Object{{"op", "rope"},
                                     {"in", buf(0, 8, "f32")},
                                     {"out", buf(0, 8, "f32")},
                                     {"heads", 1},
                                     {"head_dim", 8},
                                     {"rope", json::Object{{"kind", "default"},
                                                           {"rotary_dim", 8},
                                                           {"theta", -1.0}}}}}),
            "host kernel 'k' (0), op 0 (rope): 'rope': theta must be positive, "
            "got -1.00");
  EXPECT_EQ(
      parseError({json::Object{{"op", "logits"}, {"in", buf(0, 4, "f32")}},
                  json::Object{{"op", "logits"}, {"in", buf(0, 4, "f32")}}}),
      "the program has 2 'logits' ops (host kernel 'k' (0), op 0; host "
      "kernel 'k' (0), op 1); expected one");
}

// A program built in memory is checked again when its ops are loaded.
TEST(HostOpParseTest, LoadingChecksTheOpsAgain) {
  pimsim::Target t = loadShipped("hbm3-pim.json");
  pimsim::Program p = assemble(opsProgram(
      t,
      json::Array{json::Object{{"op", "logits"}, {"in", buf(0, 4, "f32")}}}));
  p.kernels[0].ops[0].in.elements = 4096;
  auto parsed = HostOps::parse(p);
  ASSERT_FALSE(bool(parsed));
  EXPECT_EQ(toString(parsed.takeError()),
            "host kernel 'k' (0), op 0 (logits): 'in' covers act bytes [0, "
            "16384), outside region 'act' (8192 bytes)");
}

//===----------------------------------------------------------------------===//
// Sampling
//===----------------------------------------------------------------------===//

std::vector<int64_t> draw(SamplingOptions o, ArrayRef<float> logits, int n) {
  Sampler s(o);
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) {
    auto t = s.sample(logits);
    EXPECT_TRUE(bool(t));
    out.push_back(t ? *t : -1);
  }
  return out;
}

TEST(SamplingTest, DeterministicAndTopKOneIsGreedy) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0, 2);
  std::vector<float> logits(1000);
  for (float &l : logits)
    l = nd(rng);
  int64_t best = argmax(logits);

  SamplingOptions greedy;
  EXPECT_EQ(draw(greedy, logits, 3), std::vector<int64_t>(3, best));

  SamplingOptions o;
  o.temperature = 1.0;
  o.seed = 1234;
  std::vector<int64_t> a = draw(o, logits, 50), b = draw(o, logits, 50);
  EXPECT_EQ(a, b);
  o.seed = 99;
  EXPECT_NE(draw(o, logits, 50), a);
  EXPECT_GT(std::set<int64_t>(a.begin(), a.end()).size(), 5u);

  o.topK = 1;
  EXPECT_EQ(draw(o, logits, 20), std::vector<int64_t>(20, best));
  o.topK = 0;
  o.topP = 1e-9; // the smallest set reaching p: the top token
  EXPECT_EQ(draw(o, logits, 20), std::vector<int64_t>(20, best));

  // top-k = 5: only the five largest logits appear.
  o.topP = 1;
  o.topK = 5;
  std::vector<int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int64_t x, int64_t y) { return logits[x] > logits[y]; });
  std::set<int64_t> top5(order.begin(), order.begin() + 5);
  for (int64_t t : draw(o, logits, 200))
    EXPECT_TRUE(top5.count(t)) << t;
}

TEST(SamplingTest, TiesAndErrors) {
  std::vector<float> tie = {1, 3, 3, 2};
  EXPECT_EQ(draw({}, tie, 1), std::vector<int64_t>{1});
  SamplingOptions o;
  o.temperature = 0.7;
  o.topK = 1;
  EXPECT_EQ(draw(o, tie, 5), std::vector<int64_t>(5, 1));

  Sampler s({});
  std::vector<float> nan = {1, NAN};
  auto t = s.sample(nan);
  ASSERT_FALSE(bool(t));
  EXPECT_EQ(toString(t.takeError()), "logit 1 is NaN");
  SamplingOptions bad;
  bad.topP = 0;
  EXPECT_CONTAINS(toString(bad.validate()), "top-p 0 must be in (0, 1]");
  bad = {};
  bad.temperature = -1;
  EXPECT_CONTAINS(toString(bad.validate()), "temperature");
}

//===----------------------------------------------------------------------===//
// pimc run
//===----------------------------------------------------------------------===//

int runCommand(const RunCommandOptions &o, std::string *err = nullptr) {
  ::testing::internal::CaptureStderr();
  int rc = pimcRun(o);
  outs().flush();
  std::string e = ::testing::internal::GetCapturedStderr();
  if (err)
    *err = e;
  return rc;
}

TEST(RunCommandTest, RunsAndFailsCleanly) {
  pimsim::Target t = loadShipped("hbm3-pim.json");
  TempDir dir;
  ModelWeights m = randomWeights(7);
  writeSafetensors(dir.path(), denseTensors(m));
  std::string pimb = dir.path("model.pimb");
  ASSERT_FALSE(bool(pimsim::writeProgram(assemble(modelText(t)), pimb)));
  std::string target = std::string(PIMC_TARGETS_DIR) + "/hbm3-pim.json";
  std::string other = std::string(PIMC_TARGETS_DIR) + "/gddr6-aim.json";
  std::string stats = dir.path("stats.json"), trace = dir.path("trace.json");

  RunCommandOptions o;
  o.program = pimb;
  o.target = target;
  o.weights = dir.path();
  o.promptIds = "1,2";
  o.maxNewTokens = 3;
  o.stats = stats;
  o.trace = trace;
  std::string err;
  EXPECT_EQ(runCommand(o, &err), 0) << err;
  auto s = MemoryBuffer::getFile(stats);
  ASSERT_TRUE(bool(s));
  auto sj = json::parse((*s)->getBuffer());
  ASSERT_TRUE(bool(sj)) << toString(sj.takeError());
  const json::Array *tokens = sj->getAsObject()->getArray("tokens");
  ASSERT_TRUE(tokens);
  // The same tokens as the naive chain.
  int64_t last = 2;
  for (const json::Value &tok : *tokens) {
    last = argmax(naiveLogits(t, m, last));
    EXPECT_EQ(tok.getAsInteger(), std::optional<int64_t>(last));
  }
  EXPECT_TRUE(sys::fs::exists(trace));

  RunCommandOptions timing;
  timing.program = pimb;
  timing.target = target;
  timing.mode = "timing";
  timing.promptIds = "1";
  timing.startPos = 10;
  timing.maxNewTokens = 2;
  EXPECT_EQ(runCommand(timing, &err), 0) << err;

  auto failsWith = [&](const RunCommandOptions &bad,
                       const std::string &needle) {
    std::string e;
    EXPECT_EQ(runCommand(bad, &e), 1) << e;
    EXPECT_CONTAINS(e, needle);
    EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 1) << e;
  };
  auto with = [&](std::function<void(RunCommandOptions &)> change) {
    RunCommandOptions x = timing;
    x.startPos = 0;
    x.maxNewTokens = 16;
    change(x);
    return x;
  };
  failsWith(with([&](auto &x) { x.program = dir.path("missing.pimb"); }),
            "missing.pimb");
  failsWith(with([&](auto &x) { x.target = other; }),
            "program was compiled for target 'hbm3-pim'");
  failsWith(with([&](auto &x) { x.mode = "functional"; }),
            "functional mode needs --weights");
  failsWith(with([&](auto &x) { x.promptIds = "1,x"; }), "--prompt-ids: 'x'");
  failsWith(with([&](auto &x) { x.mode = "fast"; }), "--mode: 'fast'");
  failsWith(with([&](auto &x) { x.maxNewTokens = 0; }),
            "--max-new-tokens: '0' is not an integer >= 1");
  failsWith(with([&](auto &x) { x.promptIds = "500"; }),
            "prompt token 500 is outside the vocabulary");
  failsWith(with([&](auto &x) { x.maxNewTokens = 40; }),
            "the program's context is [0, 15]");
  failsWith(with([&](auto &x) {
              x.mode = "functional";
              x.weights = dir.path("nope");
            }),
            "is neither a checkpoint directory nor a .safetensors file");
  // No --target: targets/<program target>.json, here one that never exists.
  std::string unnamed = dir.path("unnamed.pimb");
  ASSERT_FALSE(bool(pimsim::writeProgram(
      assemble(modelText(t, {}, "no-such-target")), unnamed)));
  failsWith(with([&](auto &x) {
              x.program = unnamed;
              x.target.clear();
            }),
            "targets/no-such-target.json");
  failsWith(with([&](auto &x) { x.sampling.topP = 2; }), "top-p 2");
}

} // namespace
