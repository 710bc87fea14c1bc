//===- TargetTest.cpp - target files, validation, address mapping ---------===//
//
// The shipped targets are checked against specs/pim-hardware.md (sections 6
// and 7): counts, peaks, the whole section 7.4 constraint table for
// hbm3-pim, and the section 7.1 address bits. Every validation rule is
// exercised by editing a shipped target and checking the error names the
// JSON path.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "pimsim/Target.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <random>

using namespace pimsim;
using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;
using pimsim::test::loadShipped;
using pimsim::test::targetPath;

namespace {

Value readJson(llvm::StringRef file) {
  auto buffer = llvm::MemoryBuffer::getFile(targetPath(file));
  if (!buffer) {
    ADD_FAILURE() << "cannot read " << file.str();
    return Value(Object());
  }
  llvm::Expected<Value> v = llvm::json::parse((*buffer)->getBuffer());
  if (!v) {
    ADD_FAILURE() << llvm::toString(v.takeError());
    return Value(Object());
  }
  return std::move(*v);
}

/// Loads `file` after `edit`; the error text, or "<loaded>" if it loads.
std::string errorAfter(llvm::StringRef file,
                       llvm::function_ref<void(Object &)> edit) {
  Value v = readJson(file);
  if (v.getAsObject()->empty())
    return "<base target unreadable>";
  edit(*v.getAsObject());
  std::string text = llvm::formatv("{0:2}", v).str();
  llvm::Expected<Target> t = parseTarget(text, "targets/x.json");
  if (t)
    return "<loaded>";
  return llvm::toString(t.takeError());
}

/// A section of a target being edited; a failure (not a crash) if absent.
Object &section(Object &root, llvm::StringRef name) {
  if (Object *o = root.getObject(name))
    return *o;
  ADD_FAILURE() << "no object '" << name.str() << "' in the target";
  static Object scratch;
  return scratch;
}

Object &constraint(Object &root, size_t i) {
  Array *a = root.getArray("constraints");
  if (a && i < a->size() && (*a)[i].getAsObject())
    return *(*a)[i].getAsObject();
  ADD_FAILURE() << "no constraints[" << i << "] in the target";
  static Object scratch;
  return scratch;
}

Object &nearMemoryUnit(Object &root, size_t i) {
  Array *a = root.getArray("near_memory");
  if (a && i < a->size() && (*a)[i].getAsObject())
    return *(*a)[i].getAsObject();
  ADD_FAILURE() << "no near_memory[" << i << "] in the target";
  static Object scratch;
  return scratch;
}

#define EXPECT_ERROR(text, substring)                                          \
  do {                                                                         \
    std::string err_ = (text);                                                 \
    EXPECT_NE(err_.find(substring), std::string::npos)                         \
        << "error was: " << err_ << "\nexpected to contain: " << (substring);  \
  } while (0)

std::vector<Command> commands(llvm::StringRef names) {
  llvm::SmallVector<llvm::StringRef> parts;
  names.split(parts, ' ', -1, /*KeepEmpty=*/false);
  std::vector<Command> out;
  for (llvm::StringRef p : parts) {
    std::optional<Command> c = parseCommand(p);
    EXPECT_TRUE(c.has_value()) << p.str();
    if (c)
      out.push_back(*c);
  }
  llvm::sort(out);
  return out;
}

/// One row of a section 7.4 table, with the spec's cycle count.
struct Row {
  const char *level, *from, *to, *param;
  int64_t cycles;
  int window = 1;
};

bool matches(const TimingConstraint &c, const Row &r) {
  std::vector<Command> from = c.from, to = c.to;
  llvm::sort(from);
  llvm::sort(to);
  return levelName(c.level) == r.level && from == commands(r.from) &&
         to == commands(r.to) && c.param == r.param && c.cycles == r.cycles &&
         c.window == r.window;
}

// specs/pim-hardware.md section 7.4, every row, 5.2 Gbps power-capped values.
const Row kSection74[] = {
    // Channel level.
    {"channel", "ACT", "ACT PRE PREA PRESB REFab REFsb", "nACTCMD", 2},
    {"channel", "ACTAB", "ACTAB ACT PRE PREA REFab REFsb", "nACTCMD", 2},
    {"channel", "ACTSB", "ACTSB ACT PRE PREA PRESB REFab REFsb", "nACTCMD", 2},
    {"channel", "ACTPB", "ACTPB ACT PRE PREA PREPB REFab REFsb", "nACTCMD", 2},
    {"channel", "ACTAB", "ACTAB", "nRC", 63},
    {"channel", "ACTAB", "MACAB", "nRCDRD", 19},
    {"channel", "ACTAB", "PREA", "nRAS", 45},
    {"channel", "MACAB", "MACAB", "nCCDAB", 6},
    {"channel", "MACAB", "PREA", "nRTPL", 8},
    {"channel", "PREA", "ACTAB", "nRP", 19},
    {"channel", "MACSB", "MACSB", "nCCDSB", 6},
    {"channel", "MACPB", "MACPB", "nBL", 2},
    // Pseudo-channel level.
    {"pseudo_channel", "WRGB MVSB MVGB SFM RD WR", "WRGB MVSB MVGB SFM RD WR",
     "nBL", 2},
    {"pseudo_channel", "RD", "RD", "nBL", 2},
    {"pseudo_channel", "WR", "WR", "nBL", 2},
    {"pseudo_channel", "PREA", "ACT", "nRP", 19},
    {"pseudo_channel", "REFab", "ACT REFsb ACTAB ACTSB ACTPB", "nRFC", 456},
    // SID level.
    {"sid", "WRGB MVSB MVGB SFM RD WR", "WRGB MVSB MVGB SFM RD WR", "nCCDS", 2},
    {"sid", "ACT", "ACT", "nRRDS", 2},
    {"sid", "ACT", "ACT", "nFAW", 39, 4},
    {"sid", "ACT", "REFsb", "nACTREFSBS", 3},
    {"sid", "REFsb", "REFsb", "nRREFD", 11},
    {"sid", "REFsb", "ACT", "nREFSBACTS", 10},
    {"sid", "RD", "RD", "nCCDS", 2},
    {"sid", "WR", "WR", "nCCDS", 2},
    {"sid", "RD", "WR", "nRDWR", 17},
    {"sid", "WR", "RD", "nWRRDS", 16},
    {"sid", "PREA", "ACT", "nRP", 19},
    {"sid", "MACPB", "MACPB", "nCCDS", 2},
    // Bank-group level.
    {"bank_group", "WRGB MVSB MVGB SFM RD WR", "WRGB MVSB MVGB SFM RD WR",
     "nCCDL", 4},
    {"bank_group", "RD", "RD", "nCCDL", 4},
    {"bank_group", "WR", "WR", "nCCDL", 4},
    {"bank_group", "WR", "RD", "nWRRDL", 19},
    {"bank_group", "ACT", "ACT", "nRRDL", 4},
    {"bank_group", "ACT", "REFsb", "nACTREFSBL", 5},
    {"bank_group", "REFsb", "ACT", "nREFSBACTL", 3},
    {"bank_group", "MACPB", "MACPB", "nCCDL", 4},
    // Bank level.
    {"bank", "ACT", "ACT", "nRC", 63},
    {"bank", "ACT", "RD", "nRCDRD", 19},
    {"bank", "ACT", "WR", "nRCDWR", 19},
    {"bank", "ACT", "PRE", "nRAS", 45},
    {"bank", "PRE", "ACT", "nRP", 19},
    {"bank", "RD", "PRE", "nRTPL", 8},
    {"bank", "WR", "PRE", "nWRPRE", 29},
    {"bank", "ACTSB", "ACTSB", "nRC", 63},
    {"bank", "ACTPB", "ACTPB", "nRC", 63},
    {"bank", "ACTSB", "MACSB", "nRCDRD", 19},
    {"bank", "ACTPB", "MACPB", "nRCDRD", 19},
    {"bank", "ACTSB", "PRESB", "nRAS", 45},
    {"bank", "ACTPB", "PREPB", "nRAS", 45},
    {"bank", "MACSB", "PRESB", "nRTPL", 8},
    {"bank", "MACPB", "PREPB", "nRTPL", 8},
    {"bank", "PRESB", "ACTSB", "nRP", 19},
    {"bank", "PREPB", "ACTPB", "nRP", 19},
};

bool hasConstraint(const Target &t, const Row &r) {
  return llvm::any_of(t.constraints,
                      [&](const TimingConstraint &c) { return matches(c, r); });
}

void expectWithin(double actual, double expected, double relative) {
  EXPECT_NEAR(actual, expected, expected * relative)
      << "actual " << actual << ", expected " << expected;
}

//===----------------------------------------------------------------------===//
// Name tables
//===----------------------------------------------------------------------===//

TEST(TargetNames, RoundTrip) {
  for (unsigned i = 0; i < kNumCommands; ++i) {
    auto cmd = static_cast<Command>(i);
    EXPECT_EQ(parseCommand(commandName(cmd)), cmd) << commandName(cmd).str();
  }
  for (unsigned i = 0; i < kNumLevels; ++i) {
    auto level = static_cast<Level>(i);
    EXPECT_EQ(parseLevel(levelName(level)), level);
  }
  for (auto f : {AddrField::Stack, AddrField::Channel, AddrField::PseudoChannel,
                 AddrField::Sid, AddrField::BankGroup, AddrField::Bank,
                 AddrField::Row, AddrField::Column})
    EXPECT_EQ(parseAddrField(addrFieldName(f)), f);
  EXPECT_EQ(commandName(Command::MACAB), "MACAB");
  EXPECT_EQ(commandName(Command::REFab), "REFab");
  EXPECT_EQ(levelName(Level::PseudoChannel), "pseudo_channel");
  EXPECT_EQ(levelName(Level::BankGroup), "bank_group");
  EXPECT_EQ(addrFieldName(AddrField::PseudoChannel), "pseudo_channel");
  EXPECT_FALSE(parseCommand("BARRIER"));
  EXPECT_FALSE(parseCommand("act"));
  EXPECT_FALSE(parseLevel("rank"));
  EXPECT_FALSE(parseAddrField("offset"));
}

TEST(TargetNames, RowCommands) {
  for (llvm::StringRef name : {"ACT", "PRE", "PREA", "PRESB", "PREPB", "REFab",
                               "REFsb", "ACTAB", "ACTSB", "ACTPB"})
    EXPECT_TRUE(isRowCommand(*parseCommand(name))) << name.str();
  for (llvm::StringRef name :
       {"RD", "WR", "MACAB", "MACSB", "MACPB", "WRGB", "MVSB", "MVGB", "SFM",
        "RDACC", "EWMUL", "AF", "SETM", "SETH"})
    EXPECT_FALSE(isRowCommand(*parseCommand(name))) << name.str();
}

//===----------------------------------------------------------------------===//
// hbm3-pim
//===----------------------------------------------------------------------===//

TEST(Hbm3Pim, Organization) {
  Target t = loadShipped("hbm3-pim.json");
  EXPECT_EQ(t.name, "hbm3-pim");
  EXPECT_DOUBLE_EQ(t.tCKps, 769);
  EXPECT_EQ(t.org.stacks, 5);
  EXPECT_EQ(t.org.channels, 16);
  EXPECT_EQ(t.org.pseudoChannels, 2);
  EXPECT_EQ(t.org.sids, 2);
  EXPECT_EQ(t.org.bankGroups, 4);
  EXPECT_EQ(t.org.banks, 4);
  EXPECT_EQ(t.org.rows, 16384);
  EXPECT_EQ(t.org.columns, 32);
  EXPECT_EQ(t.org.accessBytes, 32);
  EXPECT_EQ(t.org.banksPerChannel(), 64);
  EXPECT_EQ(t.org.rowBytes(), 1024);
  EXPECT_EQ(t.org.bytesPerChannel(), int64_t(1) << 30);
  EXPECT_EQ(t.org.totalChannels(), 80);
  EXPECT_EQ(t.org.totalBytes() / t.org.stacks, int64_t(16) << 30);
  std::vector<AddrField> mapping = {
      AddrField::Stack, AddrField::Channel,   AddrField::PseudoChannel,
      AddrField::Sid,   AddrField::BankGroup, AddrField::Bank,
      AddrField::Row,   AddrField::Column};
  EXPECT_EQ(t.mapping, mapping);
  EXPECT_EQ(t.queueDepth, 32);
}

TEST(Hbm3Pim, Timings) {
  Target t = loadShipped("hbm3-pim.json");
  // Section 7.3, HBM3_5.2Gbps.
  std::pair<const char *, int64_t> expected[] = {
      {"nCCDAB", 6},    {"nCCDSB", 6},  {"nBL", 2},      {"nCL", 19},
      {"nCWL", 6},      {"nRCDRD", 19}, {"nRCDWR", 19},  {"nRP", 19},
      {"nRAS", 45},     {"nRC", 63},    {"nWR", 21},     {"nRTPS", 6},
      {"nRTPL", 8},     {"nCCDS", 2},   {"nCCDL", 4},    {"nRRDS", 2},
      {"nRRDL", 4},     {"nWTRS", 8},   {"nWTRL", 11},   {"nRTW", 3},
      {"nFAW", 39},     {"nRFC", 456},  {"nREFI", 5070}, {"nRFCSB", 260},
      {"nREFISB", 107}, {"nRREFD", 11}};
  for (auto [name, cycles] : expected) {
    llvm::Expected<int64_t> v = t.timing(name);
    ASSERT_TRUE(bool(v)) << llvm::toString(v.takeError());
    EXPECT_EQ(*v, cycles) << name;
  }
  // Derived rules of section 7.4.
  EXPECT_EQ(t.timings.lookup("nRDWR"), 17);
  EXPECT_EQ(t.timings.lookup("nWRRDS"), 16);
  EXPECT_EQ(t.timings.lookup("nWRRDL"), 19);
  EXPECT_EQ(t.timings.lookup("nWRPRE"), 29);
  llvm::Expected<int64_t> missing = t.timing("nFOO");
  ASSERT_FALSE(bool(missing));
  EXPECT_ERROR(llvm::toString(missing.takeError()),
               "timing 'nFOO' is not defined");
}

TEST(Hbm3Pim, EverySection74ConstraintPresent) {
  Target t = loadShipped("hbm3-pim.json");
  for (const Row &r : kSection74)
    EXPECT_TRUE(hasConstraint(t, r))
        << r.level << ": " << r.from << " -> " << r.to << " >= " << r.param
        << " = " << r.cycles << " (window " << r.window << ")";
  // Nothing beyond the table (section 7.4 lists rules that must not exist).
  EXPECT_EQ(t.constraints.size(), std::size(kSection74));
}

TEST(Hbm3Pim, SpotChecks) {
  Target t = loadShipped("hbm3-pim.json");
  // The rules that matter most for PIM bandwidth and for tFAW.
  EXPECT_TRUE(hasConstraint(t, {"channel", "MACAB", "MACAB", "nCCDAB", 6}));
  EXPECT_TRUE(hasConstraint(t, {"sid", "ACT", "ACT", "nFAW", 39, 4}));
  EXPECT_FALSE(hasConstraint(t, {"sid", "ACT", "ACT", "nFAW", 39, 1}));
  EXPECT_TRUE(hasConstraint(t, {"channel", "ACTAB", "MACAB", "nRCDRD", 19}));
  EXPECT_TRUE(hasConstraint(t, {"sid", "RD", "WR", "nRDWR", 17}));
  // No constraint between MACAB and the data-movement commands, no tFAW on
  // ACTAB, nothing before SFM but the data-bus rules.
  for (const TimingConstraint &c : t.constraints) {
    if (llvm::is_contained(c.from, Command::MACAB)) {
      for (Command to : c.to) {
        EXPECT_TRUE(to == Command::MACAB || to == Command::PREA)
            << commandName(to).str();
      }
    }
    if (c.param == "nFAW") {
      EXPECT_FALSE(llvm::is_contained(c.from, Command::ACTAB));
    }
    EXPECT_FALSE(llvm::is_contained(c.to, Command::SFM) &&
                 !llvm::is_contained(c.to, Command::WRGB));
  }
}

TEST(Hbm3Pim, Peaks) {
  Target t = loadShipped("hbm3-pim.json");
  double stacks = static_cast<double>(t.org.stacks);
  // Section 6.1 / 4: 665.6 GB/s external, 7.1 TB/s internal (capped).
  expectWithin(t.externalPeakBytesPerSec() / stacks, 665.6e9, 0.005);
  expectWithin(t.internalPeakBytesPerSec() / stacks, 7.1e12, 0.005);
  EXPECT_NEAR(t.internalPeakBytesPerSec() / t.externalPeakBytesPerSec(),
              16.0 * 4 / 6, 1e-9);
}

TEST(Hbm3Pim, UncappedVariantIsOneEdit) {
  Value v = readJson("hbm3-pim.json");
  section(*v.getAsObject(), "timings")["nCCDAB"] = 4;
  llvm::Expected<Target> t =
      parseTarget(llvm::formatv("{0:2}", v).str(), "npc.json");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->timings.lookup("nCCDSB"), 4);
  EXPECT_TRUE(hasConstraint(*t, {"channel", "MACAB", "MACAB", "nCCDAB", 4}));
  EXPECT_TRUE(hasConstraint(*t, {"channel", "MACSB", "MACSB", "nCCDSB", 4}));
  expectWithin(t->internalPeakBytesPerSec() / t->org.stacks, 10.65e12, 0.005);
}

TEST(Hbm3Pim, PimHostEnergy) {
  Target t = loadShipped("hbm3-pim.json");
  EXPECT_EQ(t.pim.banksPerUnit, 1);
  EXPECT_EQ(t.pim.lanes, 16);
  EXPECT_EQ(t.pim.inputFormat, "fp16");
  EXPECT_EQ(t.pim.accumulateFormat, "fp32");
  EXPECT_EQ(t.pim.nativeFormats, (std::vector<std::string>{"fp16", "bf16"}));
  EXPECT_EQ(t.pim.accumulators, 8); // HBM-PIM GRF_B
  EXPECT_GT(t.pim.globalBufferBytes, 0);
  EXPECT_TRUE(t.pim.activationFunctions.empty());
  ASSERT_EQ(t.nearMemory.size(), 2u);
  EXPECT_EQ(t.nearMemory[0].name, "softmax");
  EXPECT_EQ(t.nearMemory[0].placement, "buffer_die");
  EXPECT_TRUE(t.nearMemory[0].functions.empty());
  EXPECT_EQ(t.nearMemory[0].features,
            (std::vector<std::string>{"softcap", "alibi"}));
  EXPECT_EQ(t.nearMemoryUnit("softmax"), &t.nearMemory[0]);
  EXPECT_EQ(t.nearMemoryUnit("reduce"), nullptr);
  EXPECT_EQ(t.nearMemory[1].name, "vector");
  EXPECT_EQ(t.nearMemory[1].placement, "controller");
  EXPECT_DOUBLE_EQ(t.host.flops, 312e12);
  EXPECT_DOUBLE_EQ(t.host.bandwidthBytes, 3352e9);
  EXPECT_DOUBLE_EQ(t.host.linkBytes, 600e9);
  EXPECT_DOUBLE_EQ(t.energy.readPjPerBit, 0.55);
  EXPECT_DOUBLE_EQ(t.energy.ioPjPerBit, 3.89);
  EXPECT_DOUBLE_EQ(t.energy.macPjPerByte, 0.32);
}

//===----------------------------------------------------------------------===//
// Address mapping
//===----------------------------------------------------------------------===//

TEST(Hbm3Pim, Section71BitPositions) {
  Target t = loadShipped("hbm3-pim.json");
  auto bit = [&](unsigned b) { return decodeAddress(t, uint64_t(1) << b); };
  EXPECT_EQ(bit(30).channel, 1);
  EXPECT_EQ(bit(33).channel, 8);
  EXPECT_EQ(bit(10).row, 1);
  EXPECT_EQ(bit(23).row, 1 << 13);
  EXPECT_EQ(bit(5).column, 1);
  EXPECT_EQ(bit(9).column, 16);
  EXPECT_EQ(bit(24).bank, 1);
  EXPECT_EQ(bit(25).bank, 2);
  EXPECT_EQ(bit(26).bankGroup, 1);
  EXPECT_EQ(bit(27).bankGroup, 2);
  EXPECT_EQ(bit(28).sid, 1);
  EXPECT_EQ(bit(29).pseudoChannel, 1);
  EXPECT_EQ(bit(34).stack, 1);
  // The offset within one access is discarded.
  DecodedAddress zero = decodeAddress(t, 31);
  EXPECT_EQ(encodeAddress(t, zero), 0u);
  // Only bit 30 set: channel 1 and nothing else.
  DecodedAddress c1 = bit(30);
  EXPECT_EQ(c1.stack + c1.pseudoChannel + c1.sid + c1.bankGroup + c1.bank +
                c1.row + c1.column,
            0);
  // Section 7.6: the V base is row 8192.
  EXPECT_EQ(decodeAddress(t, uint64_t(1) << 23).row, 8192);
  // Bits above every field are ignored (stack takes 3 bits for 5 stacks).
  EXPECT_EQ(decodeAddress(t, uint64_t(1) << 37).stack, 0);
  EXPECT_EQ(decodeAddress(t, uint64_t(1) << 37).channel, 0);
}

TEST(Hbm3Pim, EncodeDecodeRoundTrip) {
  Target t = loadShipped("hbm3-pim.json");
  ASSERT_GT(t.org.totalBytes(), 0);
  std::mt19937_64 rng(42);
  uint64_t total = static_cast<uint64_t>(t.org.totalBytes());
  for (int i = 0; i < 10000; ++i) {
    uint64_t addr = rng() % total;
    DecodedAddress d = decodeAddress(t, addr);
    EXPECT_LT(d.stack, t.org.stacks);
    EXPECT_LT(d.channel, t.org.channels);
    EXPECT_LT(d.row, t.org.rows);
    EXPECT_LT(d.column, t.org.columns);
    EXPECT_EQ(encodeAddress(t, d), addr & ~uint64_t(31)) << addr;
  }
  for (int i = 0; i < 1000; ++i) {
    DecodedAddress d;
    d.stack = rng() % t.org.stacks;
    d.channel = rng() % t.org.channels;
    d.pseudoChannel = rng() % t.org.pseudoChannels;
    d.sid = rng() % t.org.sids;
    d.bankGroup = rng() % t.org.bankGroups;
    d.bank = rng() % t.org.banks;
    d.row = rng() % t.org.rows;
    d.column = rng() % t.org.columns;
    uint64_t addr = encodeAddress(t, d);
    EXPECT_LT(addr, total);
    DecodedAddress back = decodeAddress(t, addr);
    EXPECT_EQ(back.stack, d.stack);
    EXPECT_EQ(back.channel, d.channel);
    EXPECT_EQ(back.pseudoChannel, d.pseudoChannel);
    EXPECT_EQ(back.sid, d.sid);
    EXPECT_EQ(back.bankGroup, d.bankGroup);
    EXPECT_EQ(back.bank, d.bank);
    EXPECT_EQ(back.row, d.row);
    EXPECT_EQ(back.column, d.column);
  }
}

TEST(Gddr6Aim, BitPositions) {
  Target t = loadShipped("gddr6-aim.json");
  auto bit = [&](unsigned b) { return decodeAddress(t, uint64_t(1) << b); };
  // offset [4:0], column [10:5], row [24:11], bank [26:25], BG [28:27],
  // channel [33:29]; pseudo-channel and SID take no bits.
  EXPECT_EQ(bit(5).column, 1);
  EXPECT_EQ(bit(10).column, 32);
  EXPECT_EQ(bit(11).row, 1);
  EXPECT_EQ(bit(25).bank, 1);
  EXPECT_EQ(bit(27).bankGroup, 1);
  EXPECT_EQ(bit(29).channel, 1);
  EXPECT_EQ(bit(33).channel, 16);
  EXPECT_EQ(bit(34).channel, 0);
  DecodedAddress d;
  d.channel = 31;
  d.bankGroup = 3;
  d.bank = 2;
  d.row = 12345;
  d.column = 63;
  DecodedAddress back = decodeAddress(t, encodeAddress(t, d));
  EXPECT_EQ(back.channel, 31);
  EXPECT_EQ(back.bankGroup, 3);
  EXPECT_EQ(back.bank, 2);
  EXPECT_EQ(back.row, 12345);
  EXPECT_EQ(back.column, 63);
}

//===----------------------------------------------------------------------===//
// gddr6-aim
//===----------------------------------------------------------------------===//

TEST(Gddr6Aim, OrganizationAndTimings) {
  Target t = loadShipped("gddr6-aim.json");
  EXPECT_EQ(t.name, "gddr6-aim");
  EXPECT_DOUBLE_EQ(t.tCKps, 500);
  EXPECT_EQ(t.org.stacks, 1);
  EXPECT_EQ(t.org.totalChannels(), 32);
  EXPECT_EQ(t.org.pseudoChannels, 1);
  EXPECT_EQ(t.org.sids, 1);
  EXPECT_EQ(t.org.banksPerChannel(), 16);
  EXPECT_EQ(t.org.rows, 16384);
  EXPECT_EQ(t.org.rowBytes(), 2048);
  EXPECT_EQ(t.org.totalBytes(), int64_t(16) << 30);
  // Section 6.2 / 3.3 (aim_simulator GDDR6_AiM_timing).
  std::pair<const char *, int64_t> expected[] = {
      {"nCL", 50},      {"nRCDRD", 36},    {"nRCDWR", 28},    {"nRP", 32},
      {"nRAS", 54},     {"nRC", 89},       {"nCCDS", 2},      {"nCCDL", 2},
      {"nRRDS", 11},    {"nFAW", 42},      {"nREFI", 3333},   {"nRFC", 210},
      {"nRFCpb", 105},  {"nRCDRDMAC", 56}, {"nRCDEWMUL", 25}, {"nRCDRDAF", 86},
      {"nRCDRDCP", 66}, {"nRCDWRCP", 48},  {"nBL", 2},        {"nCCDAB", 2}};
  for (auto [name, cycles] : expected)
    EXPECT_EQ(t.timings.lookup(name), cycles) << name;
  EXPECT_TRUE(t.timings.count("nRCDRDMAC"));
  EXPECT_TRUE(hasConstraint(
      t, {"channel", "ACT ACTPB ACTAB", "MACAB", "nRCDRDMAC", 56}));
  EXPECT_TRUE(hasConstraint(t, {"channel", "MACAB", "MACAB", "nCCDAB", 2}));
  EXPECT_TRUE(
      hasConstraint(t, {"channel", "ACT ACTPB", "ACT ACTPB", "nFAW", 42, 4}));
  EXPECT_TRUE(
      hasConstraint(t, {"channel", "ACT ACTPB ACTAB", "AF", "nRCDRDAF", 86}));
  EXPECT_TRUE(
      hasConstraint(t, {"channel", "REFab", "ACT ACTPB ACTAB", "nRFC", 210}));
  EXPECT_TRUE(hasConstraint(t, {"bank", "ACT ACTPB", "RD", "nRCDRD", 36}));
  EXPECT_TRUE(hasConstraint(t, {"channel", "RD", "WR", "nRDWR", 50}));
}

TEST(Gddr6Aim, Peaks) {
  Target t = loadShipped("gddr6-aim.json");
  // Section 6.2: per 32-channel device, 1.02 TB/s external, 16.4 TB/s
  // internal.
  expectWithin(t.externalPeakBytesPerSec(), 1.02e12, 0.005);
  expectWithin(t.internalPeakBytesPerSec(), 16.4e12, 0.005);
  EXPECT_NEAR(t.internalPeakBytesPerSec() / t.externalPeakBytesPerSec(), 16.0,
              1e-9);
}

TEST(Gddr6Aim, PimUnit) {
  Target t = loadShipped("gddr6-aim.json");
  EXPECT_EQ(t.pim.inputFormat, "bf16");
  EXPECT_EQ(t.pim.lanes, 16);
  EXPECT_EQ(t.pim.banksPerUnit, 1);
  EXPECT_EQ(t.pim.globalBufferBytes, 2048);
  EXPECT_TRUE(llvm::is_contained(t.pim.activationFunctions, "gelu"));
  EXPECT_DOUBLE_EQ(t.energy.ioPjPerBit, 7.64);
  ASSERT_FALSE(t.nearMemory.empty());
  EXPECT_EQ(t.nearMemory[0].placement, "controller");
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

TEST(TargetValidation, ShippedTargetsReserializeCleanly) {
  // The edit-and-reload harness below must start from a loadable text.
  EXPECT_EQ(errorAfter("hbm3-pim.json", [](Object &) {}), "<loaded>");
  EXPECT_EQ(errorAfter("gddr6-aim.json", [](Object &) {}), "<loaded>");
}

TEST(TargetValidation, MissingFile) {
  llvm::Expected<Target> t = loadTarget("/nonexistent/dir/t.json");
  ASSERT_FALSE(bool(t));
  EXPECT_ERROR(llvm::toString(t.takeError()),
               "/nonexistent/dir/t.json: cannot read target file");
}

TEST(TargetValidation, BadJsonHasLineAndColumn) {
  llvm::Expected<Target> t =
      parseTarget("{\n  \"schema_version\": 1,\n  \"name\": ,\n}", "bad.json");
  ASSERT_FALSE(bool(t));
  std::string err = llvm::toString(t.takeError());
  EXPECT_ERROR(err, "bad.json:3:");
  EXPECT_ERROR(err, "invalid JSON");
  llvm::Expected<Target> arr = parseTarget("[1, 2]", "arr.json");
  ASSERT_FALSE(bool(arr));
  EXPECT_ERROR(llvm::toString(arr.takeError()),
               "arr.json: expected a JSON object at the top level");
}

TEST(TargetValidation, SchemaVersion) {
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json", [](Object &o) { o["schema_version"] = 2; }),
      "targets/x.json: schema_version: got 2, this pimsim reads 1");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json", [](Object &o) { o.erase("schema_version"); }),
      "targets/x.json: schema_version: missing");
}

TEST(TargetValidation, UnknownKeys) {
  EXPECT_ERROR(errorAfter("hbm3-pim.json", [](Object &o) { o["foo"] = 1; }),
               "targets/x.json: foo: unknown key");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "organization")["chanels"] = 16; }),
      "targets/x.json: organization.chanels: unknown key");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) { constraint(o, 3)["lvl"] = "bank"; }),
               "constraints[3].lvl: unknown key");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "pim_unit")["mode"] = 1; }),
      "pim_unit.mode: unknown key");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) { section(o, "energy")["wr_pj"] = 1; }),
               "energy.wr_pj: unknown key");
}

TEST(TargetValidation, MissingSections) {
  for (llvm::StringRef name :
       {"name", "clock", "organization", "address_mapping", "timings",
        "constraints", "pim_unit", "host", "energy", "controller"}) {
    std::string key = name.str();
    EXPECT_ERROR(errorAfter("hbm3-pim.json", [&](Object &o) { o.erase(key); }),
                 "targets/x.json: " + key + ": missing");
  }
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "organization").erase("rows"); }),
      "organization.rows: missing");
  // Optional sections may go.
  EXPECT_EQ(errorAfter("hbm3-pim.json",
                       [](Object &o) {
                         o.erase("near_memory");
                         o.erase("description");
                       }),
            "<loaded>");
}

TEST(TargetValidation, WrongTypes) {
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            section(o, "organization")["channels"] = "16";
                          }),
               "organization.channels: expected an integer, got a string");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "timings")["nCL"] = 19.5; }),
      "timings.nCL: expected an integer, got 19.5");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json", [](Object &o) { o["timings"] = Array{1}; }),
      "timings: expected an object, got an array");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "clock")["tck_ps"] = "769"; }),
      "clock.tck_ps: expected a number, got a string");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { constraint(o, 2)["from"] = "ACTSB"; }),
      "constraints[2].from: expected an array, got a string");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) { constraint(o, 2)["min"] = 2; }),
               "constraints[2].min: expected the name of a timing");
  EXPECT_ERROR(errorAfter("hbm3-pim.json", [](Object &o) { o["name"] = true; }),
               "name: expected a string, got a boolean");
}

TEST(TargetValidation, NonPositiveCounts) {
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "organization")["banks"] = 0; }),
      "organization.banks: must be positive, got 0");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "organization")["stacks"] = -1; }),
      "organization.stacks: must be positive, got -1");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            section(o, "controller")["queue_depth"] = 0;
                          }),
               "controller.queue_depth: must be positive");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) { section(o, "clock")["tck_ps"] = 0; }),
               "clock.tck_ps: must be positive");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "host")["flops"] = -1.0; }),
      "host.flops: must be positive");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "energy")["act_pj"] = -1.0; }),
      "energy.act_pj: must be non-negative");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) { section(o, "timings")["nRP"] = -1; }),
               "timings.nRP: must be between 0 and");
}

TEST(TargetValidation, PowersOfTwo) {
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "organization")["rows"] = 10000; }),
      "organization.rows: must be a power of two");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            section(o, "organization")["access_bytes"] = 24;
                          }),
               "organization.access_bytes: must be a power of two");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "organization")["columns"] = 48; }),
      "organization.columns: must be a power of two");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            section(o, "organization")["channels"] = 12;
                          }),
               "organization.channels: must be a power of two");
  // The stack is the most significant field: any count works.
  EXPECT_EQ(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "organization")["stacks"] = 3; }),
      "<loaded>");
}

TEST(TargetValidation, AddressMapping) {
  auto withMapping = [](std::vector<const char *> fields) {
    return [fields](Object &o) {
      Array a;
      for (const char *f : fields)
        a.push_back(f);
      o["address_mapping"] = std::move(a);
    };
  };
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          withMapping({"stack", "channel", "pseudo_channel",
                                       "sid", "bank_group", "bank", "column"})),
               "address_mapping: missing 'row'");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 withMapping({"stack", "channel", "pseudo_channel", "sid",
                              "bank_group", "bank", "row", "column", "bank"})),
      "address_mapping[8]: 'bank' listed twice");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 withMapping({"stack", "channel", "pseudo_channel", "sid",
                              "bank_group", "bnak", "row", "column"})),
      "address_mapping[5]: unknown field 'bnak'");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          withMapping({"channel", "pseudo_channel", "sid",
                                       "bank_group", "bank", "row", "column"})),
               "address_mapping: missing 'stack' (organization.stacks is 5)");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 withMapping({"channel", "stack", "pseudo_channel", "sid",
                              "bank_group", "bank", "row", "column"})),
      "address_mapping[1]: 'stack' must come first");
  EXPECT_ERROR(
      errorAfter("gddr6-aim.json",
                 withMapping({"stack", "channel", "pseudo_channel", "sid",
                              "bank_group", "bank", "row", "column"})),
      "address_mapping[0]: 'stack' given but organization.stacks is 1");
  // Another order is fine (HBM3-Custom style) and moves the fields.
  Value v = readJson("gddr6-aim.json");
  Array custom;
  for (const char *f : {"row", "bank", "sid", "column", "bank_group",
                        "pseudo_channel", "channel"})
    custom.push_back(f);
  (*v.getAsObject())["address_mapping"] = std::move(custom);
  llvm::Expected<Target> t = parseTarget(llvm::formatv("{0:2}", v).str(), "c");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(decodeAddress(*t, uint64_t(1) << 5).channel, 1);
  EXPECT_EQ(decodeAddress(*t, uint64_t(1) << 12).column, 1);
}

TEST(TargetValidation, ConstraintNames) {
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { constraint(o, 0)["level"] = "rank"; }),
      "constraints[0].level: unknown level 'rank'");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            constraint(o, 0)["from"] = Array{"ACT", "ACTX"};
                          }),
               "constraints[0].from[1]: unknown command 'ACTX'");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) { constraint(o, 5)["to"] = Array{}; }),
               "constraints[5].to: must name at least one command");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            constraint(o, 5)["to"] = Array{"MACAB", "MACAB"};
                          }),
               "constraints[5].to[1]: 'MACAB' listed twice");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) { constraint(o, 7)["min"] = "nFOO"; }),
               "targets/x.json: constraints[7].min: timing 'nFOO' is not "
               "defined in timings");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            if (Array *a = o.getArray("constraints"))
                              a->push_back((*a)[4]);
                          }),
               "constraints[54]: duplicates an earlier constraint");
}

TEST(TargetValidation, Window) {
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) { constraint(o, 19)["window"] = 0; }),
               "constraints[19].window: must be between 1 and 64, got 0");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) { constraint(o, 19)["window"] = "4"; }),
               "constraints[19].window: expected an integer");
}

TEST(TargetValidation, EngineTimingsRequired) {
  // gddr6-aim's derived timings do not use these, so the removal itself is
  // what gets reported, ahead of the constraints that name them.
  for (llvm::StringRef name :
       {"nRCDRD", "nRCDWR", "nRP", "nRAS", "nRC", "nREFI", "nRFC"}) {
    std::string key = name.str();
    EXPECT_ERROR(
        errorAfter("gddr6-aim.json",
                   [&](Object &o) { section(o, "timings").erase(key); }),
        "targets/x.json: timings." + key + ": missing");
  }
  // nBL, nCL and nCWL feed derived timings; without those and without
  // constraints the missing timing is what remains.
  for (llvm::StringRef name : {"nBL", "nCL", "nCWL"}) {
    std::string key = name.str();
    EXPECT_ERROR(errorAfter("gddr6-aim.json",
                            [&](Object &o) {
                              section(o, "timings").erase(key);
                              o.erase("derived_timings");
                              o["constraints"] = Array{};
                            }),
                 "targets/x.json: timings." + key + ": missing");
  }
  // Reported as missing even where a derived timing does not mention it.
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "timings").erase("nRFC"); }),
      "targets/x.json: timings.nRFC: missing");
  // nCCDAB only when a constraint mentions MACAB.
  EXPECT_ERROR(
      errorAfter("gddr6-aim.json",
                 [](Object &o) { section(o, "timings").erase("nCCDAB"); }),
      "targets/x.json: timings.nCCDAB: missing");
  EXPECT_EQ(errorAfter("gddr6-aim.json",
                       [](Object &o) {
                         section(o, "timings").erase("nCCDAB");
                         Array kept;
                         for (Value &c : *o.getArray("constraints")) {
                           std::string text = llvm::formatv("{0}", c).str();
                           if (text.find("MACAB") == std::string::npos)
                             kept.push_back(std::move(c));
                         }
                         o["constraints"] = std::move(kept);
                       }),
            "<loaded>");
  EXPECT_ERROR(errorAfter("gddr6-aim.json",
                          [](Object &o) { section(o, "timings")["nBL"] = 0; }),
               "timings.nBL: must be at least 1, got 0");
}

TEST(TargetValidation, DerivedTimings) {
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            section(o, "derived_timings")["nX"] = "nCL + nFOO";
                          }),
               "derived_timings.nX: timing 'nFOO' is not defined in timings");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            section(o, "derived_timings")["nX"] = "nCL +";
                          }),
               "derived_timings.nX: in 'nCL +' at column 6: expected a timing "
               "name, an integer or '('");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            section(o, "derived_timings")["nX"] = "nCWL - nCL";
                          }),
               "derived_timings.nX: 'nCWL - nCL' evaluates to -13");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            section(o, "derived_timings")["nCL"] = "nRP";
                          }),
               "derived_timings.nCL: already defined in timings");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            section(o, "derived_timings")["nX"] = "nRDWR + 1";
                          }),
               "derived_timings.nX: timing 'nRDWR' is not defined in timings");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "derived_timings")["nX"] = 3; }),
      "derived_timings.nX: expected a string, got a number");
  // Parentheses and a change that propagates.
  Value v = readJson("hbm3-pim.json");
  Object &root = *v.getAsObject();
  section(root, "derived_timings")["nX"] = "(nCL + nBL) - (nCWL - 1)";
  section(root, "timings")["nCL"] = 20;
  llvm::Expected<Target> t = parseTarget(llvm::formatv("{0:2}", v).str(), "d");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->timings.lookup("nX"), 17);
  EXPECT_EQ(t->timings.lookup("nRDWR"), 18);
  EXPECT_TRUE(hasConstraint(*t, {"sid", "RD", "WR", "nRDWR", 18}));
}

TEST(TargetValidation, PimUnitAndNearMemory) {
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "pim_unit")["lanes"] = 8; }),
      "pim_unit.lanes: 8 lanes of fp16 read 16 bytes per MAC");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            section(o, "pim_unit")["input_format"] = "fp8";
                          }),
               "pim_unit.input_format: unknown format 'fp8'");
  EXPECT_ERROR(errorAfter("gddr6-aim.json",
                          [](Object &o) {
                            section(o, "pim_unit")["reduction"] = "serial";
                          }),
               "pim_unit.reduction: unknown reduction 'serial'");
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) { section(o, "pim_unit").erase("reduction"); }),
      "pim_unit.reduction: missing");
  EXPECT_ERROR(
      errorAfter(
          "hbm3-pim.json",
          [](Object &o) {
            section(o, "pim_unit")["native_formats"] = Array{"fp16", "q4"};
          }),
      "pim_unit.native_formats[1]: unknown format 'q4'");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            section(o, "pim_unit")["banks_per_unit"] = 3;
                          }),
               "pim_unit.banks_per_unit: must be a power of two");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            section(o, "pim_unit")["global_buffer_bytes"] = 100;
                          }),
               "pim_unit.global_buffer_bytes: 100 is not a multiple");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            section(o, "pim_unit")["activation_functions"] =
                                Array{"gelu", "swish2"};
                          }),
               "pim_unit.activation_functions[1]: unknown activation function");
  // (2.2) features: known names, on the softmax unit only.
  EXPECT_ERROR(
      errorAfter("hbm3-pim.json",
                 [](Object &o) {
                   nearMemoryUnit(o, 0)["features"] = Array{"softcap", "bias"};
                 }),
      "near_memory[0].features[1]: unknown feature 'bias' (expected "
      "one of: softcap, alibi)");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            nearMemoryUnit(o, 1)["features"] = Array{"softcap"};
                          }),
               "near_memory[1].features: 'softcap' is a feature of the "
               "softmax unit (sfm), not of 'vector'");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            nearMemoryUnit(o, 1)["features"] = Array{"alibi"};
                          }),
               "near_memory[1].features: 'alibi' is a feature of the "
               "softmax unit (sfm), not of 'vector'");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            nearMemoryUnit(o, 0)["placement"] = "logic_die";
                          }),
               "near_memory[0].placement: unknown placement 'logic_die'");
  EXPECT_ERROR(errorAfter("hbm3-pim.json",
                          [](Object &o) {
                            nearMemoryUnit(o, 0)["elements_per_cycle"] = 0;
                          }),
               "near_memory[0].elements_per_cycle: must be positive");
  // Halving the units halves the internal peak.
  Value v = readJson("hbm3-pim.json");
  section(*v.getAsObject(), "pim_unit")["banks_per_unit"] = 2;
  llvm::Expected<Target> t = parseTarget(llvm::formatv("{0:2}", v).str(), "h");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  expectWithin(t->internalPeakBytesPerSec() / t->org.stacks, 7.1e12 / 2, 0.005);
}

} // namespace
