//===- EngineTest.cpp - command timing, controller, refresh, AttAcc trace -===//
//
// Every timing constraint of specs/pim-hardware.md section 7.4 gets a command
// sequence that the constraint, and nothing else, delays: the test checks
// the later command issues exactly that many cycles after the earlier one.
// Where two constraints of the shipped table have the same value, a copy of
// the table with one of them lowered isolates the other. The controller
// (section 7.5: queues, scheduling, barriers, refresh) and the AttAcc GPT-3
// attention trace (section 7.6) follow. All runs use targets/hbm3-pim.json
// and a recording observer; refresh is off unless a test is about it.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "pimsim/Engine.h"
#include "pimsim/Trace.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <tuple>

using namespace pimsim;
using pimsim::test::loadShipped;

namespace {

const Target &hbm3() {
  static const Target target = loadShipped("hbm3-pim.json");
  return target;
}

int64_t T(llvm::StringRef name) {
  llvm::Expected<int64_t> v = hbm3().timing(name);
  if (!v) {
    ADD_FAILURE() << llvm::toString(v.takeError());
    return -1000000;
  }
  return *v;
}

/// A decoded address built field by field: W().bank(1).row(5); unset
/// fields are 0.
struct W {
  DecodedAddress a;
  W &ch(int64_t v) { return a.channel = v, *this; }
  W &pch(int64_t v) { return a.pseudoChannel = v, *this; }
  W &sid(int64_t v) { return a.sid = v, *this; }
  W &bg(int64_t v) { return a.bankGroup = v, *this; }
  W &bank(int64_t v) { return a.bank = v, *this; }
  W &row(int64_t v) { return a.row = v, *this; }
  W &col(int64_t v) { return a.column = v, *this; }
};
using Where = W;

uint64_t addressOf(const Target &t, const Where &w) {
  return encodeAddress(t, w.a);
}

Request req(RequestType type, const Where &w, int64_t arrival = 0,
            const Target &t = hbm3()) {
  Request r;
  r.type = type;
  r.addr = addressOf(t, w);
  r.arrival = arrival;
  return r;
}

struct Issued {
  int64_t cycle;
  Command cmd;
  DecodedAddress addr;
  int tag; // -1: refresh
};

class Recorder : public CommandObserver {
public:
  std::vector<Issued> log;

  void onCommand(int64_t cycle, Command cmd, const DecodedAddress &addr,
                 const Request *r) override {
    log.push_back({cycle, cmd, addr, r ? static_cast<int>(r->tag) : -1});
  }
  /// Issue cycles of `cmd` in channel `channel` of stack 0, in order: of
  /// request `tag`, of refresh for tag -1, of anything for kAny.
  static constexpr int kAny = -2;
  std::vector<int64_t> cycles(Command cmd, int tag = kAny,
                              int64_t channel = 0) const {
    std::vector<int64_t> out;
    for (const Issued &i : log)
      if (i.cmd == cmd && (tag == kAny || i.tag == tag) &&
          i.addr.channel == channel && i.addr.stack == 0)
        out.push_back(i.cycle);
    return out;
  }
  int64_t first(Command cmd, int tag = kAny, int64_t channel = 0) const {
    std::vector<int64_t> c = cycles(cmd, tag, channel);
    return c.empty() ? -1 : c.front();
  }
  /// The commands issued for one request, in order.
  std::vector<Command> commandsOf(int tag) const {
    std::vector<Command> out;
    for (const Issued &i : log)
      if (i.tag == tag)
        out.push_back(i.cmd);
    return out;
  }
};

struct SimRun {
  Stats stats;
  Recorder rec;
  bool ok = false;
};

/// Runs a trace (tags = indices) with refresh off unless asked.
std::unique_ptr<SimRun> simulate(std::vector<Request> reqs,
                                 bool refresh = false,
                                 const Target &t = hbm3()) {
  for (size_t i = 0; i < reqs.size(); ++i)
    reqs[i].tag = static_cast<uint32_t>(i);
  auto run = std::make_unique<SimRun>();
  EngineOptions opts;
  opts.refresh = refresh;
  opts.observer = &run->rec;
  Engine engine(t, opts);
  llvm::Expected<Stats> s = engine.runTrace(reqs);
  if (!s) {
    ADD_FAILURE() << llvm::toString(s.takeError());
    return run;
  }
  run->stats = std::move(*s);
  run->ok = true;
  return run;
}

/// The shipped table with the pair (level, from -> to) set to `cycles`
/// (every constraint is split into single pairs first).
Target withConstraint(Level level, Command from, Command to, int64_t cycles) {
  Target t = hbm3();
  std::vector<TimingConstraint> pairs;
  for (const TimingConstraint &c : t.constraints)
    for (Command f : c.from)
      for (Command g : c.to) {
        if (c.level == level && f == from && g == to && c.window == 1)
          continue;
        pairs.push_back({c.level, {f}, {g}, c.param, c.cycles, c.window});
      }
  pairs.push_back({level, {from}, {to}, "test", cycles, 1});
  t.constraints = std::move(pairs);
  return t;
}

const RequestType LD = RequestType::Read;
const RequestType ST = RequestType::Write;
const RequestType MAC_AB = RequestType::MacAB;
const RequestType MAC_SB = RequestType::MacSB;
const RequestType MAC_PB = RequestType::MacPB;
const RequestType WR_GB = RequestType::WrGB;
const RequestType MV_SB = RequestType::MvSB;
const RequestType MV_GB = RequestType::MvGB;
const RequestType SFM = RequestType::Sfm;
const RequestType BARRIER = RequestType::Barrier;

using C = Command;

//===----------------------------------------------------------------------===//
// Plain DRAM timing (section 7.4, DRAM-default block)
//===----------------------------------------------------------------------===//

TEST(EngineTiming, ReadOfClosedBankActivatesThenReadsAfterRCDRD) {
  auto r = simulate({req(LD, W().bank(1).row(5))});
  EXPECT_EQ(r->rec.first(C::ACT), 0);
  EXPECT_EQ(r->rec.first(C::RD), T("nRCDRD"));
  // The read completes nCL + nBL after its RD; cycles counts up to it.
  EXPECT_EQ(r->stats.cycles, T("nRCDRD") + T("nCL") + T("nBL") + 1);
  EXPECT_EQ(r->stats.bytesRead, 32);
  EXPECT_EQ(r->stats.rowMisses, 1);
  EXPECT_EQ(r->stats.rowHits, 0);
  EXPECT_EQ(r->stats.commandCounts[static_cast<int>(C::ACT)], 1);
  EXPECT_EQ(r->stats.commandCounts[static_cast<int>(C::RD)], 1);
}

TEST(EngineTiming, RowConflictPrechargesAfterRASAndActivatesAfterRP) {
  auto r = simulate({req(LD, W().row(0)), req(LD, W().row(1))});
  std::vector<int64_t> acts = r->rec.cycles(C::ACT);
  ASSERT_EQ(acts.size(), 2u);
  int64_t pre = r->rec.first(C::PRE);
  EXPECT_EQ(pre, acts[0] + T("nRAS"));
  EXPECT_EQ(acts[1], pre + T("nRP"));
  EXPECT_EQ(r->rec.first(C::RD, 1), acts[1] + T("nRCDRD"));
}

TEST(EngineTiming, ReadToPrechargeIsRTPL) {
  // The second read of row 0 comes late, so RD -> PRE binds, not nRAS.
  auto r = simulate(
      {req(LD, W().row(0)), req(LD, W().row(0), 60), req(LD, W().row(1), 60)});
  int64_t rd = r->rec.first(C::RD, 1);
  EXPECT_EQ(rd, 60);
  int64_t pre = r->rec.first(C::PRE);
  EXPECT_EQ(pre, rd + T("nRTPL"));
  EXPECT_EQ(r->rec.first(C::ACT, 2), pre + T("nRP"));
}

TEST(EngineTiming, WriteToPrechargeIsCWLPlusBLPlusWR) {
  auto r = simulate({req(ST, W().row(0)), req(LD, W().row(1), 1)});
  int64_t wr = r->rec.first(C::WR);
  EXPECT_EQ(wr, T("nRCDWR"));
  EXPECT_EQ(r->rec.first(C::PRE), wr + T("nCWL") + T("nBL") + T("nWR"));
}

TEST(EngineTiming, ActToActSameBankGroupIsRRDL) {
  auto r = simulate({req(LD, W().bg(0).bank(0)), req(LD, W().bg(0).bank(1))});
  std::vector<int64_t> acts = r->rec.cycles(C::ACT);
  ASSERT_EQ(acts.size(), 2u);
  EXPECT_EQ(acts[1] - acts[0], T("nRRDL"));
}

TEST(EngineTiming, ActToActOtherBankGroupIsRRDS) {
  // The channel's 2-cycle ACT rule equals nRRDS; lower it to 1 to see nRRDS
  // alone (other BG, same SID) and the channel rule alone (other SID).
  Target t = withConstraint(Level::Channel, C::ACT, C::ACT, 1);
  auto bg =
      simulate({req(LD, W().bg(0), 0, t), req(LD, W().bg(1), 0, t)}, false, t);
  std::vector<int64_t> acts = bg->rec.cycles(C::ACT);
  ASSERT_EQ(acts.size(), 2u);
  EXPECT_EQ(acts[1] - acts[0], T("nRRDS"));
  auto sid = simulate({req(LD, W().sid(0), 0, t), req(LD, W().sid(1), 0, t)},
                      false, t);
  acts = sid->rec.cycles(C::ACT);
  ASSERT_EQ(acts.size(), 2u);
  EXPECT_EQ(acts[1] - acts[0], 1);
  // Shipped table: two ACTs of one channel are 2 cycles apart whatever the
  // pseudo-channel.
  auto pch = simulate({req(LD, W().pch(0)), req(LD, W().pch(1))});
  acts = pch->rec.cycles(C::ACT);
  ASSERT_EQ(acts.size(), 2u);
  EXPECT_EQ(acts[1] - acts[0], 2);
}

TEST(EngineTiming, FifthActInOneSidWaitsForFAW) {
  auto r = simulate({req(LD, W().bg(0)), req(LD, W().bg(1)), req(LD, W().bg(2)),
                     req(LD, W().bg(3)), req(LD, W().bg(0).bank(1)),
                     req(LD, W().sid(1))});
  std::vector<int64_t> first4 = {
      r->rec.first(C::ACT, 0), r->rec.first(C::ACT, 1), r->rec.first(C::ACT, 2),
      r->rec.first(C::ACT, 3)};
  EXPECT_EQ(first4, (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(r->rec.first(C::ACT, 4), first4[0] + T("nFAW"));
  // The window is per SID: an ACT in the other SID goes at once.
  EXPECT_EQ(r->rec.first(C::ACT, 5), 8);
}

TEST(EngineTiming, ActToActSameBankIsRC) {
  // nRAS + nRP = 64 > nRC = 63 in the shipped table; lower PRE -> ACT.
  Target t = withConstraint(Level::Bank, C::PRE, C::ACT, 1);
  auto r = simulate({req(LD, W().row(0), 0, t), req(LD, W().row(1), 0, t)},
                    false, t);
  std::vector<int64_t> acts = r->rec.cycles(C::ACT);
  ASSERT_EQ(acts.size(), 2u);
  EXPECT_EQ(r->rec.first(C::PRE), T("nRAS"));
  EXPECT_EQ(acts[1] - acts[0], T("nRC"));
}

/// Loads that open the banks of `open` at cycle 0, then the row hits `hits`
/// arriving one per cycle from `at`; tags count the loads first.
std::unique_ptr<SimRun>
hitsAfterOpening(std::vector<Where> open,
                 std::vector<std::pair<RequestType, Where>> hits,
                 int64_t at = 100, const Target &t = hbm3()) {
  std::vector<Request> reqs;
  for (const Where &w : open)
    reqs.push_back(req(LD, w, 0, t));
  int64_t arrival = at;
  for (auto &[type, w] : hits)
    reqs.push_back(req(type, w, arrival++, t));
  return simulate(reqs, false, t);
}

TEST(EngineTiming, ReadToReadSameBankGroupIsCCDL) {
  auto r = hitsAfterOpening({W().bg(0).bank(0), W().bg(0).bank(1)},
                            {{LD, W().bg(0).bank(0)}, {LD, W().bg(0).bank(1)}});
  EXPECT_EQ(r->rec.first(C::RD, 2), 100);
  EXPECT_EQ(r->rec.first(C::RD, 3), 100 + T("nCCDL"));
}

TEST(EngineTiming, ReadToReadOtherBankGroupIsCCDS) {
  auto bg = hitsAfterOpening({W().bg(0), W().bg(1)},
                             {{LD, W().bg(0)}, {LD, W().bg(1)}});
  EXPECT_EQ(bg->rec.first(C::RD, 3) - bg->rec.first(C::RD, 2), T("nCCDS"));
  // Other SID of the pseudo-channel: its data bus, nBL.
  auto sid = hitsAfterOpening({W().sid(0), W().sid(1)},
                              {{LD, W().sid(0)}, {LD, W().sid(1)}});
  EXPECT_EQ(sid->rec.first(C::RD, 3) - sid->rec.first(C::RD, 2), T("nBL"));
  // Other pseudo-channel: only the channel's one column command per cycle.
  auto pch = hitsAfterOpening({W().pch(0), W().pch(1)},
                              {{LD, W().pch(0)}, {LD, W().pch(1)}});
  EXPECT_EQ(pch->rec.first(C::RD, 3) - pch->rec.first(C::RD, 2), 1);
}

TEST(EngineTiming, WriteToReadIsCWLPlusBLPlusWTR) {
  auto sameBg =
      hitsAfterOpening({W().bg(0).bank(0), W().bg(0).bank(1)},
                       {{ST, W().bg(0).bank(0)}, {LD, W().bg(0).bank(1)}});
  int64_t wr = sameBg->rec.first(C::WR);
  EXPECT_EQ(wr, 100);
  EXPECT_EQ(sameBg->rec.first(C::RD, 3),
            wr + T("nCWL") + T("nBL") + T("nWTRL"));
  auto otherBg = hitsAfterOpening({W().bg(0), W().bg(1)},
                                  {{ST, W().bg(0)}, {LD, W().bg(1)}});
  wr = otherBg->rec.first(C::WR);
  EXPECT_EQ(otherBg->rec.first(C::RD, 3),
            wr + T("nCWL") + T("nBL") + T("nWTRS"));
}

TEST(EngineTiming, ReadToWriteIsCLPlusBLPlus2MinusCWL) {
  auto r = hitsAfterOpening({W().bg(0), W().bg(1)},
                            {{LD, W().bg(0)}, {ST, W().bg(1)}});
  int64_t rd = r->rec.first(C::RD, 2);
  EXPECT_EQ(rd, 100);
  EXPECT_EQ(r->rec.first(C::WR), rd + T("nCL") + T("nBL") + 2 - T("nCWL"));
}

TEST(EngineTiming, WriteToWriteIsCCDLOrCCDS) {
  auto sameBg =
      hitsAfterOpening({W().bg(0).bank(0), W().bg(0).bank(1)},
                       {{ST, W().bg(0).bank(0)}, {ST, W().bg(0).bank(1)}});
  std::vector<int64_t> wr = sameBg->rec.cycles(C::WR);
  ASSERT_EQ(wr.size(), 2u);
  EXPECT_EQ(wr[1] - wr[0], T("nCCDL"));
  auto otherBg = hitsAfterOpening({W().bg(0), W().bg(1)},
                                  {{ST, W().bg(0)}, {ST, W().bg(1)}});
  wr = otherBg->rec.cycles(C::WR);
  ASSERT_EQ(wr.size(), 2u);
  EXPECT_EQ(wr[1] - wr[0], T("nCCDS"));
}

//===----------------------------------------------------------------------===//
// PIM timing (section 7.4, PIM rules)
//===----------------------------------------------------------------------===//

TEST(EnginePimTiming, MacAbOnClosedChannelActivatesAllBanks) {
  auto r = simulate({req(MAC_AB, W().row(3))});
  EXPECT_EQ(r->rec.first(C::ACTAB), 0);
  EXPECT_EQ(r->rec.first(C::MACAB), T("nRCDRD"));
  EXPECT_EQ(r->stats.bytesMac, 32 * 64);
  EXPECT_EQ(r->stats.rowMisses, 1);
  EXPECT_EQ(r->stats.cycles, T("nRCDRD") + 1);
}

TEST(EnginePimTiming, MacAbToMacAbIsCCDAB) {
  auto r = simulate(
      {req(MAC_AB, W().row(3).col(0)), req(MAC_AB, W().row(3).col(1)),
       req(MAC_AB, W().row(3).col(2)), req(MAC_AB, W().row(3).col(3))});
  int64_t first = T("nRCDRD");
  int64_t step = T("nCCDAB");
  EXPECT_EQ(step, 6); // the power-capped default
  EXPECT_EQ(r->rec.cycles(C::MACAB),
            (std::vector<int64_t>{first, first + step, first + 2 * step,
                                  first + 3 * step}));
  EXPECT_EQ(r->stats.rowHits, 3);
  EXPECT_EQ(r->stats.rowMisses, 1);
}

TEST(EnginePimTiming, MacAbRowSwitchPrechargesAfterRTPLAndRAS) {
  std::vector<Request> reqs;
  for (int c = 0; c < 5; ++c)
    reqs.push_back(req(MAC_AB, W().row(0).col(c)));
  reqs.push_back(req(MAC_AB, W().row(1)));
  auto r = simulate(reqs);
  std::vector<int64_t> macs = r->rec.cycles(C::MACAB);
  ASSERT_EQ(macs.size(), 6u);
  int64_t prea = r->rec.first(C::PREA);
  EXPECT_EQ(prea, macs[4] + T("nRTPL")); // 51 > ACTAB + nRAS = 45
  std::vector<int64_t> actab = r->rec.cycles(C::ACTAB);
  ASSERT_EQ(actab.size(), 2u);
  EXPECT_EQ(actab[1], prea + T("nRP"));
  EXPECT_EQ(macs[5], actab[1] + T("nRCDRD"));

  auto one = simulate({req(MAC_AB, W().row(0)), req(MAC_AB, W().row(1))});
  EXPECT_EQ(one->rec.first(C::PREA), one->rec.first(C::ACTAB) + T("nRAS"));
}

TEST(EnginePimTiming, ActAbToActAbIsRC) {
  Target t = withConstraint(Level::Channel, C::PREA, C::ACTAB, 1);
  auto r = simulate(
      {req(MAC_AB, W().row(0), 0, t), req(MAC_AB, W().row(1), 0, t)}, false, t);
  std::vector<int64_t> actab = r->rec.cycles(C::ACTAB);
  ASSERT_EQ(actab.size(), 2u);
  EXPECT_EQ(r->rec.first(C::PREA), T("nRAS"));
  EXPECT_EQ(actab[1] - actab[0], T("nRC"));
}

TEST(EnginePimTiming, MacAbWalkFollowsBankState) {
  // Bank 0 open with another row: the walk meets it first -> PREA.
  auto conflict = simulate({req(LD, W().row(2)), req(MAC_AB, W().row(7), 30)});
  EXPECT_EQ(conflict->rec.commandsOf(1),
            (std::vector<Command>{C::PREA, C::ACTAB, C::MACAB}));
  // Only a later bank open (with the same row): bank 0 is closed -> ACTAB.
  // ACTAB adds the row to every bank, so both loads below are row hits.
  auto partial =
      simulate({req(LD, W().bg(1).bank(1).row(7)), req(MAC_AB, W().row(7), 30),
                req(LD, W().bg(1).bank(1).row(7), 80),
                req(LD, W().bg(3).bank(2).row(7), 80)});
  EXPECT_EQ(partial->rec.commandsOf(1),
            (std::vector<Command>{C::ACTAB, C::MACAB}));
  EXPECT_EQ(partial->rec.commandsOf(2), (std::vector<Command>{C::RD}));
  EXPECT_EQ(partial->rec.commandsOf(3), (std::vector<Command>{C::RD}));
  // A later bank open with another row: ACTAB adds row 7 to it and keeps
  // row 2 open too (Ramulator's row set), so both rows hit there.
  auto twoRows =
      simulate({req(LD, W().bg(1).bank(1).row(2)), req(MAC_AB, W().row(7), 30),
                req(LD, W().bg(1).bank(1).row(2), 80),
                req(LD, W().bg(1).bank(1).row(7), 90)});
  EXPECT_EQ(twoRows->rec.commandsOf(1),
            (std::vector<Command>{C::ACTAB, C::MACAB}));
  EXPECT_EQ(twoRows->rec.commandsOf(2), (std::vector<Command>{C::RD}));
  EXPECT_EQ(twoRows->rec.commandsOf(3), (std::vector<Command>{C::RD}));
}

TEST(EnginePimTiming, WrGbSpacingIsBLCCDSCCDLByLevel) {
  auto gap = [](Where a, Where b) {
    auto r = simulate({req(WR_GB, a), req(WR_GB, b)});
    std::vector<int64_t> c = r->rec.cycles(C::WRGB);
    return c.size() == 2 ? c[1] - c[0] : -1;
  };
  EXPECT_EQ(gap(W().bg(0).bank(0), W().bg(0).bank(1)), T("nCCDL"));
  EXPECT_EQ(gap(W().bg(0), W().bg(1)), T("nCCDS"));
  EXPECT_EQ(gap(W().sid(0), W().sid(1)), T("nBL"));
  EXPECT_EQ(gap(W().pch(0), W().pch(1)), 1); // the column slot only
}

TEST(EnginePimTiming, DataMovesShareTheDataPathRules) {
  auto r =
      simulate({req(WR_GB, W().bank(1)), req(MV_SB, W()), req(MV_GB, W())});
  int64_t wrgb = r->rec.first(C::WRGB);
  int64_t mvsb = r->rec.first(C::MVSB);
  EXPECT_EQ(mvsb - wrgb, T("nCCDL"));
  EXPECT_EQ(r->rec.first(C::MVGB) - mvsb, T("nCCDL"));
}

TEST(EnginePimTiming, NothingConstrainsSfmButItConstrainsLaterDataMoves) {
  // SFM is a channel-scope command: only channel-level rules apply to it.
  auto r = simulate({req(WR_GB, W()), req(SFM, W()), req(MV_SB, W())});
  int64_t wrgb = r->rec.first(C::WRGB);
  int64_t sfm = r->rec.first(C::SFM);
  EXPECT_EQ(sfm, wrgb + 1);
  EXPECT_EQ(r->rec.first(C::MVSB), sfm + T("nCCDL"));
}

TEST(EnginePimTiming, MacAbAndWrGbShareOnlyTheColumnSlot) {
  auto r = simulate({req(MAC_AB, W().row(0)), req(WR_GB, W().bank(1), 19),
                     req(MAC_AB, W().row(0).col(1), 20)});
  std::vector<int64_t> macs = r->rec.cycles(C::MACAB);
  ASSERT_EQ(macs.size(), 2u);
  EXPECT_EQ(macs[0], T("nRCDRD"));
  EXPECT_EQ(r->rec.first(C::WRGB), macs[0] + 1);
  EXPECT_EQ(macs[1], macs[0] + T("nCCDAB"));
}

TEST(EnginePimTiming, MacSbToMacSbIsCCDSB) {
  auto r = simulate({req(MAC_SB, W().bank(1).row(2)),
                     req(MAC_SB, W().bank(1).row(2).col(1))});
  EXPECT_EQ(r->rec.first(C::ACTSB), 0);
  std::vector<int64_t> macs = r->rec.cycles(C::MACSB);
  ASSERT_EQ(macs.size(), 2u);
  EXPECT_EQ(macs[0], T("nRCDRD"));
  EXPECT_EQ(macs[1] - macs[0], T("nCCDAB")); // nCCDSB follows nCCDAB
  EXPECT_EQ(r->stats.bytesMac, 2 * 32 * 16);
}

TEST(EnginePimTiming, ActSbOpensTheSixteenBanksWithItsIndex) {
  auto r = simulate({req(MAC_SB, W().bank(1).row(4)),
                     req(LD, W().pch(1).sid(1).bg(3).bank(1).row(4), 30),
                     req(LD, W().pch(1).sid(1).bg(3).bank(2).row(4), 30)});
  EXPECT_EQ(r->rec.commandsOf(1), (std::vector<Command>{C::RD}));
  EXPECT_EQ(r->rec.commandsOf(2), (std::vector<Command>{C::ACT, C::RD}));
}

TEST(EnginePimTiming, MacSbAppliesRTPLToEveryBankWithItsIndex) {
  // The first MAC_SB activates on the path of SID 1 / BG 2; the second needs
  // another row and precharges the first bank in the way (SID 0 / BG 0),
  // which only the broadcast MACSB -> PRESB constraint delays.
  auto r = simulate({req(MAC_SB, W().sid(1).bg(2).bank(1).row(0)),
                     req(MAC_SB, W().sid(1).bg(2).bank(1).row(1))});
  int64_t mac = r->rec.first(C::MACSB, 0);
  EXPECT_EQ(mac, T("nRCDRD"));
  int64_t presb = r->rec.first(C::PRESB);
  EXPECT_EQ(presb, mac + T("nRTPL"));
  std::vector<int64_t> actsb = r->rec.cycles(C::ACTSB);
  ASSERT_EQ(actsb.size(), 2u);
  EXPECT_EQ(actsb[1] - actsb[0], T("nRC"));
}

TEST(EnginePimTiming, MacPbSpacingIsCCDLOrCCDS) {
  auto sameBg =
      simulate({req(MAC_PB, W().bg(0).bank(0)), req(MAC_PB, W().bg(0).bank(1)),
                req(MAC_PB, W().bg(0).bank(0).col(1), 100),
                req(MAC_PB, W().bg(0).bank(1).col(1), 100)});
  std::vector<int64_t> macs = sameBg->rec.cycles(C::MACPB);
  ASSERT_EQ(macs.size(), 4u);
  EXPECT_EQ(macs[2], 100);
  EXPECT_EQ(macs[3] - macs[2], T("nCCDL"));
  auto otherBg = simulate({req(MAC_PB, W().bg(0)), req(MAC_PB, W().bg(1)),
                           req(MAC_PB, W().bg(0).col(1), 100),
                           req(MAC_PB, W().bg(1).col(1), 100)});
  macs = otherBg->rec.cycles(C::MACPB);
  ASSERT_EQ(macs.size(), 4u);
  EXPECT_EQ(macs[3] - macs[2], T("nCCDS"));
  EXPECT_EQ(otherBg->stats.bytesMac, 4 * 32 * 2);
}

TEST(EnginePimTiming, MacPbOpensAndTimesBothPseudoChannels) {
  // ACTPB opens the bank in both pCHs: a load to pCH 1 is a row hit.
  auto open = simulate(
      {req(MAC_PB, W().pch(0).row(0)), req(LD, W().pch(1).row(0), 30)});
  EXPECT_EQ(open->rec.commandsOf(1), (std::vector<Command>{C::RD}));
  // A later MAC_PB addressed to pCH 1 precharges there; only the broadcast
  // of MACPB -> PREPB (from the pCH 0 MAC) delays it: the ACTPB recorded
  // nRAS on the pCH 0 bank only.
  auto r = simulate({req(MAC_PB, W().pch(0).row(0)),
                     req(MAC_PB, W().pch(1).row(1), T("nRCDRD") + 1)});
  int64_t mac = r->rec.first(C::MACPB, 0);
  EXPECT_EQ(mac, T("nRCDRD"));
  EXPECT_EQ(r->rec.first(C::PREPB), mac + T("nRTPL"));
}

TEST(EnginePimTiming, MacPbTimesItsTwinNotAttAccsOtherBank) {
  // Departure 4 (docs/pimsim-engine.md): MACPB -> PREPB acts on the bank
  // the MAC read in each pCH (same SID/BG/bank). AttAcc's code times bank
  // (pCH, SID = the MAC's pCH, BG = its SID, bank) instead: there a MAC to
  // (0, 1, 2, 3) would delay the precharge of (0, 0, 1, 3) past nRAS, and
  // the twin (1, 1, 2, 3) could precharge before nRTPL.
  auto a = [](int64_t row) { return W().sid(0).bg(1).bank(3).row(row); };
  auto b = [](int64_t pch, int64_t row) {
    return W().pch(pch).sid(1).bg(2).bank(3).row(row);
  };
  auto r = simulate(
      {req(MAC_PB, a(0)), req(MAC_PB, b(0, 0), 20), req(MAC_PB, a(1), 20)});
  int64_t macB = r->rec.first(C::MACPB, 1);
  EXPECT_EQ(macB, 20 + T("nRCDRD"));
  ASSERT_GT(macB + T("nRTPL"), T("nRAS"));
  EXPECT_EQ(r->rec.first(C::PREPB), T("nRAS"));
  // The twin in pCH 1 is timed: its precharge waits nRTPL after the MAC.
  auto twin =
      simulate({req(MAC_PB, b(0, 0)), req(MAC_PB, b(1, 1), T("nRCDRD") + 1)});
  EXPECT_EQ(twin->rec.first(C::PREPB), T("nRCDRD") + T("nRTPL"));
}

//===----------------------------------------------------------------------===//
// Controller (section 7.5)
//===----------------------------------------------------------------------===//

TEST(EngineController, RowAndColumnCommandIssueInTheSameCycle) {
  auto r = simulate({req(MAC_AB, W().row(0)), req(WR_GB, W().bank(1))});
  EXPECT_EQ(r->rec.first(C::ACTAB), 0);
  EXPECT_EQ(r->rec.first(C::WRGB), 0);
}

TEST(EngineController, PresbAndPrepbPairWithNothing) {
  // AttAcc's get_command_type gives PRESB and PREPB no class, so they share
  // a cycle with no column command, neither as the first nor as the second.
  int64_t ras = T("nRAS");
  for (RequestType mac : {MAC_SB, MAC_PB}) {
    Command pre = mac == MAC_SB ? C::PRESB : C::PREPB;
    // First: the precharge (older) is ready with a data move.
    auto r = simulate({req(mac, W().row(0)), req(mac, W().row(1)),
                       req(WR_GB, W().bank(1), ras)});
    EXPECT_EQ(r->rec.first(pre), ras);
    EXPECT_EQ(r->rec.first(C::WRGB), ras + 1);
    // Second: a data move (older) goes first; the precharge waits a cycle.
    auto s = simulate({req(mac, W().row(0)), req(WR_GB, W().bank(1), ras),
                       req(mac, W().row(1), ras)});
    EXPECT_EQ(s->rec.first(C::WRGB), ras);
    EXPECT_EQ(s->rec.first(pre), ras + 1);
  }
}

TEST(EngineController, BarrierHoldsColumnCommandsBehindIt) {
  std::vector<Request> reqs = {req(MAC_AB, W().row(0)),
                               req(MAC_AB, W().row(0).col(1)),
                               req(BARRIER, W()), req(WR_GB, W().bank(1))};
  auto r = simulate(reqs);
  std::vector<int64_t> macs = r->rec.cycles(C::MACAB);
  ASSERT_EQ(macs.size(), 2u);
  EXPECT_EQ(r->rec.first(C::WRGB), macs[1] + 1);
  // Without the barrier the WRGB goes in the first cycle.
  reqs.erase(reqs.begin() + 2);
  auto free = simulate(reqs);
  EXPECT_EQ(free->rec.first(C::WRGB), 0);
}

TEST(EngineController, RowCommandsBehindABarrierIssueEarly) {
  std::vector<Request> reqs;
  for (int i = 0; i < 8; ++i)
    reqs.push_back(req(WR_GB, W().bank(1)));
  reqs.push_back(req(BARRIER, W()));
  reqs.push_back(req(MAC_AB, W().row(0)));
  auto r = simulate(reqs);
  std::vector<int64_t> wrgb = r->rec.cycles(C::WRGB);
  ASSERT_EQ(wrgb.size(), 8u);
  EXPECT_EQ(wrgb.back(), 7 * T("nCCDL"));
  EXPECT_EQ(r->rec.first(C::ACTAB), 0);
  EXPECT_EQ(r->rec.first(C::MACAB), wrgb.back() + 1);
}

TEST(EngineController, QueuedRowHitHoldsBackADataMoveToItsBank) {
  // AttAcc's scheduler: a ready request that is not a row hit loses to an
  // earlier unready one while a queued request hits its bank. WR_GB to
  // bank 0 shares the MACs' bank key (channel, 0, 0, 0, 0).
  auto r = simulate({req(MAC_AB, W().row(0)), req(MAC_AB, W().row(0).col(1)),
                     req(WR_GB, W().bank(0))});
  std::vector<int64_t> macs = r->rec.cycles(C::MACAB);
  ASSERT_EQ(macs.size(), 2u);
  EXPECT_EQ(r->rec.first(C::WRGB), macs[1] + 1);
}

TEST(EngineController, ReadyRowHitGoesBeforeAnOlderUnreadyMiss) {
  auto r = simulate({req(LD, W().row(0)), req(LD, W().row(1), 20),
                     req(LD, W().row(0).col(1), 21)});
  int64_t first = r->rec.first(C::RD, 0);
  EXPECT_EQ(r->rec.first(C::RD, 2), first + T("nCCDL"));
  EXPECT_LT(r->rec.first(C::RD, 2), r->rec.first(C::PRE));
  EXPECT_EQ(r->rec.commandsOf(2), (std::vector<Command>{C::RD}));
  EXPECT_EQ(r->stats.rowHits, 1);
  EXPECT_EQ(r->stats.rowMisses, 2);
}

TEST(EngineController, AmongReadyRequestsTheOldestGoesFirst) {
  // AttAcc's FR-FCFS is "first ready, then oldest": when the older miss can
  // precharge, it does, although a younger request hits the open row.
  auto r = simulate({req(LD, W().row(0)), req(LD, W().row(1), 50),
                     req(LD, W().row(0).col(1), 50)});
  EXPECT_EQ(r->rec.first(C::PRE), 50);
  EXPECT_EQ(r->rec.commandsOf(2),
            (std::vector<Command>{C::PRE, C::ACT, C::RD}));
}

TEST(EngineController, ReadOfAQueuedWriteIsForwarded) {
  auto r = simulate({req(ST, W().row(3)), req(LD, W().row(3))});
  EXPECT_EQ(r->stats.commandCounts[static_cast<int>(C::RD)], 0);
  EXPECT_EQ(r->stats.commandCounts[static_cast<int>(C::WR)], 1);
  EXPECT_EQ(r->stats.requests, 2);
}

TEST(EngineController, FullQueueStallsTheTraceButNotOtherStreams) {
  std::vector<Request> reqs;
  for (int i = 0; i < 40; ++i)
    reqs.push_back(req(WR_GB, W().ch(0).bank(1)));
  reqs.push_back(req(WR_GB, W().ch(1)));
  auto trace = simulate(reqs);
  // As in AttAcc, a queue admits while it holds at most queueDepth (32)
  // entries: 33 fit; channel 1's request enters right after the last of the
  // 7 others, the cycle after the 7th WRGB left (WRGBs are nCCDL apart).
  ASSERT_EQ(hbm3().queueDepth, 32);
  EXPECT_EQ(trace->rec.first(C::WRGB, Recorder::kAny, 1), 6 * T("nCCDL") + 1);

  std::vector<std::vector<Request>> streams(2);
  for (int i = 0; i < 40; ++i)
    streams[0].push_back(req(WR_GB, W().ch(0).bank(1)));
  streams[1].push_back(req(WR_GB, W().ch(1)));
  Recorder rec;
  EngineOptions opts;
  opts.refresh = false;
  opts.observer = &rec;
  Engine engine(hbm3(), opts);
  llvm::Expected<Stats> s = engine.runStreams(streams);
  ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  EXPECT_EQ(rec.first(C::WRGB, Recorder::kAny, 1), 0);
  EXPECT_EQ(s->commandCounts[static_cast<int>(C::WRGB)], 41);
}

TEST(EngineController, AtMostOneRowAndOneColumnCommandPerCycle) {
  std::mt19937 rng(7);
  std::vector<Request> reqs;
  for (int i = 0; i < 4000; ++i) {
    Where w;
    w.ch(rng() % 2).pch(rng() % 2).sid(rng() % 2).bg(rng() % 4);
    w.bank(rng() % 4).row(rng() % 3).col(rng() % 32);
    reqs.push_back(req(rng() % 3 ? LD : ST, w, i / 2));
  }
  auto plain = simulate(reqs, /*refresh=*/true);
  llvm::Expected<std::vector<Request>> attacc = loadTrace(PIMSIM_ATTACC_TRACE);
  ASSERT_TRUE(static_cast<bool>(attacc)) << llvm::toString(attacc.takeError());
  auto pim = simulate(*attacc, /*refresh=*/true);
  for (const SimRun *run : {plain.get(), pim.get()}) {
    std::map<std::tuple<int64_t, int64_t, int64_t, bool>, int> perSlot;
    for (const Issued &i : run->rec.log)
      ++perSlot[{i.cycle, i.addr.stack, i.addr.channel, isRowCommand(i.cmd)}];
    int worst = 0;
    for (auto &[key, n] : perSlot)
      worst = std::max(worst, n);
    EXPECT_EQ(worst, 1);
    EXPECT_GT(run->rec.log.size(), 1000u);
  }
}

//===----------------------------------------------------------------------===//
// Refresh (section 7.5)
//===----------------------------------------------------------------------===//

TEST(EngineRefresh, OneREFabPerPseudoChannelEveryREFI) {
  int64_t refi = T("nREFI");
  auto r = simulate({req(LD, W().row(0)), req(LD, W().row(0), 4 * refi + 10)},
                    /*refresh=*/true);
  // The first refresh finds the open row and closes the channel with PREA.
  EXPECT_EQ(r->rec.first(C::PREA), refi - 1);
  std::vector<int64_t> ref0, ref1;
  for (const Issued &i : r->rec.log)
    if (i.cmd == C::REFab && i.addr.channel == 0 && i.addr.stack == 0)
      (i.addr.pseudoChannel == 0 ? ref0 : ref1).push_back(i.cycle);
  ASSERT_EQ(ref0.size(), 4u);
  ASSERT_EQ(ref1.size(), 4u);
  EXPECT_EQ(ref0[0], refi); // the cycle after the PREA
  for (size_t k = 1; k < ref0.size(); ++k) {
    EXPECT_EQ(ref0[k], static_cast<int64_t>(k + 1) * refi - 1);
    EXPECT_EQ(ref1[k], ref0[k] + 1); // one row command per cycle
  }
  // The refresh closed the row: the late load activates again.
  EXPECT_EQ(r->rec.commandsOf(1), (std::vector<Command>{C::ACT, C::RD}));
  // Idle channels refresh too.
  EXPECT_EQ(r->rec.cycles(C::REFab, Recorder::kAny, 7).size(), 8u);
}

TEST(EngineRefresh, ActAfterREFabWaitsRFC) {
  int64_t refi = T("nREFI");
  // The loads arrive when the refresh is due: REFab (pCH 0) goes first,
  // REFab (pCH 1) the next cycle, then each pCH waits nRFC after its own.
  for (int64_t pch : {0, 1}) {
    auto r = simulate({req(LD, W().pch(pch), refi - 1)}, /*refresh=*/true);
    std::vector<int64_t> refs = r->rec.cycles(C::REFab);
    ASSERT_GE(refs.size(), 2u);
    EXPECT_EQ(refs[0], refi - 1);
    EXPECT_EQ(refs[1], refi);
    EXPECT_EQ(r->rec.first(C::ACT), refs[pch] + T("nRFC"));
  }
}

TEST(EngineRefresh, ColumnCommandsContinueWhileRefreshWaits) {
  int64_t refi = T("nREFI");
  std::vector<Request> reqs;
  for (int i = 0; i < 64; ++i)
    reqs.push_back(req(MAC_AB, W().row(i / 32).col(i % 32), refi - 200));
  auto r = simulate(reqs, /*refresh=*/true);
  std::vector<int64_t> macs = r->rec.cycles(C::MACAB);
  std::vector<int64_t> preas = r->rec.cycles(C::PREA);
  std::vector<int64_t> refs = r->rec.cycles(C::REFab);
  ASSERT_EQ(macs.size(), 64u);
  ASSERT_FALSE(refs.empty());
  // The refresh is due at refi - 1 while row 0 is being read: its MACs go
  // on; the refresh's PREA waits for the last of them.
  int64_t due = refi - 1;
  int64_t lastBefore = -1;
  int during = 0;
  for (int64_t m : macs)
    if (m < refs[0]) {
      lastBefore = m;
      during += m > due;
    }
  EXPECT_GT(during, 0);
  int64_t refreshPrea = -1;
  for (int64_t p : preas)
    if (p > due && p < refs[0])
      refreshPrea = p;
  EXPECT_EQ(refreshPrea, lastBefore + T("nRTPL"));
  // Row 1 needs an ACTAB, which waits nRFC after the REFab of pCH 0.
  std::vector<int64_t> actab = r->rec.cycles(C::ACTAB);
  ASSERT_EQ(actab.size(), 2u);
  EXPECT_EQ(actab[1], refs[0] + T("nRFC"));
}

/// `channels` channels each reading `macsPerChannel` MAC_AB columns of
/// consecutive rows.
std::vector<Request> macStream(int channels, int macsPerChannel) {
  std::vector<Request> reqs;
  for (int i = 0; i < macsPerChannel; ++i)
    for (int c = 0; c < channels; ++c)
      reqs.push_back(req(MAC_AB, W().ch(c).row(i / 32).col(i % 32)));
  return reqs;
}

/// Sequential 32 B reads in HBM3-Custom order (section 7.1): channel, pCH,
/// BG, column, SID, bank, row from fastest to slowest.
std::vector<Request> sequentialReads(int64_t bytes) {
  std::vector<Request> reqs;
  for (int64_t i = 0; i < bytes / 32; ++i)
    reqs.push_back(req(LD, W().ch(i % 16)
                               .pch((i / 16) % 2)
                               .sid((i / 4096) % 2)
                               .bg((i / 32) % 4)
                               .bank((i / 8192) % 4)
                               .row(i / 32768)
                               .col((i / 128) % 32)));
  return reqs;
}

TEST(EngineRefresh, OverheadIsAboutRFCOverREFI) {
  double expected = double(T("nRFC")) / double(T("nREFI"));
  std::vector<Request> macs = macStream(16, 4096);
  auto off = simulate(macs, false);
  auto on = simulate(macs, true);
  double macOverhead = double(on->stats.cycles) / off->stats.cycles - 1;
  std::vector<Request> reads = sequentialReads(8 << 20);
  auto roff = simulate(reads, false);
  auto ron = simulate(reads, true);
  double readOverhead = double(ron->stats.cycles) / roff->stats.cycles - 1;
  llvm::outs() << llvm::formatv(
      "refresh overhead: MAC stream {0:P}, sequential reads {1:P}, "
      "nRFC/nREFI {2:P}\n",
      macOverhead, readOverhead, expected);
  EXPECT_GT(macOverhead, 0.5 * expected);
  EXPECT_LT(macOverhead, 1.5 * expected);
  EXPECT_GT(readOverhead, 0.5 * expected);
  EXPECT_LT(readOverhead, 1.5 * expected);
}

//===----------------------------------------------------------------------===//
// Device state across runs and program phases
//===----------------------------------------------------------------------===//

/// One channel stream per channel up to `channel`, with `reqs` on it.
std::vector<std::vector<Request>> onChannel(int64_t channel,
                                            std::vector<Request> reqs) {
  std::vector<std::vector<Request>> streams(channel + 1);
  streams[channel] = std::move(reqs);
  return streams;
}

TEST(EngineDeviceState, OpenRowsAndTimersCarryToTheNextRun) {
  Recorder rec;
  EngineOptions opts;
  opts.refresh = false;
  opts.observer = &rec;
  Engine engine(hbm3(), opts);
  DeviceState device;
  auto first =
      engine.runStreams(onChannel(0, {req(MAC_AB, W().row(3))}), device, 0);
  ASSERT_TRUE(static_cast<bool>(first)) << llvm::toString(first.takeError());
  int64_t mac = rec.first(C::MACAB);
  EXPECT_EQ(mac, T("nRCDRD"));
  EXPECT_EQ(device.clock(), mac + 1);
  // The next run starts at the clock: row 3 is still open (no ACTAB) and
  // the MACAB -> MACAB timer still holds.
  rec.log.clear();
  auto second = engine.runStreams(
      onChannel(0, {req(MAC_AB, W().row(3).col(1))}), device, device.clock());
  ASSERT_TRUE(static_cast<bool>(second)) << llvm::toString(second.takeError());
  EXPECT_TRUE(rec.cycles(C::ACTAB).empty());
  EXPECT_EQ(rec.first(C::MACAB), mac + T("nCCDAB"));
  EXPECT_EQ(second->cycles, mac + T("nCCDAB") + 1 - (mac + 1));
  EXPECT_EQ(second->rowHits, 1);
  // A run cannot start before the clock.
  auto early = engine.runStreams(onChannel(0, {req(MAC_AB, W().row(3))}),
                                 device, device.clock() - 1);
  EXPECT_NE(test::errorOf(std::move(early)).find("before the device's clock"),
            std::string::npos);
}

TEST(EngineDeviceState, RefreshKeepsItsScheduleAcrossShortRuns) {
  // Runs much shorter than nREFI, some with idle cycles between them: every
  // pseudo-channel still refreshes every nREFI on the device's timeline
  // (due at k * nREFI - 1, pCH 1 the cycle after pCH 0 on an idle channel).
  int64_t refi = T("nREFI");
  Recorder rec;
  EngineOptions opts;
  opts.observer = &rec;
  Engine engine(hbm3(), opts);
  DeviceState device;
  int64_t start = 0, refreshes = 0;
  for (int k = 0; k < 40; ++k) {
    std::vector<Request> macs;
    for (int i = 0; i < 8; ++i)
      macs.push_back(req(MAC_AB, W().row(k % 3).col(i)));
    auto s = engine.runStreams(onChannel(0, macs), device, start);
    ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
    EXPECT_LT(s->cycles, refi / 4);
    refreshes += s->commandCounts[int(C::REFab)];
    start = device.clock() + (k % 4 == 3 ? 2 * refi : 0);
  }
  int64_t end = device.clock();
  ASSERT_GT(end, 10 * refi);
  for (int64_t ch : {0, 7})
    for (int64_t pch : {0, 1}) {
      std::vector<int64_t> refs;
      for (const Issued &i : rec.log)
        if (i.cmd == C::REFab && i.addr.channel == ch && i.addr.stack == 0 &&
            i.addr.pseudoChannel == pch)
          refs.push_back(i.cycle);
      EXPECT_LE(std::abs(double(refs.size()) - double(end) / refi), 1.0)
          << "channel " << ch << " pCH " << pch << ": " << refs.size()
          << " refreshes in " << end << " cycles";
      if (ch != 7)
        continue;
      for (size_t k = 0; k < refs.size(); ++k) {
        EXPECT_EQ(refs[k], int64_t(k + 1) * refi - 1 + pch);
      }
    }
  EXPECT_EQ(refreshes,
            int64_t(rec.cycles(C::REFab).size()) * hbm3().org.totalChannels());
}

/// Counts REFab per (global channel, pseudo-channel).
class RefreshCounter : public CommandObserver {
public:
  std::map<std::pair<int64_t, int64_t>, int64_t> perPch;
  void onCommand(int64_t, Command cmd, const DecodedAddress &a,
                 const Request *) override {
    if (cmd == Command::REFab)
      ++perPch[{a.stack * hbm3().org.channels + a.channel, a.pseudoChannel}];
  }
};

TEST(EngineDeviceState, ProgramPhasesShorterThanREFIStillRefresh) {
  // 24 phases of 8 MAC_AB rows (each well under nREFI), some separated by
  // a phase that only runs a near-memory kernel (idle DRAM), and a `call`
  // inside the stream: the DRAM state and refresh schedule persist across
  // phases and sub-phases, so every pseudo-channel of the device refreshes
  // run duration / nREFI times, within one.
  std::string text = test::header(hbm3()) +
                     ".kernel gap kind=elementwise m=1 n=64000 unit=vector "
                     "elements=64000\n"
                     ".stream s channels=0-3\n"
                     "  loop i 4 {\n    mac_ab row=i col=0 count=32\n  }\n"
                     "  call gap\n"
                     "  loop i 4 {\n    mac_ab row=4+i col=0 count=32\n  }\n"
                     ".entry decode = s";
  for (int k = 1; k < 24; ++k)
    text += k % 6 == 0 ? ", barrier, gap, barrier, s" : ", barrier, s";
  text += "\n";
  Simulator sim(hbm3(), SimMode::Timing);
  ASSERT_EQ(test::errorOf(sim.loadProgram(test::assemble(text))), "<success>");
  RefreshCounter counter;
  auto report = sim.run("decode", &counter);
  ASSERT_TRUE(static_cast<bool>(report)) << llvm::toString(report.takeError());
  int64_t refi = T("nREFI");
  for (const PhaseReport &p : report->phases)
    EXPECT_LT(p.pimCycles, refi);
  double duration = report->seconds * 1e12 / hbm3().tCKps;
  ASSERT_GT(duration, 5.0 * refi);
  int64_t total = 0;
  for (int64_t ch = 0; ch < hbm3().org.totalChannels(); ++ch)
    for (int64_t pch = 0; pch < hbm3().org.pseudoChannels; ++pch) {
      int64_t n = counter.perPch[{ch, pch}];
      total += n;
      EXPECT_LE(std::abs(double(n) - duration / refi), 1.0)
          << "channel " << ch << " pCH " << pch << ": " << n << " refreshes in "
          << duration << " cycles";
    }
  EXPECT_EQ(report->pim.commandCounts[int(C::REFab)], total);
}

//===----------------------------------------------------------------------===//
// Bandwidth sanity
//===----------------------------------------------------------------------===//

TEST(EngineBandwidth, SequentialReadsReachTheExternalPeak) {
  const Target &t = hbm3();
  double peak = t.externalPeakBytesPerSec() / t.org.stacks; // one stack
  auto r = simulate(sequentialReads(32 << 20));
  ASSERT_TRUE(r->ok);
  double fraction = r->stats.externalBandwidth() / peak;
  auto withRefresh = simulate(sequentialReads(32 << 20), true);
  double fractionRefresh = withRefresh->stats.externalBandwidth() / peak;
  llvm::outs() << llvm::formatv(
      "sequential 32 MiB reads: {0} cycles, {1:F1} GB/s = {2:P} of one "
      "stack's {3:F1} GB/s ({4:P} with refresh); row hits {5}, misses {6}\n",
      r->stats.cycles, r->stats.externalBandwidth() / 1e9, fraction, peak / 1e9,
      fractionRefresh, r->stats.rowHits, r->stats.rowMisses);
  EXPECT_EQ(r->stats.bytesRead, int64_t(32) << 20);
  EXPECT_GE(fraction, 0.85);
  EXPECT_LE(fraction, 1.0);
  EXPECT_LE(fractionRefresh, fraction);
}

TEST(EngineBandwidth, MacStreamStaysBelowTheInternalPeak) {
  const Target &t = hbm3();
  double peak = t.internalPeakBytesPerSec() / t.org.stacks; // one stack
  auto r = simulate(macStream(16, 2048));
  double fraction = r->stats.internalBandwidth() / peak;
  llvm::outs() << llvm::formatv(
      "MAC_AB stream (16 channels x 2048): {0} cycles, {1:F2} TB/s = {2:P} "
      "of one stack's {3:F2} TB/s\n",
      r->stats.cycles, r->stats.internalBandwidth() / 1e12, fraction,
      peak / 1e12);
  EXPECT_EQ(r->stats.bytesMac, int64_t(16) * 2048 * 64 * 32);
  EXPECT_LE(fraction, 1.0);
  // 32 MACs per row, then PREA + ACTAB: 32 * 6 of every 32 * 6 + 46 cycles.
  EXPECT_GT(fraction, 0.75);
}

//===----------------------------------------------------------------------===//
// The AttAcc GPT-3 attention trace (section 7.6)
//===----------------------------------------------------------------------===//

TEST(EngineAttAcc, GptAttentionTrace) {
  llvm::Expected<std::vector<Request>> trace = loadTrace(PIMSIM_ATTACC_TRACE);
  ASSERT_TRUE(static_cast<bool>(trace)) << llvm::toString(trace.takeError());
  ASSERT_EQ(trace->size(), 43248u);
  for (bool refresh : {false, true}) {
    EngineOptions opts;
    opts.refresh = refresh;
    Engine engine(hbm3(), opts);
    auto start = std::chrono::steady_clock::now();
    llvm::Expected<Stats> s = engine.runTrace(*trace);
    double host =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
    auto count = [&](Command c) { return s->commandCounts[int(c)]; };
    int64_t commands = 0;
    for (int64_t n : s->commandCounts)
      commands += n;
    llvm::outs() << llvm::formatv(
        "AttAcc GPT-3 attention trace (refresh {0}): {1} cycles ({2:F2} us), "
        "{3} commands, host {4:F1} ms = {5:F1} M commands/s; ACTAB {6}, "
        "PREA {7}, REFab {8}; internal {9:F2} TB/s\n",
        refresh ? "on" : "off", s->cycles, s->seconds * 1e6, commands,
        host * 1e3, commands / host / 1e6, count(C::ACTAB), count(C::PREA),
        count(C::REFab), s->internalBandwidth() / 1e12);
    // Section 7.6: every request issues as its own command.
    EXPECT_EQ(count(C::MACAB), 32784);
    EXPECT_EQ(count(C::MVSB), 5120);
    EXPECT_EQ(count(C::MVGB), 4096);
    EXPECT_EQ(count(C::WRGB), 512);
    EXPECT_EQ(count(C::SFM), 64);
    // 64 GEMVs of 8 rows per channel: one ACTAB per row and a PREA before
    // every ACTAB but the first.
    EXPECT_EQ(count(C::ACTAB), 16 * 64);
    EXPECT_EQ(count(C::PREA), 16 * 63);
    EXPECT_EQ(count(C::ACT) + count(C::PRE) + count(C::RD) + count(C::WR), 0);
    EXPECT_EQ(s->bytesMac, int64_t(32784) * 64 * 32);
    EXPECT_EQ(s->bytesWritten, 512 * 32);
    // Deterministic; recorded once the model was checked (and again when
    // queues admitted their 33rd entry as AttAcc's do: 16167 / 14853 before).
    EXPECT_EQ(s->cycles, refresh ? 16161 : 14847);
    if (refresh) {
      // Every pseudo-channel of every channel of the 5-stack device.
      int64_t perPch = (s->cycles - T("nREFI")) / T("nREFI") + 1;
      EXPECT_EQ(count(C::REFab), perPch * hbm3().org.totalChannels() * 2);
    }
  }
}

TEST(EngineAttAcc, RunsAreDeterministic) {
  llvm::Expected<std::vector<Request>> trace = loadTrace(PIMSIM_ATTACC_TRACE);
  ASSERT_TRUE(static_cast<bool>(trace)) << llvm::toString(trace.takeError());
  std::string json[2];
  uint64_t hash[2];
  for (int k = 0; k < 2; ++k) {
    auto r = simulate(*trace, true);
    llvm::raw_string_ostream os(json[k]);
    os << r->stats.toJSON(hbm3());
    hash[k] = 1469598103934665603ull;
    for (const Issued &i : r->rec.log)
      for (uint64_t v : {uint64_t(i.cycle), uint64_t(i.cmd),
                         uint64_t(i.addr.channel), uint64_t(i.tag)})
        hash[k] = (hash[k] ^ v) * 1099511628211ull;
  }
  EXPECT_EQ(json[0], json[1]);
  EXPECT_EQ(hash[0], hash[1]);
}

//===----------------------------------------------------------------------===//
// Stats and errors
//===----------------------------------------------------------------------===//

TEST(EngineStats, JSONHasEveryField) {
  auto r = simulate({req(LD, W().row(1)), req(ST, W().bank(2).row(1)),
                     req(MAC_AB, W().ch(1).row(0))});
  llvm::json::Value v = r->stats.toJSON(hbm3());
  const llvm::json::Object *o = v.getAsObject();
  ASSERT_NE(o, nullptr);
  for (const char *key :
       {"target", "cycles", "seconds", "requests", "commandCounts", "rowHits",
        "rowMisses", "bytesRead", "bytesWritten", "bytesMac",
        "externalBandwidth", "internalBandwidth", "externalPeakBytesPerSec",
        "internalPeakBytesPerSec", "externalUtilization", "internalUtilization",
        "energyPj", "channels", "bankBusyCycles"})
    EXPECT_NE(o->get(key), nullptr) << key;
  EXPECT_EQ(o->getObject("commandCounts")->getInteger("MACAB"), 1);
  EXPECT_EQ(o->getArray("channels")->size(),
            size_t(hbm3().org.totalChannels()));
  EXPECT_EQ(o->getArray("bankBusyCycles")->size(),
            size_t(hbm3().org.totalChannels() * 64));
  const llvm::json::Object *ch1 = (*o->getArray("channels"))[1].getAsObject();
  EXPECT_EQ(ch1->getInteger("commands"), 2);
  EXPECT_EQ(ch1->getInteger("rowSlotBusy"), 1);
  EXPECT_EQ(ch1->getInteger("columnSlotBusy"), 1);
  EXPECT_EQ(r->stats.requests, 3);
  EXPECT_EQ(r->stats.bytesRead, 32);
  EXPECT_EQ(r->stats.bytesWritten, 32);
  // Energy of target.energy: bank accesses, pins and the MAC ALUs.
  const Energy &e = hbm3().energy;
  double expected = (32 + 32 + 2048) * 8 * e.readPjPerBit +
                    64 * 8 * e.ioPjPerBit + 2048 * e.macPjPerByte +
                    (2 + 64) * e.actPj;
  EXPECT_NEAR(r->stats.energyPj, expected, 1e-6 * expected);
  EXPECT_GT(r->stats.seconds, 0);
}

TEST(EngineStats, BankBusyCyclesCountOpenRowTime) {
  auto r = simulate({req(LD, W().bank(3).row(0)), req(LD, W().bank(3).row(1))});
  // Open from the first ACT to the end except for the PRE -> ACT gap.
  EXPECT_EQ(r->stats.bankBusyCycles[3], r->stats.cycles - T("nRP"));
  EXPECT_EQ(r->stats.bankBusyCycles[2], 0);
  auto all = simulate({req(MAC_AB, W().ch(2).row(0))});
  EXPECT_EQ(all->stats.bankBusyCycles[2 * 64 + 63], all->stats.cycles);
}

TEST(EngineErrors, AddressOutsideTheDeviceNamesTheRequest) {
  Engine engine(hbm3(), EngineOptions());
  Request ok = req(LD, W());
  Request high = ok;
  high.addr = uint64_t(1) << 40; // above the 5-stack mapping
  llvm::Expected<Stats> s = engine.runTrace({ok, high});
  ASSERT_FALSE(static_cast<bool>(s));
  std::string msg = llvm::toString(s.takeError());
  EXPECT_NE(msg.find("request 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0x10000000000"), std::string::npos) << msg;

  Request stack = ok;
  stack.addr = uint64_t(5) << 34; // stack 5 of 5
  s = engine.runTrace({stack});
  ASSERT_FALSE(static_cast<bool>(s));
  msg = llvm::toString(s.takeError());
  EXPECT_NE(msg.find("request 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("outside the device"), std::string::npos) << msg;
}

TEST(EngineErrors, InvalidRequestsAndStreams) {
  Engine engine(hbm3(), EngineOptions());
  Request bad = req(LD, W());
  bad.type = static_cast<RequestType>(200);
  llvm::Expected<Stats> s = engine.runTrace({req(LD, W()), bad});
  ASSERT_FALSE(static_cast<bool>(s));
  EXPECT_NE(llvm::toString(s.takeError())
                .find("request 1: invalid request "
                      "type"),
            std::string::npos);
  // A stream's requests must belong to its channel.
  std::vector<std::vector<Request>> streams = {{req(LD, W().ch(0))},
                                               {req(LD, W().ch(0))}};
  s = engine.runStreams(streams);
  ASSERT_FALSE(static_cast<bool>(s));
  EXPECT_NE(llvm::toString(s.takeError()).find("channel 1 request 0"),
            std::string::npos);
}

TEST(EngineTargets, Gddr6AimRunsPimRequests) {
  Target aim = loadShipped("gddr6-aim.json");
  std::vector<Request> reqs;
  for (int i = 0; i < 64; ++i)
    reqs.push_back(req(MAC_AB, W().ch(i % 4).row(1).col(i / 4), 0, aim));
  for (int c = 0; c < 4; ++c) {
    reqs.push_back(req(RequestType::RdAcc, W().ch(c), 0, aim));
    reqs.push_back(req(RequestType::EwMul, W().ch(c).row(2), 0, aim));
    reqs.push_back(req(RequestType::Af, W().ch(c), 0, aim));
  }
  auto r = simulate(reqs, true, aim);
  ASSERT_TRUE(r->ok);
  EXPECT_EQ(r->stats.commandCounts[int(C::MACAB)], 64);
  EXPECT_EQ(r->stats.commandCounts[int(C::RDACC)], 4);
  EXPECT_EQ(r->stats.commandCounts[int(C::EWMUL)], 4);
  EXPECT_EQ(r->stats.commandCounts[int(C::AF)], 4);
  EXPECT_EQ(r->stats.bytesMac, 64 * 16 * 32);
  // MACs need the row open: tRCD_MAC after the all-bank activation.
  EXPECT_EQ(r->rec.first(C::MACAB) - r->rec.first(C::ACTAB),
            *aim.timing("nRCDRDMAC"));
}

//===----------------------------------------------------------------------===//
// Trace files (section 7.1)
//===----------------------------------------------------------------------===//

TEST(Trace, ParsesEveryTypeAndBothAddressForms) {
  llvm::Expected<std::vector<Request>> t = parseTrace(
      "LD 0x1f\nST 0X20\nPIM_MAC_AB 64\nPIM_MAC_SB 0\nPIM_MAC_PB 0\n"
      "PIM_WR_GB 1\nPIM_MV_SB 0\nPIM_MV_GB 0\nPIM_SFM 0\nPIM_SET_MODEL 0\n"
      "PIM_SET_HEAD 0\nPIM_BARRIER 0\nLD 96 250\r\n",
      "t.trace");
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  ASSERT_EQ(t->size(), 13u);
  EXPECT_EQ((*t)[0].type, LD);
  EXPECT_EQ((*t)[0].addr, 31u);
  EXPECT_EQ((*t)[1].type, ST);
  EXPECT_EQ((*t)[1].addr, 32u);
  EXPECT_EQ((*t)[2].type, MAC_AB);
  EXPECT_EQ((*t)[2].addr, 64u);
  EXPECT_EQ((*t)[11].type, BARRIER);
  EXPECT_EQ((*t)[12].addr, 96u);
  EXPECT_EQ((*t)[12].arrival, 250);
  EXPECT_EQ((*t)[12].tag, 12u);
  EXPECT_EQ((*t)[0].arrival, 0);
}

TEST(Trace, MalformedLinesNameFileAndLine) {
  const std::pair<const char *, const char *> cases[] = {
      {"LD  0x10", "one space"},
      {"LD\t0x10", "expected"},
      {"LD", "expected"},
      {" LD 1", "empty field"},
      {"LD 1 ", "empty field"},
      {"FOO 1", "unknown request type 'FOO'"},
      {"PIM_RD_ACC 0", "unknown request type"},
      {"LD 0x", "invalid address"},
      {"LD 0xg1", "invalid address"},
      {"LD -1", "invalid address"},
      {"LD 99999999999999999999999", "invalid address"},
      {"PIM_MAC_AB 0 5", "only allowed on LD/ST"},
      {"LD 0 x", "invalid arrival"},
      {"LD 0 1 2", "expected"},
      {"", "expected"},
  };
  for (auto [line, what] : cases) {
    std::string text = std::string("LD 0\n") + line + "\nST 0\n";
    llvm::Expected<std::vector<Request>> t = parseTrace(text, "t.trace");
    ASSERT_FALSE(static_cast<bool>(t)) << line;
    std::string msg = llvm::toString(t.takeError());
    EXPECT_NE(msg.find("t.trace:2: "), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
  llvm::Expected<std::vector<Request>> missing =
      loadTrace("/nonexistent/x.trace");
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_NE(llvm::toString(missing.takeError()).find("/nonexistent/x.trace"),
            std::string::npos);
}

TEST(Trace, AttAccTraceHasTheSection76Counts) {
  llvm::Expected<std::vector<Request>> t = loadTrace(PIMSIM_ATTACC_TRACE);
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  std::map<RequestType, int> counts;
  for (const Request &r : *t)
    ++counts[r.type];
  EXPECT_EQ(t->size(), 43248u);
  EXPECT_EQ(counts[MAC_AB], 32784);
  EXPECT_EQ(counts[MV_SB], 5120);
  EXPECT_EQ(counts[MV_GB], 4096);
  EXPECT_EQ(counts[WR_GB], 512);
  EXPECT_EQ(counts[SFM], 64);
  EXPECT_EQ(counts[BARRIER], 672);
  EXPECT_EQ((*t)[1].addr, 0x40000000u); // channel 1
}

//===----------------------------------------------------------------------===//
// Idle-refresh skipping (hardening: long idle gaps cost no host time)
//===----------------------------------------------------------------------===//

/// The stats of a trace with idle-refresh skipping on or off, as JSON text.
std::string traceStats(const std::vector<Request> &reqs, bool skip) {
  EngineOptions opts;
  opts.skipIdleRefresh = skip;
  Engine engine(hbm3(), opts);
  llvm::Expected<Stats> s = engine.runTrace(reqs);
  if (!s)
    return "error: " + llvm::toString(s.takeError());
  return llvm::formatv("{0}", s->toJSON(hbm3())).str();
}

TEST(EngineIdleSkip, SkippingIdleRefreshIntervalsIsExact) {
  int64_t refi = T("nREFI");
  std::mt19937 rng(7);
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<Request> reqs;
    int64_t at = 0;
    for (int i = 0; i < 12; ++i) {
      at += std::uniform_int_distribution<int64_t>(0, 40 * refi)(rng);
      int64_t row = std::uniform_int_distribution<int64_t>(0, 3)(rng);
      int64_t ch = std::uniform_int_distribution<int64_t>(0, 15)(rng);
      reqs.push_back(req(i % 3 ? LD : ST, W().ch(ch).row(row).col(i), at));
    }
    std::string skipped = traceStats(reqs, true);
    EXPECT_EQ(skipped.rfind("error", 0), std::string::npos) << skipped;
    EXPECT_EQ(skipped, traceStats(reqs, false)) << "trial " << trial;
  }
}

TEST(EngineIdleSkip, SkippingAcrossRunsOnADeviceStateIsExact) {
  int64_t refi = T("nREFI");
  auto runAll = [&](bool skip) {
    EngineOptions opts;
    opts.skipIdleRefresh = skip;
    Engine engine(hbm3(), opts);
    DeviceState device;
    std::string out;
    for (int64_t gap : {int64_t(0), 3 * refi + 17, 50 * refi, int64_t(5)}) {
      auto s =
          engine.runStreams(onChannel(1, {req(MAC_AB, W().ch(1).row(gap % 7))}),
                            device, device.clock() + gap);
      if (!s)
        return "error: " + llvm::toString(s.takeError());
      out += llvm::formatv("{0}\n", s->toJSON(hbm3())).str();
    }
    return out;
  };
  EXPECT_EQ(runAll(true), runAll(false));
}

TEST(EngineIdleSkip, ArrivalAtCycle1e12FinishesWithEveryRefresh) {
  int64_t refi = T("nREFI");
  int64_t arrival = 1000000000000;
  Engine engine(hbm3(), EngineOptions());
  auto start = std::chrono::steady_clock::now();
  llvm::Expected<Stats> s =
      engine.runTrace({req(LD, W().row(0)), req(LD, W().row(1), arrival)});
  double host =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  EXPECT_LT(host, 5.0);
  EXPECT_GT(s->cycles, arrival);
  EXPECT_LT(s->cycles, arrival + refi);
  // Every pseudo-channel of every channel refreshed once per nREFI.
  int64_t perPch = (s->cycles - refi) / refi + 1;
  int64_t pchs = hbm3().org.totalChannels() * hbm3().org.pseudoChannels;
  int64_t refs = s->commandCounts[static_cast<unsigned>(C::REFab)];
  EXPECT_GE(refs, (perPch - 1) * pchs);
  EXPECT_LE(refs, perPch * pchs);
}

/// Records the commands of requests only, as the functional model and the
/// per-stream cycle accounting do: refresh may be skipped under it.
class RequestRecorder : public CommandObserver {
public:
  void onCommand(int64_t cycle, Command cmd, const DecodedAddress &,
                 const Request *req) override {
    if (req)
      seen.push_back(
          llvm::formatv("{0} {1} {2}", cycle, commandName(cmd), req->tag));
  }
  bool seesRefresh() const override { return false; }
  std::vector<std::string> seen;
};

TEST(EngineIdleSkip, AnObserverOfRequestsKeepsTheSkipExact) {
  int64_t refi = T("nREFI");
  std::vector<Request> reqs = {req(LD, W().row(0)),
                               req(LD, W().ch(3).row(1), 300 * refi + 11),
                               req(ST, W().ch(3).row(2), 900 * refi)};
  for (size_t i = 0; i < reqs.size(); ++i)
    reqs[i].tag = static_cast<uint32_t>(i);
  auto run = [&](bool skip, RequestRecorder &rec) {
    EngineOptions opts;
    opts.skipIdleRefresh = skip;
    opts.observer = &rec;
    Engine engine(hbm3(), opts);
    llvm::Expected<Stats> s = engine.runTrace(reqs);
    if (!s)
      return "error: " + llvm::toString(s.takeError());
    return llvm::formatv("{0}", s->toJSON(hbm3())).str();
  };
  RequestRecorder skipped, stepped;
  std::string a = run(true, skipped);
  EXPECT_EQ(a.rfind("error", 0), std::string::npos) << a;
  EXPECT_EQ(a, run(false, stepped));
  EXPECT_EQ(skipped.seen, stepped.seen);
  EXPECT_GE(skipped.seen.size(), reqs.size());
}

TEST(EngineIdleSkip, AnObserverOfRequestsDoesNotStepTo1e12) {
  RequestRecorder rec;
  EngineOptions opts;
  opts.observer = &rec;
  Engine engine(hbm3(), opts);
  auto start = std::chrono::steady_clock::now();
  llvm::Expected<Stats> s = engine.runTrace(
      {req(LD, W().row(0)), req(LD, W().row(1), int64_t(1000000000000))});
  double host =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  EXPECT_LT(host, 5.0);
  EXPECT_FALSE(rec.seen.empty());
}

TEST(EngineIdleSkip, ArrivalAboveTheLimitIsAnError) {
  Engine engine(hbm3(), EngineOptions());
  std::string err = test::errorOf(
      engine.runTrace({req(LD, W().row(0), kMaxArrivalCycle + 1)}));
  EXPECT_NE(err.find("request 0: arrival cycle"), std::string::npos) << err;
}

TEST(EngineIdleSkip, NonFiniteStatsAreFoundByPath) {
  llvm::json::Value ok = llvm::json::Object{{"a", 1.5}, {"b", {1, 2}}};
  EXPECT_FALSE(nonFiniteField(ok).has_value());
  llvm::json::Value bad = llvm::json::Object{
      {"a", 1.5},
      {"b", llvm::json::Array{1, std::numeric_limits<double>::infinity()}}};
  EXPECT_EQ(nonFiniteField(bad).value_or("none"), ".b[1]");
  llvm::json::Value nan =
      llvm::json::Object{{"x", llvm::json::Object{{"y", std::nan("")}}}};
  EXPECT_EQ(nonFiniteField(nan).value_or("none"), ".x.y");
}

} // namespace
