//===- ProgramTest.cpp - program format: binary, text, validation ---------===//

#include "TestUtil.h"

#include "pimsim/Program.h"

#include "pimsim/program_generated.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <set>

using namespace pimsim;
using namespace llvm;
using pimsim::test::textOf;

namespace {

Organization hbm3Org() {
  Organization o;
  o.stacks = 1;
  o.channels = 16;
  o.pseudoChannels = 2;
  o.sids = 2;
  o.bankGroups = 4;
  o.banks = 4;
  o.rows = 16384;
  o.columns = 32;
  o.accessBytes = 32;
  return o;
}

Target hbm3Target() {
  Target t;
  t.name = "hbm3-pim";
  t.org = hbm3Org();
  t.pim.globalBufferBytes = 8192;
  t.pim.activationFunctions = {"gelu", "relu"};
  t.nearMemory.push_back({"softmax", "buffer_die", 16, 0, {}, {}});
  return t;
}

Instruction strided(Instruction inst, Field field, unsigned loop,
                    int64_t step) {
  inst.addStride(field, loop, step);
  return inst;
}
Instruction withData(Instruction inst, int64_t region, int64_t offset) {
  inst.dataRegion = region;
  inst.dataOffset = offset;
  return inst;
}
Instruction withChannels(Instruction inst, ChannelSet channels) {
  inst.channels = std::move(channels);
  return inst;
}

/// Every section and every op: AttAcc-style attention plus AiM's ISR.
Program sampleProgram() {
  Program p;
  p.target.name = "hbm3-pim";
  p.target.hash = targetContentHash("{\"name\": \"hbm3-pim\"}");
  p.target.org = hbm3Org();

  p.regions = {
      {"weights",
       RegionKind::Weights,
       {0, 16},
       {0, 64},
       {0, 4096},
       int64_t(4) << 30},
      {"kv",
       RegionKind::KvCache,
       {0, 16},
       {0, 64},
       {8192, 8192},
       int64_t(8) << 30},
      {"act", RegionKind::Activations, {0, 16}, {0, 64}, {4096, 64}, 1 << 20},
      {"scratch", RegionKind::Scratch, {0, 16}, {0, 64}, {4160, 32}, 65536},
  };

  WeightBinding q;
  q.tensor = "model.layers.0.self_attn.q_proj.weight";
  q.region = 0;
  q.format = "bf16";
  q.shape = {4096, 4096};
  q.axis = 0;
  q.tile = {4, 4096};
  q.interleave = Interleave::Channel;
  q.rows = {0, 32};
  q.offset = 0;
  q.bytes = 33554432;
  WeightBinding head = q;
  head.tensor = "lm_head \"weight\"\n"; // needs quoting and escapes
  head.format = "fp16";
  head.shape = {32000, 4096};
  head.tile = {};
  head.interleave = Interleave::Bank;
  head.rows = {32, 256};
  head.offset = 33554432;
  head.bytes = 262144000;
  p.weights = {q, head};

  HostKernel qkv;
  qkv.name = "qkv";
  qkv.kind = KernelKind::Gemm;
  qkv.m = 16;
  qkv.n = 12288;
  qkv.k = 4096;
  qkv.flops = 2 * qkv.m * qkv.n * qkv.k;
  qkv.bytes = 100663296 + 131072 + 393216;
  qkv.operands = {{OperandRole::Input, 2, 0, 131072},
                  {OperandRole::Input, 0, 0, 100663296},
                  {OperandRole::Output, 2, 131072, 393216}};
  HostKernel norm;
  norm.name = "norm";
  norm.kind = KernelKind::RmsNorm;
  norm.m = 1;
  norm.n = 4096;
  norm.flops = 3 * 4096;
  norm.bytes = 16384;
  norm.operands = {{OperandRole::Input, 2, 0, 8192},
                   {OperandRole::Output, 2, 8192, 8192}};
  p.kernels = {qkv, norm};

  // Score and context GEMVs of 4 heads, as in AttAcc's trace generator.
  Instruction setModel = Instruction::make(Opcode::SetModel);
  Instruction setHead =
      strided(Instruction::make(Opcode::SetHead), Field::Value, 0, 1);
  Instruction wrgb = Instruction::wrGB(0, 256);
  wrgb = strided(strided(withData(wrgb, 2, 0), Field::Data, 0, 256),
                 Field::Data, kChannelIndex, 4096);
  Instruction scoreMac =
      strided(strided(Instruction::macAB(0, 0, 32), Field::Row, 0, 8),
              Field::Row, 1, 1);
  Instruction contextMac = scoreMac;
  contextMac.row = 8192;
  // AttAcc's group of 8 MV_SB: bank groups outer, SIDs inner.
  Instruction mvsb = strided(
      strided(Instruction::mvSB(0, 1), Field::Bank, 2, 4), Field::Bank, 3, 16);
  mvsb.row = 8;
  Instruction mvsbGroup = Instruction::loop(4, {Instruction::loop(2, {mvsb})});
  Instruction mvgb = Instruction::mvGB(0, 8);
  mvgb.row = 8192;
  wrgb.bank = 1;
  wrgb.row = 8;
  Instruction rdacc = strided(
      strided(withData(Instruction::rdAcc(4), 2, 65536), Field::Data, 0, 128),
      Field::Data, kChannelIndex, 512);
  Stream score;
  score.info = {"L0", "attention", 1, "attention", 1 << 20, ""};
  score.name = "score";
  score.channels = {{0, 16}};
  score.body = {
      setModel,
      Instruction::loop(4, {setHead, wrgb, Instruction::barrier(),
                            Instruction::loop(8, {scoreMac, mvsbGroup}),
                            Instruction::barrier(), Instruction::sfm(2048),
                            mvgb, Instruction::barrier(),
                            Instruction::loop(8, {contextMac}), rdacc})};

  // AiM's ISR, one instruction each.
  Instruction setCfr = Instruction::make(Opcode::SetCfr);
  setCfr.reg = 0;
  setCfr.value = 1;
  Instruction wrab = Instruction::make(Opcode::WrAB);
  wrab.row = 100;
  wrab.count = 2;
  Instruction ewmul = Instruction::make(Opcode::EwMul);
  ewmul.count = 2;
  Instruction ewadd = Instruction::make(Opcode::EwAdd);
  ewadd.src = 512;
  ewadd.count = 4;
  Instruction bkgb = Instruction::make(Opcode::CopyBkGb);
  bkgb.count = 2;
  bkgb.offset = 1024;
  Instruction gbbk = Instruction::make(Opcode::CopyGbBk);
  gbbk.count = 2;
  Instruction rdaf = withData(Instruction::make(Opcode::RdAf), 3, 0);
  Instruction backwards =
      strided(strided(Instruction::macAB(3000, 0, 2), Field::Row, 0, -100),
              Field::Col, 0, 2);
  Stream aim;
  aim.name = "aim";
  aim.channels = {{0, 4}, {8, 4}};
  aim.body = {
      withChannels(Instruction::store(2, 8, 0, 1), {{0, 1}}),
      withData(Instruction::make(Opcode::WrBias), 2, 0),
      withData(wrab, 2, 64),
      setCfr,
      Instruction::macSB(0, 0, 0, 2),
      Instruction::macPB(5, 1, 4, 4),
      ewmul,
      Instruction::af(Function::Gelu, 1),
      rdaf,
      ewadd,
      bkgb,
      gbbk,
      withData(Instruction::load(0, 0, 0, 2), 3, 1024),
      Instruction::make(Opcode::Sync),
      withChannels(Instruction::sfm(128, Function::Exp), {{8, 4}}),
      Instruction::call(1),
      withChannels(Instruction::loop(2, {backwards}), {{0, 4}}),
  };
  p.streams = {score, aim};

  p.entries = {
      {"prefill",
       {{StepKind::Kernel, 0}, {StepKind::Barrier, 0}, {StepKind::Stream, 0}}},
      {"decode",
       {{StepKind::Kernel, 1},
        {StepKind::Stream, 1},
        {StepKind::Barrier, 0},
        {StepKind::Stream, 0},
        {StepKind::Kernel, 0}}},
  };
  return p;
}

void collectOpcodes(const std::vector<Instruction> &body,
                    std::set<Opcode> &out) {
  for (const Instruction &inst : body) {
    out.insert(inst.op);
    collectOpcodes(inst.body, out);
  }
}

std::vector<uint8_t> serialized(const Program &p) {
  auto bytes = serializeProgram(p);
  EXPECT_TRUE(static_cast<bool>(bytes)) << toString(bytes.takeError());
  return bytes ? *bytes : std::vector<uint8_t>();
}

std::string errorOf(Error err) {
  EXPECT_TRUE(static_cast<bool>(err)) << "expected an error";
  return toString(std::move(err));
}
template <typename T> std::string errorOf(Expected<T> value) {
  EXPECT_FALSE(static_cast<bool>(value)) << "expected an error";
  return value ? std::string() : toString(value.takeError());
}

/// A temporary directory removed at the end of the test.
class TempDir {
public:
  TempDir() {
    EXPECT_FALSE(sys::fs::createUniqueDirectory("pimsim-program", dir));
  }
  ~TempDir() { sys::fs::remove_directories(dir); }
  std::string path(StringRef name) const {
    SmallString<128> p(dir);
    sys::path::append(p, name);
    return std::string(p);
  }

private:
  SmallString<128> dir;
};

} // namespace

TEST(ProgramTest, SampleCoversEveryOpAndIsValid) {
  Program p = sampleProgram();
  std::set<Opcode> ops;
  for (const Stream &s : p.streams)
    collectOpcodes(s.body, ops);
  EXPECT_EQ(ops.size(), kNumOpcodes);
  EXPECT_FALSE(checkProgram(p));
  Error err = validateProgram(p, hbm3Target());
  EXPECT_FALSE(err) << toString(std::move(err));
}

TEST(ProgramTest, BinaryRoundTrip) {
  Program p = sampleProgram();
  std::vector<uint8_t> bytes = serialized(p);
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(std::string(bytes.begin() + 4, bytes.begin() + 8), "PIMB");
  auto back = parseProgramBuffer(bytes, "mem.pimb");
  ASSERT_TRUE(static_cast<bool>(back)) << toString(back.takeError());
  EXPECT_TRUE(*back == p);

  TempDir dir;
  std::string file = dir.path("p.pimb");
  ASSERT_FALSE(writeProgram(p, file));
  auto read = readProgram(file);
  ASSERT_TRUE(static_cast<bool>(read)) << toString(read.takeError());
  EXPECT_TRUE(*read == p);
}

TEST(ProgramTest, SerializationIsDeterministic) {
  EXPECT_EQ(serialized(sampleProgram()), serialized(sampleProgram()));
}

TEST(ProgramTest, TextRoundTripIsIdentity) {
  Program p = sampleProgram();
  std::string text = textOf(p);
  auto parsed = parseProgramText(text, "sample.pimasm");
  ASSERT_TRUE(static_cast<bool>(parsed)) << toString(parsed.takeError());
  EXPECT_TRUE(*parsed == p) << textOf(*parsed);
  EXPECT_EQ(textOf(*parsed), text);
}

TEST(ProgramTest, BinaryTextBinaryIsByteIdentical) {
  std::vector<uint8_t> bytes = serialized(sampleProgram());
  auto p = parseProgramBuffer(bytes, "a.pimb");
  ASSERT_TRUE(static_cast<bool>(p)) << toString(p.takeError());
  auto q = parseProgramText(textOf(*p), "a.pimasm");
  ASSERT_TRUE(static_cast<bool>(q)) << toString(q.takeError());
  EXPECT_EQ(serialized(*q), bytes);
}

TEST(ProgramTest, PrintsReadableText) {
  std::string text = textOf(sampleProgram());
  for (StringRef want :
       {".version 2.3\n",
        ".target hbm3-pim hash=sha256:",
        ".region kv kind=kv_cache channels=0-15 banks=0-63 rows=8192-16383 "
        "bytes=8589934592\n",
        ".weight \"lm_head \\\"weight\\\"\\n\" region=weights format=fp16",
        ".kernel qkv kind=gemm m=16 n=12288 k=4096 flops=1610612736 "
        "bytes=101187584 in=act[0:131072] in=weights[0:100663296] "
        "out=act[131072:524288]\n",
        ".stream aim channels=0-3,8-11\n",
        ".stream score channels=0-15 layer=L0 op=attention part=1 "
        "class=attention bytes=1048576\n",
        "  loop i 4 {\n",
        "    set_head value=i\n",
        "    wr_gb offset=0 bytes=256 bank=1 row=8 data=act+256*i+4096*ch\n",
        "    rd_acc count=4 data=act+65536+128*i+512*ch\n",
        "    loop j 8 {\n",
        "      mac_ab row=8*i+j col=0 count=32\n",
        "      mac_ab row=8192+8*i+j col=0 count=32\n",
        "          mv_sb bank=4*k+16*l row=8\n",
        "    mv_gb row=8192 count=8\n",
        "  sfm length=128 fn=exp channels=8-11\n",
        "  call norm\n",
        "  loop i 2 channels=0-3 {\n",
        "    mac_ab row=3000-100*i col=2*i count=2\n",
        ".entry decode = norm, aim, barrier, score, qkv\n"})
    EXPECT_NE(text.find(want.str()), std::string::npos) << want.str() << "\n"
                                                        << text;
}

TEST(ProgramTest, FlatBankIndex) {
  Organization org = hbm3Org();
  DecodedAddress a = bankAddress(org, 17, 1 * 32 + 1 * 16 + 2 * 4 + 3, 5, 7);
  EXPECT_EQ(a.stack, 1);
  EXPECT_EQ(a.channel, 1);
  EXPECT_EQ(a.pseudoChannel, 1);
  EXPECT_EQ(a.sid, 1);
  EXPECT_EQ(a.bankGroup, 2);
  EXPECT_EQ(a.bank, 3);
  EXPECT_EQ(a.row, 5);
  EXPECT_EQ(a.column, 7);
}

TEST(ProgramTest, StridesEvaluatePerIteration) {
  Instruction inst = Instruction::macAB(8, 0, 32);
  inst.addStride(Field::Row, 1, 64).addStride(Field::Row, 0, 2);
  EXPECT_EQ(inst.strides.front().loop, 0u); // kept sorted
  EXPECT_EQ(inst.at(Field::Row, {3, 1}), 8 + 6 + 64);
  EXPECT_EQ(inst.at(Field::Col, {3, 1}), 0);
  inst.addStride(Field::Row, 0, -2); // cancels
  EXPECT_EQ(inst.strides.size(), 1u);
}

TEST(ProgramTest, AssemblerAcceptsFreeFormInput) {
  // Hex, comments, custom loop variable names, unsorted channel lists.
  const char *text = R"(
.target hbm3-pim hash=x
.org stacks=1 channels=16 pseudo_channels=2 sids=2 bank_groups=4 banks=4 rows=16384 columns=32 access_bytes=32
.region act kind=activations channels=0-15 banks=0-63 rows=0-63 bytes=0x1000
.stream s channels=8-15,0-7   # all of them
  loop head 4 {
    loop r 2 {
      mac_ab row=r+2*head+0x10 col=0 count=32
    }
    wr_gb offset=0 bytes=32 data=act-0+32*head
  }
)";
  auto p = parseProgramText(text, "free.pimasm");
  ASSERT_TRUE(static_cast<bool>(p)) << toString(p.takeError());
  ASSERT_EQ(p->streams.size(), 1u);
  EXPECT_EQ(p->streams[0].channels, (ChannelSet{{0, 8}, {8, 8}}));
  const Instruction &mac = p->streams[0].body[0].body[0].body[0];
  EXPECT_EQ(mac.row, 16);
  EXPECT_EQ(mac.at(Field::Row, {3, 1}), 16 + 6 + 1);
  EXPECT_EQ(p->regions[0].bytes, 4096);
  std::string text2 = textOf(*p);
  EXPECT_NE(text2.find("mac_ab row=16+2*i+j"), std::string::npos) << text2;
  Error err = validateProgram(*p, hbm3Target());
  EXPECT_FALSE(err) << toString(std::move(err));
}

//===----------------------------------------------------------------------===//
// Bad binaries
//===----------------------------------------------------------------------===//

TEST(ProgramTest, TruncatedFileIsAnErrorAtEveryCut) {
  std::vector<uint8_t> bytes = serialized(sampleProgram());
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    auto p = parseProgramBuffer(ArrayRef<uint8_t>(bytes).take_front(cut),
                                "cut.pimb");
    ASSERT_FALSE(static_cast<bool>(p)) << "cut at " << cut << " parsed";
    std::string msg = toString(p.takeError());
    EXPECT_EQ(msg.substr(0, 10), "cut.pimb: ") << msg;
  }
  // Also when nothing but the header and an empty organisation is there.
  std::vector<uint8_t> empty = serialized(Program());
  for (size_t cut = 0; cut < empty.size(); ++cut) {
    auto p = parseProgramBuffer(ArrayRef<uint8_t>(empty).take_front(cut),
                                "cut.pimb");
    ASSERT_FALSE(static_cast<bool>(p)) << "cut at " << cut << " parsed";
    consumeError(p.takeError());
  }
  EXPECT_EQ(errorOf(parseProgramBuffer({}, "empty.pimb")),
            "empty.pimb: not a pimsim program: 0 bytes, too short for a "
            "header");
}

TEST(ProgramTest, CorruptBytesNeverCrash) {
  std::vector<uint8_t> good = serialized(sampleProgram());
  // Every byte, three ways: the result is an error or a program that
  // prints and checks cleanly.
  size_t rejected = 0;
  for (size_t i = 0; i < good.size(); ++i)
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> bad = good;
      bad[i] ^= mask;
      auto p = parseProgramBuffer(bad, "flip.pimb");
      if (!p) {
        consumeError(p.takeError());
        ++rejected;
        continue;
      }
      EXPECT_FALSE(checkProgram(*p));
      (void)textOf(*p);
      consumeError(validateProgram(*p, hbm3Target()));
    }
  EXPECT_GT(rejected, 0u);

  // Random multi-byte damage.
  uint32_t seed = 12345;
  auto next = [&] {
    seed = seed * 1103515245 + 12345;
    return seed >> 8;
  };
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> bad = good;
    for (unsigned n = 1 + next() % 8; n > 0; --n)
      bad[next() % bad.size()] = next();
    auto p = parseProgramBuffer(bad, "damaged.pimb");
    if (!p) {
      consumeError(p.takeError());
      continue;
    }
    EXPECT_FALSE(checkProgram(*p));
    (void)textOf(*p);
    consumeError(validateProgram(*p, hbm3Target()));
  }

  // Garbage, with and without a valid header.
  for (int round = 0; round < 200; ++round) {
    std::vector<uint8_t> junk(16 + round * 7);
    for (uint8_t &b : junk)
      b = next();
    if (round % 2)
      std::memcpy(junk.data() + 4, "PIMB", 4);
    auto p = parseProgramBuffer(junk, "junk.pimb");
    if (p) {
      EXPECT_FALSE(checkProgram(*p));
      consumeError(validateProgram(*p, hbm3Target()));
    } else
      consumeError(p.takeError());
  }
}

TEST(ProgramTest, WrongIdentifier) {
  std::vector<uint8_t> bytes = serialized(sampleProgram());
  std::memcpy(bytes.data() + 4, "ELF\x01", 4);
  EXPECT_EQ(errorOf(parseProgramBuffer(bytes, "x.pimb")),
            "x.pimb: not a pimsim program (file identifier \"ELF\\x01\", "
            "expected \"PIMB\")");
}

TEST(ProgramTest, WrongMajorVersion) {
  flatbuffers::FlatBufferBuilder fbb;
  fb::Version v3(3, 0);
  fb::FinishProgramBuffer(fbb, fb::CreateProgram(fbb, &v3));
  ArrayRef<uint8_t> buf(fbb.GetBufferPointer(), fbb.GetSize());
  EXPECT_EQ(errorOf(parseProgramBuffer(buf, "new.pimb")),
            "new.pimb: program version 3.0, this pimsim reads 2.x");

  flatbuffers::FlatBufferBuilder none;
  fb::FinishProgramBuffer(none, fb::CreateProgram(none));
  EXPECT_EQ(errorOf(parseProgramBuffer(
                ArrayRef<uint8_t>(none.GetBufferPointer(), none.GetSize()),
                "old.pimb")),
            "old.pimb: program has no version");
}

TEST(ProgramTest, NewerMinorVersionIsRead) {
  flatbuffers::FlatBufferBuilder fbb;
  fb::Version v(2, 7);
  fb::FinishProgramBuffer(fbb, fb::CreateProgram(fbb, &v));
  auto p = parseProgramBuffer(
      ArrayRef<uint8_t>(fbb.GetBufferPointer(), fbb.GetSize()), "m.pimb");
  ASSERT_TRUE(static_cast<bool>(p)) << toString(p.takeError());
  EXPECT_EQ(p->version.minor, 7);
}

TEST(ProgramTest, UnknownOpcodeFromANewerWriter) {
  flatbuffers::FlatBufferBuilder fbb;
  auto name = fbb.CreateString("s");
  std::vector<flatbuffers::Offset<fb::Instruction>> body = {
      fb::CreateInstruction(fbb, static_cast<fb::Opcode>(200))};
  std::vector<fb::Range> channels = {fb::Range(0, 1)};
  auto stream = fb::CreateStream(fbb, name, fbb.CreateVectorOfStructs(channels),
                                 fbb.CreateVector(body));
  fb::Version v(2, 3);
  std::vector<flatbuffers::Offset<fb::Stream>> streams = {stream};
  fb::FinishProgramBuffer(
      fbb, fb::CreateProgram(fbb, &v, 0, 0, 0, 0, fbb.CreateVector(streams)));
  std::string msg = errorOf(parseProgramBuffer(
      ArrayRef<uint8_t>(fbb.GetBufferPointer(), fbb.GetSize()), "u.pimb"));
  EXPECT_NE(msg.find("u.pimb: stream 0 (s), instruction 0 (<unknown>): "
                     "unknown opcode 200"),
            std::string::npos)
      << msg;
}

TEST(ProgramTest, ReadAndWriteErrorsNameTheFile) {
  TempDir dir;
  std::string missing = dir.path("missing.pimb");
  std::string msg = errorOf(readProgram(missing));
  EXPECT_EQ(msg.substr(0, missing.size() + 2), missing + ": ") << msg;

  // An invalid program is refused and nothing is written.
  Program p = sampleProgram();
  p.entries[0].steps[0].index = 9;
  std::string out = dir.path("bad.pimb");
  msg = errorOf(writeProgram(p, out));
  EXPECT_NE(msg.find("entry 0 (prefill), step 0: refers to kernel 9"),
            std::string::npos)
      << msg;
  EXPECT_FALSE(sys::fs::exists(out));
}

//===----------------------------------------------------------------------===//
// Bad assembly
//===----------------------------------------------------------------------===//

namespace {
// Five lines, so test lines start at line 6.
const char *kAsmHeader =
    ".version 2.0\n"
    ".target hbm3-pim hash=x\n"
    ".org stacks=1 channels=16 pseudo_channels=2 sids=2 bank_groups=4 "
    "banks=4 rows=16384 columns=32 access_bytes=32\n"
    ".region act kind=activations channels=0-15 banks=0-63 rows=0-63 "
    "bytes=4096\n"
    ".kernel k0 kind=gemm m=1 n=2 k=3 flops=12 bytes=24\n";

std::string asmError(const std::string &body) {
  return errorOf(parseProgramText(kAsmHeader + body, "t.pimasm"));
}
} // namespace

TEST(ProgramTest, AssemblerErrorsHaveLineAndColumn) {
  EXPECT_EQ(asmError("barrier\n"),
            "t.pimasm:6:1: instruction outside a .stream");
  EXPECT_EQ(asmError(".stream s channels=0-3\n  mac_ab row=1 col=0\n"),
            "t.pimasm:7:3: mac_ab needs 'count='");
  EXPECT_EQ(asmError(".stream s channels=0-3\n"
                     "  mac_ab row=1 col=0 count=1 bytes=3\n"),
            "t.pimasm:7:30: mac_ab has no field 'bytes' (fields: row, col, "
            "count, offset, reg, channels)");
  EXPECT_EQ(asmError(".stream s channels=0-3\n  mac_ab row=x col=0 count=1\n"),
            "t.pimasm:7:14: unknown loop variable 'x'");
  EXPECT_EQ(asmError(".stream s channels=0-3\n  frob x=1\n"),
            "t.pimasm:7:3: unknown instruction 'frob'");
  EXPECT_EQ(asmError(".stream s channels=0-3\n  loop i 4 {\n"
                     "    mac_ab row=i col=0 count=1\n"),
            "t.pimasm:7:3: loop is not closed with '}'");
  EXPECT_EQ(asmError(".stream s channels=0-3\n  }\n"),
            "t.pimasm:7:3: '}' without an open loop");
  EXPECT_EQ(asmError(".stream s channels=0-3\n"
                     "  wr_gb offset=0 bytes=32 data=nope+4\n"),
            "t.pimasm:7:32: unknown region 'nope'");
  EXPECT_EQ(asmError(".stream s channels=0-3\n  barrier\n"
                     ".entry e = s,  nokernel\n"),
            "t.pimasm:8:16: unknown stream or kernel 'nokernel'");
  EXPECT_EQ(asmError(".stream s channels=0-3,2\n"),
            "t.pimasm:6:20: channel 2 is listed twice");
  EXPECT_EQ(asmError(".stream k0 channels=0\n"),
            "t.pimasm:6:9: 'k0' is already a stream or kernel");
  EXPECT_EQ(asmError(".stream s channels=0-3\n  loop i 2 {\n"
                     "    rd_acc count=i\n  }\n"),
            "t.pimasm:8:18: 'count' cannot depend on a loop variable");
  EXPECT_EQ(asmError(".stream s channels=0-3\n  loop 2\n"),
            "t.pimasm:7:8: expected '{' at the end of the loop line");
  EXPECT_EQ(asmError(".stream s channels=0-3\n"
                     "  mac_ab row=99999999999999999999 col=0 count=1\n"),
            "t.pimasm:7:14: bad integer in '99999999999999999999'");
  EXPECT_EQ(asmError(".weight \"abc region=act\n"),
            "t.pimasm:6:9: unterminated string");
  EXPECT_EQ(asmError(".region r kind=ram channels=0 banks=0 rows=0 bytes=1\n"),
            "t.pimasm:6:16: unknown region kind 'ram' (expected weights, "
            "kv_cache, activations or scratch)");
  EXPECT_EQ(asmError(".region r kind=scratch channels=3-1 banks=0 rows=0 "
                     "bytes=1\n"),
            "t.pimasm:6:33: empty range '3-1' (last < first)");
  EXPECT_EQ(asmError(".frob\n"), "t.pimasm:6:1: unknown directive '.frob'");
  EXPECT_EQ(errorOf(parseProgramText(".version 3.0\n", "v.pimasm")),
            "v.pimasm:1:10: program version 3.0, this pimsim reads 2.x");
}

//===----------------------------------------------------------------------===//
// validateProgram
//===----------------------------------------------------------------------===//

namespace {
Program oneInstruction(Instruction inst, ChannelSet channels = {{0, 16}}) {
  Program p;
  p.target.name = "hbm3-pim";
  p.target.org = hbm3Org();
  p.regions = {
      {"act", RegionKind::Activations, {0, 16}, {0, 64}, {0, 64}, 4096}};
  p.streams = {{"s", std::move(channels), {std::move(inst)}, {}}};
  p.entries = {{"decode", {{StepKind::Stream, 0}}}};
  return p;
}
std::string validationError(const Program &p) {
  return errorOf(validateProgram(p, hbm3Target()));
}
} // namespace

TEST(ProgramTest, ValidateRowsColumnsBanksChannels) {
  EXPECT_FALSE(validateProgram(oneInstruction(Instruction::macAB(16383, 0, 32)),
                               hbm3Target()));
  EXPECT_EQ(validationError(oneInstruction(Instruction::macAB(20000, 0, 32))),
            "stream 0 (s), instruction 0 (mac_ab): row 20000 is out of range "
            "(target has 16384 rows)");
  EXPECT_EQ(validationError(oneInstruction(Instruction::macAB(0, 32, 1))),
            "stream 0 (s), instruction 0 (mac_ab): col 32 is out of range "
            "(target has 32 columns)");
  EXPECT_EQ(validationError(oneInstruction(Instruction::macAB(0, 30, 4))),
            "stream 0 (s), instruction 0 (mac_ab): columns 30..33 are out of "
            "range (target has 32 columns)");
  EXPECT_EQ(validationError(oneInstruction(Instruction::macSB(64, 0, 0, 1))),
            "stream 0 (s), instruction 0 (mac_sb): bank 64 is out of range "
            "(target has 64 banks per channel)");
  EXPECT_EQ(validationError(oneInstruction(Instruction::macAB(0, 0, 0))),
            "stream 0 (s), instruction 0 (mac_ab): count 0 must be positive");
  EXPECT_EQ(validationError(oneInstruction(Instruction::barrier(), {{0, 17}})),
            "stream 0 (s): channels 0-16 are out of range (target has 16 "
            "channels)");
  EXPECT_EQ(validationError(oneInstruction(
                withChannels(Instruction::barrier(), {{2, 3}}), {{0, 4}})),
            "stream 0 (s), instruction 0 (barrier): channel 4 is not one of "
            "the stream's channels");
}

TEST(ProgramTest, ValidateStridesOverAllIterations) {
  Instruction mac = Instruction::macAB(16378, 0, 32);
  mac.addStride(Field::Row, 0, 2);
  Program p = oneInstruction(Instruction::loop(3, {mac}));
  EXPECT_FALSE(validateProgram(p, hbm3Target()));
  p.streams[0].body[0].count = 4;
  EXPECT_EQ(validationError(p),
            "stream 0 (s), instruction 1 (mac_ab): row 16384 is out of range "
            "(target has 16384 rows)");
  Instruction down = Instruction::macAB(10, 0, 1);
  down.addStride(Field::Row, 0, -5);
  EXPECT_FALSE(validateProgram(oneInstruction(Instruction::loop(3, {down})),
                               hbm3Target()));
  EXPECT_EQ(validationError(oneInstruction(Instruction::loop(4, {down}))),
            "stream 0 (s), instruction 1 (mac_ab): row -5 is out of range "
            "(target has 16384 rows)");
}

TEST(ProgramTest, ValidateLoopsBuffersAndData) {
  EXPECT_EQ(validationError(
                oneInstruction(Instruction::loop(0, {Instruction::barrier()}))),
            "stream 0 (s), instruction 0 (loop): loop count 0 must be "
            "positive");
  EXPECT_EQ(validationError(oneInstruction(Instruction::loop(2, {}))),
            "stream 0 (s), instruction 0 (loop): empty loop body");
  EXPECT_EQ(validationError(oneInstruction(Instruction::wrGB(8192, 32))),
            "stream 0 (s), instruction 0 (wr_gb): global-buffer bytes [8192, "
            "8224) are out of range (target has 8192 bytes)");
  EXPECT_EQ(validationError(oneInstruction(Instruction::wrGB(0, 33))),
            "stream 0 (s), instruction 0 (wr_gb): bytes 33 must be a positive "
            "multiple of 32");
  EXPECT_EQ(validationError(
                oneInstruction(withData(Instruction::wrGB(0, 32), 0, 4080))),
            "stream 0 (s), instruction 0 (wr_gb): data bytes [4080, 4112) is "
            "outside region 'act' (4096 bytes)");
  EXPECT_EQ(
      validationError(oneInstruction(Instruction::af(Function::Softmax, 1))),
      "stream 0 (s), instruction 0 (af): softmax is not an activation "
      "function (use sfm)");
  EXPECT_EQ(validationError(oneInstruction(Instruction::sfm(0))),
            "stream 0 (s), instruction 0 (sfm): length 0 must be positive");
}

TEST(ProgramTest, ValidateProgramLevel) {
  Program p = oneInstruction(Instruction::barrier());
  p.entries[0].steps.push_back({StepKind::Stream, 5});
  EXPECT_EQ(validationError(p), "entry 0 (decode), step 1: refers to stream "
                                "5, but the program has 1 streams");

  p = oneInstruction(Instruction::call(3));
  EXPECT_EQ(validationError(p),
            "stream 0 (s), instruction 0 (call): calls kernel 3, but the "
            "program has 0 kernels");

  p = oneInstruction(Instruction::barrier());
  p.regions.push_back(
      {"kv", RegionKind::KvCache, {8, 8}, {32, 32}, {60, 100}, 4096});
  EXPECT_EQ(validationError(p), "regions 'act' and 'kv' overlap");

  p = oneInstruction(Instruction::barrier());
  p.regions[0].bytes = int64_t(1) << 40;
  EXPECT_EQ(validationError(p),
            "region 0 (act): 1099511627776 bytes do not fit its channels, "
            "banks and rows (67108864 bytes)");

  p = oneInstruction(Instruction::barrier());
  p.entries[0].steps.clear();
  EXPECT_EQ(validationError(p), "entry 0 (decode): no steps");

  p = oneInstruction(Instruction::macAB(0, 0, 1));
  Target aim = hbm3Target();
  aim.name = "gddr6-aim";
  aim.org.channels = 32;
  EXPECT_EQ(errorOf(validateProgram(p, aim)),
            "program was compiled for 16 channels, target 'gddr6-aim' has 32");

  // Structure: a field the op does not take, several problems at once.
  Instruction mac = Instruction::macAB(0, 0, 1);
  mac.bytes = 5;
  mac.body = {Instruction::barrier()};
  EXPECT_EQ(validationError(oneInstruction(mac)),
            "stream 0 (s), instruction 0 (mac_ab): field 'bytes' is not used "
            "by mac_ab\n"
            "stream 0 (s), instruction 0 (mac_ab): only a loop has a body");
}

TEST(ProgramTest, ValidateTargetUnits) {
  Target t = hbm3Target();
  Program p = oneInstruction(Instruction::af(Function::Silu, 1));
  EXPECT_EQ(errorOf(validateProgram(p, t)),
            "stream 0 (s), instruction 0 (af): target 'hbm3-pim' has no "
            "activation function silu (it has gelu, relu)");
  t.pim.activationFunctions.clear();
  EXPECT_EQ(errorOf(validateProgram(p, t)),
            "stream 0 (s), instruction 0 (af): target 'hbm3-pim' has no "
            "activation function silu (no AF unit)");
  t.nearMemory.clear();
  EXPECT_EQ(errorOf(validateProgram(oneInstruction(Instruction::sfm(64)), t)),
            "stream 0 (s), instruction 0 (sfm): target 'hbm3-pim' has no "
            "softmax near-memory unit");
}

TEST(ProgramTest, ChannelIndexAddressesPerChannelData) {
  std::string text = std::string(kAsmHeader) + ".stream s channels=4-7\n"
                                               "  rd_acc data=act+32*ch\n";
  auto p = parseProgramText(text, "ch.pimasm");
  ASSERT_TRUE(static_cast<bool>(p)) << toString(p.takeError());
  const Instruction &rd = p->streams[0].body[0];
  EXPECT_EQ(rd.at(Field::Data, {}, 3), 96);
  EXPECT_NE(textOf(*p).find("  rd_acc data=act+32*ch\n"), std::string::npos);
  EXPECT_FALSE(validateProgram(*p, hbm3Target()));

  // 4 channels x 1024 bytes do not fit a 4096-byte region at offset 32.
  text = std::string(kAsmHeader) + ".stream s channels=4-7\n"
                                   "  rd_acc data=act+32+1024*ch count=32\n";
  p = parseProgramText(text, "ch.pimasm");
  ASSERT_TRUE(static_cast<bool>(p)) << toString(p.takeError());
  EXPECT_EQ(errorOf(validateProgram(*p, hbm3Target())),
            "stream 0 (s), instruction 0 (rd_acc): data bytes [32, 4128) is "
            "outside region 'act' (4096 bytes)");

  EXPECT_EQ(asmError(".stream s channels=0\n  loop ch 2 {\n"),
            "t.pimasm:7:8: 'ch' is the channel index, not a loop variable "
            "name");
}

//===----------------------------------------------------------------------===//
// The shipped targets
//===----------------------------------------------------------------------===//

namespace {
/// The target file, or nullopt (with the reason) when it cannot be loaded.
std::optional<Target> shippedTarget(StringRef name, std::string &hash) {
  std::string path = pimsim::test::targetPath(name);
  auto bytes = MemoryBuffer::getFile(path);
  auto target = loadTarget(path);
  if (!bytes || !target) {
    if (!target)
      ADD_FAILURE() << toString(target.takeError());
    return std::nullopt;
  }
  hash = targetContentHash((*bytes)->getBuffer());
  return std::move(*target);
}

// The AiM GEMV of docs/pimsim-isa.md: y = gelu(W x), W 4096x4096 bf16 over
// 32 channels x 16 banks (8 output rows per bank, 4 DRAM rows each).
const char *kAimGemv = R"(.version 2.0
.target gddr6-aim hash=sha256:0
.org stacks=1 channels=32 pseudo_channels=1 sids=1 bank_groups=4 banks=4 rows=16384 columns=64 access_bytes=32

.region w kind=weights channels=0-31 banks=0-15 rows=0-31 bytes=33554432
.region act kind=activations channels=0-31 banks=0-15 rows=32 bytes=16384

.weight "mlp.up_proj.weight" region=w format=bf16 shape=4096x4096 axis=0 tile=8x4096 interleave=bank rows=0-31 offset=0 bytes=33554432

.kernel residual kind=elementwise m=1 n=4096 k=0 flops=4096 bytes=24576 in=act[8192:16384] out=act[8192:16384]

.stream gemv channels=0-31
  loop i 8 {
    loop j 4 {
      wr_gb offset=0 bytes=2048 data=act+2048*j
      mac_ab row=4*i+j col=0 count=64
    }
    af fn=gelu
    rd_af data=act+8192+32*i+256*ch
  }

.entry decode = gemv, barrier, residual
)";
} // namespace

TEST(ProgramTest, ValidatesAgainstShippedHbm3Target) {
  std::string hash;
  std::optional<Target> t = shippedTarget("hbm3-pim.json", hash);
  if (!t)
    return;
  Program p = sampleProgram();
  p.target.org = t->org;
  p.target.hash = hash;
  // hbm3-pim has no AF unit: keep the AttAcc stream only.
  p.streams.pop_back();
  p.entries = {{"decode", {{StepKind::Stream, 0}}}};
  Error err = validateProgram(p, *t);
  EXPECT_FALSE(err) << toString(std::move(err));
  EXPECT_EQ(p.target.hash.substr(0, 7), "sha256:");
}

TEST(ProgramTest, ValidatesAgainstShippedAimTarget) {
  std::string hash;
  std::optional<Target> t = shippedTarget("gddr6-aim.json", hash);
  if (!t)
    return;
  auto p = parseProgramText(kAimGemv, "aim.pimasm");
  ASSERT_TRUE(static_cast<bool>(p)) << toString(p.takeError());
  Error err = validateProgram(*p, *t);
  EXPECT_FALSE(err) << toString(std::move(err));
  EXPECT_EQ(textOf(*p), std::string("# pimsim program\n") + kAimGemv);
}

TEST(ProgramTest, DocumentedExamplesAreExact) {
  std::string path = std::string(PIMSIM_TARGETS_DIR) + "/../docs/pimsim-isa.md";
  auto doc = MemoryBuffer::getFile(path);
  ASSERT_TRUE(static_cast<bool>(doc)) << path;
  std::string sample = textOf(sampleProgram());
  unsigned programs = 0, fragments = 0;
  StringRef rest = (*doc)->getBuffer();
  while (true) {
    size_t open = rest.find("```\n");
    if (open == StringRef::npos)
      break;
    rest = rest.drop_front(open + 4);
    size_t close = rest.find("```\n");
    ASSERT_NE(close, StringRef::npos);
    StringRef block = rest.take_front(close);
    rest = rest.drop_front(close + 4);
    if (block.starts_with(".version 2.0\n.target")) {
      auto p = parseProgramText(block, "doc.pimasm");
      ASSERT_TRUE(static_cast<bool>(p)) << toString(p.takeError());
      EXPECT_EQ(textOf(*p), "# pimsim program\n" + block.str());
      ++programs;
    } else if (block.starts_with(".stream score")) {
      EXPECT_NE(sample.find(block.str()), std::string::npos) << block.str();
      ++fragments;
    }
  }
  EXPECT_EQ(programs, 1u);
  EXPECT_EQ(fragments, 1u);
}

TEST(ProgramTest, DamagedAssemblyNeverCrashes) {
  std::string good = textOf(sampleProgram());
  const std::string alphabet = " \n\t\"#{}=+-*,.:[]0123456789xijchabz\\";
  uint32_t seed = 777;
  auto next = [&] {
    seed = seed * 1103515245 + 12345;
    return seed >> 8;
  };
  size_t accepted = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string text = good;
    for (unsigned n = 1 + next() % 4; n > 0; --n) {
      size_t at = next() % text.size();
      char c = alphabet[next() % alphabet.size()];
      switch (next() % 3) {
      case 0:
        text[at] = c;
        break;
      case 1:
        text.erase(at, 1);
        break;
      default:
        text.insert(text.begin() + at, c);
      }
    }
    auto p = parseProgramText(text, "damaged.pimasm");
    if (!p) {
      std::string msg = toString(p.takeError());
      EXPECT_EQ(msg.substr(0, 15), "damaged.pimasm:") << msg;
      continue;
    }
    ++accepted;
    // Whatever parses prints back to text that parses to the same program.
    auto again = parseProgramText(textOf(*p), "again.pimasm");
    ASSERT_TRUE(static_cast<bool>(again)) << toString(again.takeError());
    EXPECT_TRUE(*again == *p);
    consumeError(validateProgram(*p, hbm3Target()));
  }
  EXPECT_GT(accepted, 0u);
}

// The binary reader (checkProgram) and the assembler accept exactly the
// same programs: whatever checkProgram accepts prints as text that
// assembles back to it, and whatever it rejects does not assemble.
TEST(ProgramTest, ReaderAndAssemblerAcceptTheSamePrograms) {
  std::vector<std::pair<std::string, Program>> cases;
  cases.push_back({"sample", sampleProgram()});
  Program noChannels = sampleProgram();
  noChannels.streams[0].channels.clear();
  cases.push_back({"stream with no channels", noChannels});
  Program wideLoop = sampleProgram();
  wideLoop.streams[0].channels = {{0, 1}, {3, 2}};
  cases.push_back({"stream with two channel ranges", wideLoop});
  // INT64_MIN prints as "-9223372036854775808" (a fuzzing finding).
  Program extremes = sampleProgram();
  extremes.params.push_back({"low", INT64_MIN, INT64_MAX, -1, 0, 1, 0});
  extremes.params.push_back({"far", INT64_MIN, INT64_MAX,
                             int64_t(extremes.params.size()) - 1, INT64_MIN, 1,
                             0});
  cases.push_back({"INT64_MIN in integer fields", extremes});
  for (auto &[what, p] : cases) {
    Error checked = checkProgram(p);
    bool readable = !checked;
    consumeError(std::move(checked));
    std::string text;
    raw_string_ostream os(text);
    printProgram(p, os);
    auto assembled = parseProgramText(text, "printed.s");
    EXPECT_EQ(readable, static_cast<bool>(assembled)) << what << "\n" << text;
    if (assembled)
      EXPECT_TRUE(*assembled == p) << what;
    else
      consumeError(assembled.takeError());
  }
  EXPECT_NE(errorOf(checkProgram(noChannels)).find("no channels"),
            std::string::npos);
}

TEST(ProgramTest, StreamInfoIsChecked) {
  Program p = oneInstruction(Instruction::barrier());
  p.streams[0].info = {"L 0", "qkv", -2, "linear", -1, ""};
  std::string e = errorOf(checkProgram(p));
  EXPECT_NE(e.find("layer 'L 0' is not a name"), std::string::npos) << e;
  EXPECT_NE(e.find("part -2 is negative"), std::string::npos) << e;
  EXPECT_NE(e.find("bytes -1 is negative"), std::string::npos) << e;
  // The text form refuses the same program.
  p.streams[0].info = {"L0", "qkv", 0, "linear", 64, ""};
  std::string text = textOf(p);
  auto again = parseProgramText(text, "<text>");
  ASSERT_TRUE(bool(again)) << toString(again.takeError());
  EXPECT_EQ(again->streams[0].info, p.streams[0].info);
  StringRef bad = "part=0";
  size_t at = text.find(bad.str());
  ASSERT_NE(at, std::string::npos);
  text.replace(at, bad.size(), "part=-5");
  EXPECT_NE(errorOf(parseProgramText(text, "<text>").takeError())
                .find("part -5 is negative"),
            std::string::npos);
}

// (2.1) The library kernel a stream runs: binary and text keep it, it must
// be a name, and a 2.0 program (no such field) reads with none.
TEST(ProgramTest, StreamKernelRoundTripsAndIsChecked) {
  Program p = oneInstruction(Instruction::barrier());
  p.streams[0].info = {"L0", "qkv", -1, "linear", 64, "gemv_fit"};
  ASSERT_FALSE(bool(checkProgram(p)));
  auto bytes = serializeProgram(p);
  ASSERT_TRUE(bool(bytes)) << toString(bytes.takeError());
  auto back = parseProgramBuffer(*bytes, "<bytes>");
  ASSERT_TRUE(bool(back)) << toString(back.takeError());
  EXPECT_EQ(back->streams[0].info.kernel, "gemv_fit");
  EXPECT_EQ(*back, p);
  std::string text = textOf(p);
  EXPECT_NE(text.find(".stream s channels=0-15 layer=L0 op=qkv class=linear "
                      "bytes=64 kernel=gemv_fit\n"),
            std::string::npos)
      << text;
  auto again = parseProgramText(text, "<text>");
  ASSERT_TRUE(bool(again)) << toString(again.takeError());
  EXPECT_EQ(*again, p);
  EXPECT_EQ(textOf(*again), text);

  // Only the kernel: the info is not empty, so it is written.
  Program only = oneInstruction(Instruction::barrier());
  only.streams[0].info.kernel = "attention_vt_fused";
  EXPECT_FALSE(only.streams[0].info.empty());
  bytes = serializeProgram(only);
  ASSERT_TRUE(bool(bytes)) << toString(bytes.takeError());
  back = parseProgramBuffer(*bytes, "<bytes>");
  ASSERT_TRUE(bool(back)) << toString(back.takeError());
  EXPECT_EQ(back->streams[0].info, only.streams[0].info);
  EXPECT_FALSE(p.streams[0].info == only.streams[0].info);

  // A name, as the other fields; the text form refuses the same.
  Program bad = p;
  bad.streams[0].info.kernel = "gemv fit";
  EXPECT_NE(errorOf(checkProgram(bad))
                .find("stream 0 (s): kernel 'gemv fit' is not a name"),
            std::string::npos);
  EXPECT_NE(errorOf(serializeProgram(bad)).find("kernel 'gemv fit'"),
            std::string::npos);
  std::string quoted = text;
  quoted.replace(quoted.find("kernel=gemv_fit"), 15, "kernel=\"gemv fit\"");
  EXPECT_NE(errorOf(parseProgramText(quoted, "<text>"))
                .find("kernel 'gemv fit' is not a name"),
            std::string::npos);
}

TEST(ProgramTest, Version20StreamInfoReadsWithoutKernel) {
  // A 2.0 writer's flatbuffer: StreamInfo ends at `bytes`.
  flatbuffers::FlatBufferBuilder fbb;
  auto org = fb::CreateOrganization(fbb, 1, 16, 2, 2, 4, 4, 16384, 32, 32);
  auto target = fb::CreateTargetIdentity(fbb, fbb.CreateString("hbm3-pim"),
                                         fbb.CreateString("sha256:0"), org);
  std::vector<flatbuffers::Offset<fb::Instruction>> body = {
      fb::CreateInstruction(fbb, fb::Opcode::Barrier)};
  std::vector<fb::Range> channels = {fb::Range(0, 16)};
  fb::StreamInfoBuilder info(fbb);
  info.add_part(-1);
  info.add_bytes(64);
  auto infoOffset = info.Finish();
  auto stream = fb::CreateStream(fbb, fbb.CreateString("s"),
                                 fbb.CreateVectorOfStructs(channels),
                                 fbb.CreateVector(body), infoOffset);
  std::vector<flatbuffers::Offset<fb::Stream>> streams = {stream};
  fb::Version v(2, 0);
  fb::FinishProgramBuffer(fbb, fb::CreateProgram(fbb, &v, target, 0, 0, 0,
                                                 fbb.CreateVector(streams)));
  auto p = parseProgramBuffer(
      ArrayRef<uint8_t>(fbb.GetBufferPointer(), fbb.GetSize()), "old.pimb");
  ASSERT_TRUE(static_cast<bool>(p)) << toString(p.takeError());
  EXPECT_EQ(p->version.major, 2);
  EXPECT_EQ(p->version.minor, 0);
  ASSERT_EQ(p->streams.size(), 1u);
  EXPECT_EQ(p->streams[0].info.bytes, 64);
  EXPECT_EQ(p->streams[0].info.kernel, "");
  std::string text = textOf(*p);
  EXPECT_NE(text.find(".version 2.0\n"), std::string::npos) << text;
  EXPECT_NE(text.find(".stream s channels=0-15 bytes=64\n"), std::string::npos)
      << text;
  // The text form of a 2.0 program reads too, and prints as it was.
  auto again = parseProgramText(text, "old.pimasm");
  ASSERT_TRUE(static_cast<bool>(again)) << toString(again.takeError());
  EXPECT_EQ(*again, *p);
  EXPECT_EQ(textOf(*again), text);
}

TEST(ProgramTest, GemvRowsLayoutRoundTripsAndIsChecked) {
  Program p = oneInstruction(Instruction::barrier());
  WeightBinding w;
  w.tensor = "lm_head";
  w.format = "fp16";
  w.shape = {128, 64};
  w.rows = {0, 2};
  w.bytes = 4096;
  w.layout = "gemv_rows";
  GemvRows g;
  g.nch = 2;
  g.kRows = 1;
  g.kLen = 64;
  g.source = GemvRows::Source::Gptq;
  g.bits = 4;
  g.groupSize = 32;
  g.packing = "gptq";
  g.scaleType = "f16";
  w.gemvRows = g;
  p.weights = {w};
  ASSERT_FALSE(bool(checkProgram(p)));
  // Binary and text keep every field.
  auto bytes = serializeProgram(p);
  ASSERT_TRUE(bool(bytes)) << toString(bytes.takeError());
  auto back = parseProgramBuffer(*bytes, "<bytes>");
  ASSERT_TRUE(bool(back)) << toString(back.takeError());
  EXPECT_EQ(back->weights[0].gemvRows, w.gemvRows);
  std::string text = textOf(p);
  EXPECT_NE(text.find("layout=gemv_rows n0=0 ch0=0 nch=2 row0=0 k_rows=1 k0=0 "
                      "k_len=64 source=gptq bits=4 group_size=32 sym=false "
                      "packing=gptq scale_type=f16"),
            std::string::npos)
      << text;
  auto again = parseProgramText(text, "<text>");
  ASSERT_TRUE(bool(again)) << toString(again.takeError());
  EXPECT_EQ(*again, p);
  // Each value in its domain.
  Program bad = p;
  GemvRows &b = *bad.weights[0].gemvRows;
  b.bits = 3;
  b.nch = 0;
  b.packing = "awq";
  std::string e = errorOf(checkProgram(bad));
  EXPECT_NE(e.find("gemv_rows: bits is 3, expected 4 or 8"), std::string::npos)
      << e;
  EXPECT_NE(e.find("gemv_rows: nch is 0, must be at least 1"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("gemv_rows: packing 'awq' is not gptq or gptq_v2"),
            std::string::npos)
      << e;
  bad = p;
  bad.weights[0].layout = "other";
  EXPECT_NE(errorOf(checkProgram(bad)).find("the layout is 'other'"),
            std::string::npos);
  // The text form names a bad key for the source.
  std::string dense = text;
  size_t at = dense.find("source=gptq");
  dense.replace(at, 11, "source=dense");
  EXPECT_NE(errorOf(parseProgramText(dense, "<text>").takeError())
                .find("'bits' is for source=gptq"),
            std::string::npos);
}
