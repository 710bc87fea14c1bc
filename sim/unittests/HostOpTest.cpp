//===- HostOpTest.cpp - typed host ops (program format 2.0) ---------------===//
//
// Every host-op kind round-trips through the text and binary forms with
// every field it takes set away from its default; the checks name the
// kernel, the op and the field; the text form's errors name the column.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "llvm/ADT/STLExtras.h"

#include <gtest/gtest.h>

using namespace llvm;
using namespace pimsim;
using namespace pimsim::test;

namespace {

/// A program with parameters pos and token, an 8 KiB act region, two host
/// tensors, and one kernel holding `ops`.
Program programWith(std::vector<HostOp> ops) {
  Program p;
  p.target.name = "t";
  p.target.hash = "sha256:0";
  p.target.org = loadShipped("hbm3-pim.json").org;
  p.params = {{"pos", 0, 63}, {"token", 0, 15}};
  p.regions.push_back(
      {"act", RegionKind::Activations, {0, 1}, {0, 1}, {100, 1}, 8192});
  p.hostTensors = {{"table", {16, 8}}, {"w", {8}}, {"sinks", {2}}};
  HostKernel k;
  k.name = "k";
  k.ops = std::move(ops);
  p.kernels.push_back(std::move(k));
  p.entries.push_back({"decode", {{StepKind::Kernel, 0}}});
  return p;
}

ActBuffer f32(int64_t off, int64_t n) { return {off, n, ElemFormat::F32}; }

/// One op of every kind, each taking every field it has with a value that
/// is not the default.
std::vector<HostOp> everyKind() {
  std::vector<HostOp> ops;
  HostOp e;
  e.kind = HostOpKind::Embedding;
  e.tensor = 0;
  e.out = f32(0, 8);
  ops.push_back(e);
  HostOp n;
  n.kind = HostOpKind::RmsNorm;
  n.in = f32(0, 16);
  n.out = {64, 16, ElemFormat::BF16};
  n.tensor = 1;
  n.eps = 1e-6f;
  n.groups = 2;
  n.gemma = true;
  ops.push_back(n);
  HostOp a;
  a.kind = HostOpKind::Add;
  a.a = f32(0, 8);
  a.tensor = 0; // (2.3) row `token` of [16, 8]
  a.param = 1;
  a.out = f32(128, 8);
  ops.push_back(a);
  HostOp r;
  r.kind = HostOpKind::Rope;
  r.in = f32(0, 16);
  r.out = f32(128, 16);
  r.heads = 2;
  r.headDim = 8;
  r.rope = {RopeKind::Yarn, true, 6,   500000.0, 4.0,  4096,  8192, 1.5, 3.0,
            16.0,           2.0,  0.1, 1.25,     0.75, false, {},   {}};
  ops.push_back(r);
  HostOp g;
  g.kind = HostOpKind::GatedAct;
  g.a = f32(0, 8);
  g.b = f32(64, 8);
  g.out = f32(128, 8);
  g.act = GatedActFn::ClampedSwiglu; // (2.3)
  g.eps = 7.0f;
  g.scale = 1.702f;
  ops.push_back(g);
  HostOp pk;
  pk.kind = HostOpKind::Pack;
  pk.in = f32(0, 16);
  pk.out = {256, 64, ElemFormat::FP16};
  pk.blocks = 2;
  pk.block = 4;
  pk.inStride = 8;
  pk.outStride = 16;
  pk.replicate = 3;
  pk.scale = 0.125f;
  pk.param = 0; // (2.3) Llama 4's query temperature
  pk.partKeys = 8192;
  pk.eps = 0.1f;
  ops.push_back(pk);
  HostOp v;
  v.kind = HostOpKind::VStage;
  v.in = f32(0, 8);
  v.out = {512, 256, ElemFormat::FP16};
  v.heads = 2;
  v.headDim = 4;
  v.lanes = 16;
  v.groups = 2;
  v.clear = false;
  v.replicas = 2;
  v.param = 0;
  ops.push_back(v);
  HostOp s;
  s.kind = HostOpKind::Sum;
  s.in = f32(0, 24);
  s.out = f32(128, 8);
  s.parts = 3;
  s.inStride = 8;
  s.b = f32(256, 3); // (2.3) weights
  ops.push_back(s);
  HostOp l;
  l.kind = HostOpKind::Linear;
  l.in = f32(0, 8);
  l.out = f32(64, 16);
  l.tensor = 0;
  ops.push_back(l);
  HostOp c;
  c.kind = HostOpKind::AttnCombine;
  c.in = f32(0, 24);
  c.b = f32(256, 12);
  c.out = f32(512, 8);
  c.parts = 3;
  c.inStride = 8;
  c.heads = 2;
  c.headDim = 4;
  c.outStride = 4;
  c.partKeys = 16;
  c.param = 0;
  c.tensor = 2; // (2.3) sinks
  ops.push_back(c);
  HostOp call;
  call.kind = HostOpKind::Call;
  call.source = "llm.gelu+llm.matmul";
  call.mlir = "module {\n  func.func @host() {\"quoted\" \\ }\n}";
  call.args = {{CallValue::Kind::Buffer, f32(0, 8), {1, 8}},
               {CallValue::Kind::Position, {}, {}},
               {CallValue::Kind::Token, {}, {1}}};
  call.results = {{CallValue::Kind::Buffer, f32(64, 1), {}}};
  call.weightBytes = 4096;
  call.flops = 1 << 20;
  ops.push_back(call);
  HostOp lg;
  lg.kind = HostOpKind::Logits;
  lg.in = f32(0, 16);
  ops.push_back(lg);
  HostOp ln;
  ln.kind = HostOpKind::LayerNorm;
  ln.in = f32(0, 16);
  ln.out = f32(64, 16);
  ln.tensor = 1;
  ln.eps = 1e-5f;
  ln.groups = 2;
  ops.push_back(ln);
  HostOp mr; // (2.3)
  mr.kind = HostOpKind::MoeRoute;
  mr.in = f32(0, 8);
  mr.out = f32(64, 3);
  mr.experts = {96, 2, ElemFormat::I32};
  mr.b = f32(128, 1); // the shared expert's gate
  mr.topK = 2;
  mr.sigmoid = true;
  mr.topkFirst = true;
  mr.renormalize = true;
  mr.scale = 2.5f;
  ops.push_back(mr);
  return ops;
}

std::string printed(const Program &p) {
  std::string s;
  raw_string_ostream os(s);
  printProgram(p, os);
  return s;
}

} // namespace

TEST(HostOpTest, LongRopeListsRoundTripThroughTextAndBinary) {
  HostOp r;
  r.kind = HostOpKind::Rope;
  r.in = f32(0, 16);
  r.out = f32(128, 16);
  r.heads = 2;
  r.headDim = 8;
  r.rope.kind = RopeKind::LongRope;
  r.rope.rotaryDim = 6;
  r.rope.factor = 32.0;
  r.rope.originalMaxPositionEmbeddings = 4096;
  r.rope.shortFactor = {1.0, 1.0234375, 1.5};
  r.rope.longFactor = {1.0, 7.25, 64.125};
  Program p = programWith({r});
  EXPECT_EQ(errorOf(checkProgram(p)), "<success>");
  std::string text = printed(p);
  EXPECT_NE(text.find("rope=longrope rotary_dim=6 factor=32 "
                      "original_max_position_embeddings=4096 "
                      "short_factor=1,1.0234375,1.5 long_factor=1,7.25,64.125"),
            std::string::npos)
      << text;
  auto again = parseProgramText(text, "t.pimasm");
  ASSERT_TRUE(bool(again)) << toString(again.takeError()) << "\n" << text;
  EXPECT_TRUE(*again == p) << text;
  auto bytes = serializeProgram(p);
  ASSERT_TRUE(bool(bytes)) << toString(bytes.takeError());
  auto read = parseProgramBuffer(*bytes, "t.pimb");
  ASSERT_TRUE(bool(read)) << toString(read.takeError());
  EXPECT_TRUE(*read == p);
  EXPECT_EQ(read->kernels[0].ops[0].rope.longFactor, r.rope.longFactor);
}

TEST(HostOpTest, EveryKindRoundTripsThroughTextAndBinary) {
  Program p = programWith(everyKind());
  ASSERT_EQ(p.kernels[0].ops.size(), kNumHostOpKinds);
  EXPECT_EQ(errorOf(checkProgram(p)), "<success>");
  // Every field a kind takes is set (the op differs from one without it).
  for (const HostOp &op : p.kernels[0].ops)
    for (const HostFieldSpec &s : hostOpFields(op.kind)) {
      if (s.field != HostField::BOrTensor) {
        EXPECT_FALSE(hostFieldIsDefault(op, s.field))
            << hostOpKindName(op.kind).str() << " " << s.key.str();
      }
    }

  std::string text = printed(p);
  auto again = parseProgramText(text, "t.pimasm");
  ASSERT_TRUE(bool(again)) << toString(again.takeError()) << "\n" << text;
  EXPECT_TRUE(*again == p) << text;
  EXPECT_EQ(printed(*again), text);

  auto bytes = serializeProgram(p);
  ASSERT_TRUE(bool(bytes)) << toString(bytes.takeError());
  auto read = parseProgramBuffer(*bytes, "t.pimb");
  ASSERT_TRUE(bool(read)) << toString(read.takeError());
  EXPECT_TRUE(*read == p);

  for (StringRef want : {
           ".host_tensor \"table\" shape=16x8\n",
           "  embedding table=\"table\" out=f32[8]@0\n",
           "  rms_norm in=f32[16]@0 out=bf16[16]@64 weight=\"w\" eps=1e-06 "
           "groups=2 gemma=true\n",
           "  add a=f32[8]@0 b=\"table\" out=f32[8]@128 row=token\n",
           "  gated_act gate=f32[8]@0 up=f32[8]@64 out=f32[8]@128 "
           "act=clamped_swiglu limit=7 alpha=1.702\n",
           "attn_combine in=f32[24]@0 stats=f32[12]@256 out=f32[8]@512 "
           "parts=3 stride=8 heads=2 block=4 stats_stride=4 part_keys=16 "
           "param=pos sinks=\"sinks\"\n",
           "  rope in=f32[16]@0 out=f32[16]@128 heads=2 head_dim=8 rope=yarn "
           "interleaved=true rotary_dim=6 theta=500000 factor=4",
           "  v_stage in=f32[8]@0 out=fp16[256]@512 heads=2 head_dim=4 "
           "lanes=16 groups=2 clear=false replicas=2 param=pos\n",
           "  call source=\"llm.gelu+llm.matmul\" mlir=\"module {\\n  "
           "func.func @host() {\\\"quoted\\\" \\\\ }\\n}\" arg=f32[8]@0:1x8 "
           "arg=pos arg=token:1 result=f32[1]@64 weight_bytes=4096 "
           "flops=1048576\n",
           "  moe_route in=f32[8]@0 out=f32[3]@64 experts=i32[2]@96 top_k=2 "
           "sigmoid=true topk_first=true renormalize=true scale=2.5 "
           "shared=f32[1]@128\n",
       })
    EXPECT_NE(text.find(want.str()), std::string::npos) << want.str() << "\n"
                                                        << text;
}

TEST(HostOpTest, ChecksNameTheKernelTheOpAndTheField) {
  auto problem = [](HostOp op) {
    return errorOf(checkProgram(programWith({op})));
  };
  HostOp lg;
  lg.kind = HostOpKind::Logits;
  lg.in = f32(8000, 100);
  EXPECT_EQ(problem(lg), "kernel 0 (k), op 0 (logits): 'in' covers act bytes "
                         "[8000, 8400), outside region 'act' (8192 bytes)");
  lg.in = f32(0, 4);
  lg.heads = 3; // a field logits does not take
  EXPECT_EQ(problem(lg),
            "kernel 0 (k), op 0 (logits): logits takes no field 'heads' (it "
            "is set)");
  HostOp e;
  e.kind = HostOpKind::Embedding;
  e.tensor = 1; // [8], not [V, H]
  e.out = f32(0, 8);
  EXPECT_EQ(problem(e),
            "kernel 0 (k), op 0 (embedding): 'table' must be [V, H], not [8]");
  e.tensor = 7;
  EXPECT_EQ(problem(e), "kernel 0 (k), op 0 (embedding): 'table' is host "
                        "tensor 7, the program has 3");
  HostOp s;
  s.kind = HostOpKind::Sum;
  s.in = f32(0, 8);
  s.out = f32(64, 8);
  s.parts = 0;
  EXPECT_EQ(problem(s),
            "kernel 0 (k), op 0 (sum): 'parts' is 0, must be at least 1");
  HostOp a;
  a.kind = HostOpKind::Add;
  a.a = f32(0, 8);
  a.b = f32(64, 8);
  a.tensor = 1;
  a.out = f32(128, 8);
  EXPECT_EQ(problem(a), "kernel 0 (k), op 0 (add): 'b' is a buffer and a "
                        "host tensor: give one");
  // (2.3) `row` selects a row of a [rows, n] tensor; every value of the
  // parameter's range must be a row.
  a.b = {};
  a.param = 1; // token, 0..15
  EXPECT_EQ(problem(a), "kernel 0 (k), op 0 (add): 'b' must be [rows, n] with "
                        "'row', not [8]");
  a.tensor = -1;
  a.b = f32(64, 8);
  EXPECT_EQ(problem(a), "kernel 0 (k), op 0 (add): 'row' selects a row of a "
                        "host tensor 'b'");
  a.b = {};
  a.tensor = 0; // [16, 8]
  a.param = 0;  // pos, 0..63
  EXPECT_EQ(problem(a), "kernel 0 (k), op 0 (add): 'row' is parameter 'pos' "
                        "in [0, 63], tensor 'b' has 16 rows");
  HostOp g;
  g.kind = HostOpKind::GatedAct;
  g.a = f32(0, 8);
  g.out = f32(128, 8);
  g.act = GatedActFn::ClampedSwiglu;
  g.eps = 7.0f;
  EXPECT_EQ(problem(g), "kernel 0 (k), op 0 (gated_act): clamped_swiglu "
                        "needs 'up'");
  g.b = f32(64, 8);
  g.eps = 0.0f;
  EXPECT_EQ(problem(g), "kernel 0 (k), op 0 (gated_act): clamped_swiglu "
                        "needs a positive, finite 'limit'");
  g.act = GatedActFn::Silu;
  g.scale = 1.702f;
  EXPECT_EQ(problem(g), "kernel 0 (k), op 0 (gated_act): 'limit' and "
                        "'alpha' are clamped_swiglu's");
  std::vector<HostOp> all = everyKind();
  HostOp pk = *llvm::find_if(all, [](const HostOp &o) {
    return o.kind == HostOpKind::Pack && o.partKeys > 0;
  });
  pk.param = -1;
  EXPECT_EQ(problem(pk), "kernel 0 (k), op 0 (pack): 'position' and "
                         "'temperature_floor' come together");
  pk.param = 0;
  pk.partKeys = 0;
  pk.eps = 0.0f;
  EXPECT_EQ(problem(pk), "kernel 0 (k), op 0 (pack): 'position' and "
                         "'temperature_floor' come together");
  pk.param = -1;
  pk.eps = 0.1f;
  EXPECT_EQ(problem(pk), "kernel 0 (k), op 0 (pack): 'temperature_scale' "
                         "must be finite, and set only with "
                         "'temperature_floor'");
  HostOp ac = *llvm::find_if(
      all, [](const HostOp &o) { return o.kind == HostOpKind::AttnCombine; });
  ac.tensor = 1; // [8]: not one sink per head
  EXPECT_EQ(problem(ac), "kernel 0 (k), op 0 (attn_combine): 'sinks' has 8 "
                         "logits, 'heads' is 2");
  HostOp c;
  c.kind = HostOpKind::Call;
  c.mlir = "module {}";
  c.results = {{CallValue::Kind::Position, {}, {}}};
  EXPECT_EQ(problem(c), "kernel 0 (k), op 0 (call): 'results[0]': a result "
                        "must be a buffer");
  HostOp mr;
  mr.kind = HostOpKind::MoeRoute;
  mr.in = f32(0, 4);
  mr.out = f32(64, 8);
  mr.experts = {96, 8, ElemFormat::I32};
  mr.topK = 8;
  EXPECT_EQ(problem(mr), "kernel 0 (k), op 0 (moe_route): 'top_k' is 8, but "
                         "'in' has only 4 experts");
  mr.topK = 2;
  mr.out = f32(64, 2);
  mr.experts = f32(96, 2);
  EXPECT_EQ(problem(mr), "kernel 0 (k), op 0 (moe_route): 'experts' must be "
                         "i32, not f32");
  Program dup = programWith({});
  dup.hostTensors.push_back({"w", {8}});
  EXPECT_EQ(errorOf(checkProgram(dup)),
            "host tensor 3 (w): the name is listed twice");
}

TEST(HostOpTest, TextErrorsNameTheColumn) {
  Target t = loadShipped("hbm3-pim.json");
  std::string h = header(t) +
                  ".param pos min=0 max=3\n"
                  ".region act kind=activations channels=0 banks=0 rows=0 "
                  "bytes=4096\n"
                  ".kernel k kind=other\n";
  auto err = [&](const std::string &op) {
    return errorOf(parseProgramText(h + op, "t.pimasm"));
  };
  EXPECT_EQ(err("  logits in=f32[4]@0\n"), "<success>");
  EXPECT_EQ(err("  logits in=f32[4]\n"),
            "t.pimasm:7:13: 'in': expected FORMAT[ELEMENTS]@OFFSET "
            "(f32[4096]@0), found 'f32[4]'");
  EXPECT_EQ(err("  logits in=f32[4]@0 in=f32[4]@0\n"),
            "t.pimasm:7:25: 'in' given twice");
  EXPECT_EQ(err("  linear in=f32[4]@0 out=f32[4]@16 weight=\"w\"\n"),
            "t.pimasm:7:43: 'weight': no .host_tensor \"w\" precedes it");
  EXPECT_EQ(err("  gated_act gate=f32[4]@0 up=f32[4]@16 out=f32[4]@32 "
                "act=relu\n"),
            "t.pimasm:7:58: 'act': expected silu, gelu or gelu_tanh, found "
            "'relu'");
  EXPECT_EQ(err("  rope in=f32[4]@0 out=f32[4]@16 heads=1 head_dim=4 "
                "rope=default\n"),
            "t.pimasm:7:3: rope needs 'rotary_dim='");
  EXPECT_EQ(err("  rope in=f32[4]@0 out=f32[4]@16 heads=1 head_dim=4 "
                "rope=default rotary_dim=4 theta=x\n"),
            "t.pimasm:7:85: 'theta': expected a number, found 'x'");
  EXPECT_EQ(err("  mac_ab row=0 col=0 count=1\n"),
            "t.pimasm:7:3: instruction outside a .stream");
}

// The buffers a schedule orders kernels by: every act buffer each kind
// takes, `out` and a call's results as written, host tensors not at all.
TEST(HostOpTest, BuffersAndWhetherTheOpWritesThem) {
  auto visits = [](const HostOp &op) {
    std::vector<std::string> seen;
    forEachHostBuffer(op, [&](const ActBuffer &b, bool written) {
      seen.push_back((written ? "w" : "r") + std::to_string(b.offset));
    });
    return seen;
  };
  std::vector<HostOp> ops = everyKind();
  using V = std::vector<std::string>;
  EXPECT_EQ(visits(ops[0]), V({"w0"}));                // embedding
  EXPECT_EQ(visits(ops[1]), V({"r0", "w64"}));         // rms_norm
  EXPECT_EQ(visits(ops[2]), V({"r0", "w128"}));        // add, b a tensor
  EXPECT_EQ(visits(ops[4]), V({"r0", "r64", "w128"})); // gated_act
  // A pack with gaps and v_stage keep the elements of `out` they do not
  // write: read, then written. A pack that covers `out` only writes it.
  EXPECT_EQ(visits(ops[5]), V({"r0", "r256", "w256"})); // pack, gaps
  HostOp pack = ops[5];
  pack.outStride = pack.replicate * pack.block;
  EXPECT_EQ(visits(pack), V({"r0", "r256", "w256"})); // ends before out
  pack.out.elements = pack.blocks * pack.outStride;
  EXPECT_EQ(visits(pack), V({"r0", "w256"}));
  EXPECT_EQ(visits(ops[6]), V({"r0", "r512", "w512"}));        // v_stage
  EXPECT_EQ(visits(ops[9]), V({"r0", "r256", "w512"}));        // attn_combine
  EXPECT_EQ(visits(ops[10]), V({"r0", "w64"}));                // call
  EXPECT_EQ(visits(ops[11]), V({"r0"}));                       // logits
  EXPECT_EQ(visits(ops[12]), V({"r0", "w64"}));                // layer_norm
  EXPECT_EQ(visits(ops[13]), V({"r0", "r128", "w64", "w96"})); // moe_route
  HostOp add = ops[2];
  add.tensor = -1;
  add.b = f32(64, 8);
  EXPECT_EQ(visits(add), V({"r0", "r64", "w128"}));
}
