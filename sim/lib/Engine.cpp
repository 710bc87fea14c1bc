//===- Engine.cpp - cycle-level DRAM/PIM command engine -------------------===//
//
// Reproduces the semantics of AttAcc's Ramulator-2.0 HBM3-PIM model
// (specs/pim-hardware.md section 7; scale-snu/attacc_simulator): the
// HBM3-PIM device (HBM3-PIM.cpp), its controller (hbm3_pim_controller.cpp),
// the PIM scheduler (pim_scheduler.cpp) and all-bank refresh
// (all_bank_refresh_hbm3.cpp). Timing comes only from Target::constraints.
//
// Timing state. Every node of the hierarchy (channel, pseudo-channel, SID,
// bank group, bank) keeps, per command, the earliest cycle it may issue
// there ("ready cycle"), as Ramulator does: when command C issues at t, each
// constraint {level, from C, to D, cycles, window N} raises D's ready cycle
// on the node of that level on C's address path to (N-th most recent C on
// that node) + cycles. A command may issue at t when t is at least its ready
// cycle on every node of its path down to its scope (below). That is the
// same as checking t >= last(from) + cycles for every constraint, but a
// readiness check costs five loads. Commands record on the nodes of their
// own address path (a PIM request's address: channel, pCH 0, SID 0, ...);
// refresh commands carry only channel and pseudo-channel and record on every
// node below that pseudo-channel. MACSB / MACPB additionally apply their
// bank-level constraints to every bank they touch (section 7.4's note).
//
// Scope. As in Ramulator, readiness is checked down to the command's scope
// level only: PREA, REFab, SFM and SETH are channel-scope commands and see
// only channel-level constraints (this is why section 7.4 lists no
// constraint "anything -> SFM", and why pseudo-channel rules with PREA or
// REFab as the later command never act in AttAcc).
//
// Controller (one per channel, section 7.5). Queues for PIM requests, reads
// and writes that admit a request while they hold at most queueDepth entries
// (Ramulator's ReqBuffer: size <= max_size, so they reach queueDepth + 1; the
// write-mode watermarks are fractions of queueDepth), a priority queue for
// refresh and an
// "active" queue for plain requests whose row has been activated, in
// AttAcc's priority order: active, refresh, PIM, then reads or writes (write
// mode by 0.8/0.2 watermarks). Within a queue the PIM scheduler picks:
// first ready, then oldest; a ready request that is not a row hit does not
// overtake an earlier candidate while some queued request has a row hit in
// its bank; behind a PIM_BARRIER only row-opening or row-closing commands
// compete. A barrier is dropped when it reaches the head of the queue, i.e.
// once every request ahead of it has issued its final command. Per cycle the
// controller issues a first command of either class and then a second of the
// other class (row: ACT*, PRE, PREA, REF*; column: everything else). PRESB
// and PREPB pair with nothing, as they have no class in AttAcc's
// get_command_type. While a refresh waits, the first slot is blocked and
// only column commands issue.
//
// Bank state. Which command a request needs next is decided from bank state
// on every look (section 7.2). As in Ramulator a bank holds a set of open
// rows: ACTAB/ACTSB/ACTPB add their row to banks already open, precharges
// clear the set. A per-channel summary ("every bank open with row r",
// "no bank open") answers the all-bank walk without visiting 64 banks.
//
// Row hits (Stats::rowHits / rowMisses) count requests whose final command
// can hit (RD, WR, MACAB, MACSB, MACPB, EWMUL): a hit when the request's
// first issued command is its final command, i.e. its bank(s) had its row
// open when it was first served; a miss when it first needed an ACT* or
// PRE*. Other requests count as neither.
//
// Device state. The channels (timing, banks, refresh schedule, controller
// mode) live in a DeviceState that outlives a run: a program's phases run
// one after another on the same device, so rows stay open, timers carry
// over and refresh keeps its schedule across phase boundaries. A run starts
// at the state's clock (where the last run ended), lets the channels refresh
// through the idle cycles up to its start cycle, then feeds its requests;
// its end becomes the new clock. Cycles are on the state's timeline.
//
// Idle cycles are skipped: when a controller issued nothing at t, nothing
// changes until the earliest ready cycle among the commands it considered,
// the next refresh or the next arrival, so it sleeps until then. The choice
// at a cycle depends only on which considered commands are ready, so the
// skip is exact. While every channel idles (empty queues, nothing to
// arrive), only refresh happens, once per nREFI; once one interval repeats
// the previous one shifted by nREFI (IdleProbe), whole intervals up to the
// next arrival are skipped at once: timers move by k * nREFI and the
// interval's command counts are added k times, so an arrival at cycle
// 10^12 costs a few intervals of work. A channel with queued requests that
// completes none for 2^20 cycles is reported as livelocked: requests that need
// different rows of the same banks can close each other's rows forever in this
// model.
//
//===----------------------------------------------------------------------===//

#include "pimsim/Engine.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace llvm;

namespace pimsim {

CommandObserver::~CommandObserver() = default;

StringRef requestTypeName(RequestType type) {
  switch (type) {
  case RequestType::Read:
    return "LD";
  case RequestType::Write:
    return "ST";
  case RequestType::MacAB:
    return "PIM_MAC_AB";
  case RequestType::MacSB:
    return "PIM_MAC_SB";
  case RequestType::MacPB:
    return "PIM_MAC_PB";
  case RequestType::WrGB:
    return "PIM_WR_GB";
  case RequestType::MvSB:
    return "PIM_MV_SB";
  case RequestType::MvGB:
    return "PIM_MV_GB";
  case RequestType::Sfm:
    return "PIM_SFM";
  case RequestType::SetModel:
    return "PIM_SET_MODEL";
  case RequestType::SetHead:
    return "PIM_SET_HEAD";
  case RequestType::Barrier:
    return "PIM_BARRIER";
  case RequestType::RdAcc:
    return "PIM_RD_ACC";
  case RequestType::EwMul:
    return "PIM_EWMUL";
  case RequestType::Af:
    return "PIM_AF";
  }
  return "<invalid>";
}

std::optional<RequestType> parseRequestType(StringRef name) {
  return StringSwitch<std::optional<RequestType>>(name)
      .Case("LD", RequestType::Read)
      .Case("ST", RequestType::Write)
      .Case("PIM_MAC_AB", RequestType::MacAB)
      .Case("PIM_MAC_SB", RequestType::MacSB)
      .Case("PIM_MAC_PB", RequestType::MacPB)
      .Case("PIM_WR_GB", RequestType::WrGB)
      .Case("PIM_MV_SB", RequestType::MvSB)
      .Case("PIM_MV_GB", RequestType::MvGB)
      .Case("PIM_SFM", RequestType::Sfm)
      .Case("PIM_SET_MODEL", RequestType::SetModel)
      .Case("PIM_SET_HEAD", RequestType::SetHead)
      .Case("PIM_BARRIER", RequestType::Barrier)
      .Case("PIM_RD_ACC", RequestType::RdAcc)
      .Case("PIM_EWMUL", RequestType::EwMul)
      .Case("PIM_AF", RequestType::Af)
      .Default(std::nullopt);
}

double Stats::externalBandwidth() const {
  return seconds > 0 ? double(bytesRead + bytesWritten) / seconds : 0.0;
}

double Stats::internalBandwidth() const {
  return seconds > 0 ? double(bytesMac) / seconds : 0.0;
}

json::Value Stats::toJSON(const Target &target) const {
  json::Object counts;
  for (unsigned c = 0; c < kNumCommands; ++c)
    counts[commandName(static_cast<Command>(c))] = commandCounts[c];
  json::Array chans;
  for (const ChannelStats &ch : channels)
    chans.push_back(json::Object{{"rowSlotBusy", ch.rowSlotBusy},
                                 {"columnSlotBusy", ch.columnSlotBusy},
                                 {"commands", ch.commands},
                                 {"lastCycle", ch.lastCycle}});
  json::Array banks;
  for (int64_t busy : bankBusyCycles)
    banks.push_back(busy);
  double extPeak = target.externalPeakBytesPerSec();
  double intPeak = target.internalPeakBytesPerSec();
  return json::Object{
      {"target", target.name},
      {"cycles", cycles},
      {"seconds", seconds},
      {"requests", requests},
      {"commandCounts", std::move(counts)},
      {"rowHits", rowHits},
      {"rowMisses", rowMisses},
      {"bytesRead", bytesRead},
      {"bytesWritten", bytesWritten},
      {"bytesMac", bytesMac},
      {"externalBandwidth", externalBandwidth()},
      {"internalBandwidth", internalBandwidth()},
      {"externalPeakBytesPerSec", extPeak},
      {"internalPeakBytesPerSec", intPeak},
      {"externalUtilization", extPeak > 0 ? externalBandwidth() / extPeak : 0},
      {"internalUtilization", intPeak > 0 ? internalBandwidth() / intPeak : 0},
      {"energyPj", energyPj},
      {"channels", std::move(chans)},
      {"bankBusyCycles", std::move(banks)},
  };
}

/// The path of the first number in `v` that is not finite (JSON has no
/// inf or nan), or nothing.
std::optional<std::string> nonFiniteField(const json::Value &v,
                                          const std::string &path) {
  if (const json::Object *o = v.getAsObject()) {
    for (const auto &kv : *o)
      if (auto bad = nonFiniteField(kv.second, path + "." + kv.first.str()))
        return bad;
  } else if (const json::Array *a = v.getAsArray()) {
    for (size_t i = 0; i < a->size(); ++i)
      if (auto bad = nonFiniteField((*a)[i], formatv("{0}[{1}]", path, i)))
        return bad;
  } else if (std::optional<double> d = v.getAsNumber()) {
    if (!std::isfinite(*d))
      return path;
  }
  return std::nullopt;
}

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max() / 4;
constexpr int64_t kNoIssue = std::numeric_limits<int64_t>::min() / 4;
constexpr uint8_t kNoCommand = 0xff; // a barrier's "command"
constexpr uint64_t kStale = ~uint64_t(0);
/// A channel with queued requests that completes none for this long is
/// livelocked (the longest legitimate wait is a few refresh intervals).
constexpr int64_t kProgressWindow = 1 << 20;

constexpr unsigned idx(Command c) { return static_cast<unsigned>(c); }
constexpr unsigned idx(Level l) { return static_cast<unsigned>(l); }

/// Levels checked for readiness, outermost first: Ramulator stops at the
/// command's scope, and PREA, REFab, SFM and SETH have channel scope.
unsigned checkedLevels(Command c) {
  switch (c) {
  case Command::PREA:
  case Command::REFab:
  case Command::SFM:
  case Command::SETH:
    return 1;
  default:
    return kNumLevels;
  }
}

bool opensRow(uint8_t c) {
  switch (static_cast<Command>(c)) {
  case Command::ACT:
  case Command::ACTAB:
  case Command::ACTSB:
  case Command::ACTPB:
    return c != kNoCommand;
  default:
    return false;
  }
}

/// A command's class for pairing two commands in one cycle.
enum class PairClass : uint8_t { Row, Column, Alone };

PairClass pairClass(uint8_t c) {
  if (c == kNoCommand)
    return PairClass::Alone;
  Command cmd = static_cast<Command>(c);
  if (cmd == Command::PRESB || cmd == Command::PREPB)
    return PairClass::Alone; // AttAcc pairs them with nothing
  return isRowCommand(cmd) ? PairClass::Row : PairClass::Column;
}

bool closesRow(uint8_t c) {
  switch (static_cast<Command>(c)) {
  case Command::PRE:
  case Command::PREA:
  case Command::PRESB:
  case Command::PREPB:
    return c != kNoCommand;
  default:
    return false;
  }
}

/// Final commands that access a row (section 7.2: the only ones that can be
/// row hits).
bool accessesRow(Command c) {
  switch (c) {
  case Command::RD:
  case Command::WR:
  case Command::MACAB:
  case Command::MACSB:
  case Command::MACPB:
  case Command::EWMUL:
    return true;
  default:
    return false;
  }
}

/// Which banks a request needs open with its row before its final command.
enum class BankScope : uint8_t { None, Bank, AllBank, SameBank, PerBank };

BankScope bankScope(RequestType type) {
  switch (type) {
  case RequestType::Read:
  case RequestType::Write:
    return BankScope::Bank;
  case RequestType::MacAB:
  case RequestType::EwMul:
    return BankScope::AllBank;
  case RequestType::MacSB:
    return BankScope::SameBank;
  case RequestType::MacPB:
    return BankScope::PerBank;
  default:
    return BankScope::None;
  }
}

Command finalCommand(RequestType type) {
  switch (type) {
  case RequestType::Read:
    return Command::RD;
  case RequestType::Write:
    return Command::WR;
  case RequestType::MacAB:
    return Command::MACAB;
  case RequestType::MacSB:
    return Command::MACSB;
  case RequestType::MacPB:
    return Command::MACPB;
  case RequestType::WrGB:
    return Command::WRGB;
  case RequestType::MvSB:
    return Command::MVSB;
  case RequestType::MvGB:
    return Command::MVGB;
  case RequestType::Sfm:
    return Command::SFM;
  case RequestType::SetModel:
    return Command::SETM;
  case RequestType::SetHead:
    return Command::SETH;
  case RequestType::RdAcc:
    return Command::RDACC;
  case RequestType::EwMul:
    return Command::EWMUL;
  case RequestType::Af:
    return Command::AF;
  case RequestType::Barrier:
    break;
  }
  return Command::SETH; // unused for barriers
}

bool isValidRequestType(RequestType type) {
  return static_cast<unsigned>(type) <= static_cast<unsigned>(RequestType::Af);
}

bool isPimRequest(RequestType type) {
  return type != RequestType::Read && type != RequestType::Write;
}

Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// One constraint as seen from its earlier command on one level.
struct Effect {
  uint8_t to;
  uint8_t window;
  int64_t cycles;
};

} // namespace

/// Everything derived from the target once per engine.
struct Engine::Impl {
  Target target;
  EngineOptions options;
  std::string setupError; // non-empty: every run fails with it

  // Organisation, per channel.
  int64_t pchs = 1, sids = 1, bgs = 1, banksPerBg = 1, banks = 1;
  std::array<int64_t, kNumLevels> nodesAt{};    // nodes of each level
  std::array<int64_t, kNumLevels> banksUnder{}; // banks below one node
  std::array<std::vector<uint16_t>, kNumLevels> nodeOfBank;
  std::vector<std::vector<uint16_t>> sameBankIndex; // by bank index: banks
  std::vector<std::vector<uint16_t>> bothPchs;      // by flat bank: banks
  int64_t readLatency = 0, nREFI = 0;
  int64_t maxCycles = 0; // the longest constraint

  // Constraint table by (level, earlier command).
  std::array<std::array<std::vector<Effect>, kNumCommands>, kNumLevels> effects;
  std::array<std::array<uint8_t, kNumCommands>, kNumLevels> historyLen{};
  std::array<std::array<uint16_t, kNumCommands>, kNumLevels> historyOffset{};
  std::array<uint16_t, kNumLevels> historyStride{};

  Impl(const Target &t, EngineOptions o) : target(t), options(o) {
    if (Error e = setup())
      setupError = toString(std::move(e));
  }
  Error setup();

  uint16_t flatBank(const DecodedAddress &a) const {
    return static_cast<uint16_t>(
        ((a.pseudoChannel * sids + a.sid) * bgs + a.bankGroup) * banksPerBg +
        a.bank);
  }
  DecodedAddress bankAddress(DecodedAddress a, unsigned bank) const {
    a.bank = bank % banksPerBg;
    a.bankGroup = (bank / banksPerBg) % bgs;
    a.sid = (bank / (banksPerBg * bgs)) % sids;
    a.pseudoChannel = bank / (banksPerBg * bgs * sids);
    return a;
  }
};

Error Engine::Impl::setup() {
  const Organization &org = target.org;
  if (org.stacks < 1 || org.channels < 1 || org.pseudoChannels < 1 ||
      org.sids < 1 || org.bankGroups < 1 || org.banks < 1 || org.rows < 1 ||
      org.columns < 1 || org.accessBytes < 1)
    return makeError("target " + target.name +
                     ": organisation counts must be positive");
  pchs = org.pseudoChannels;
  sids = org.sids;
  bgs = org.bankGroups;
  banksPerBg = org.banks;
  banks = org.banksPerChannel();
  if (banks > 4096)
    return makeError("target " + target.name +
                     ": more than 4096 banks per channel");
  if (target.queueDepth < 1)
    return makeError("target " + target.name + ": queueDepth must be >= 1");

  nodesAt = {1, pchs, pchs * sids, pchs * sids * bgs, banks};
  for (unsigned l = 0; l < kNumLevels; ++l) {
    banksUnder[l] = banks / nodesAt[l];
    nodeOfBank[l].resize(banks);
    for (int64_t b = 0; b < banks; ++b)
      nodeOfBank[l][b] = static_cast<uint16_t>(b / banksUnder[l]);
  }
  sameBankIndex.assign(banksPerBg, {});
  bothPchs.assign(banks, {});
  for (int64_t b = 0; b < banks; ++b) {
    sameBankIndex[b % banksPerBg].push_back(static_cast<uint16_t>(b));
    int64_t inPch = b % banksUnder[idx(Level::PseudoChannel)];
    for (int64_t p = 0; p < pchs; ++p)
      bothPchs[b].push_back(static_cast<uint16_t>(
          p * banksUnder[idx(Level::PseudoChannel)] + inPch));
  }

  auto nCL = target.timing("nCL");
  if (!nCL)
    return nCL.takeError();
  auto nBL = target.timing("nBL");
  if (!nBL)
    return nBL.takeError();
  readLatency = *nCL + *nBL;
  if (options.refresh) {
    auto refi = target.timing("nREFI");
    if (!refi)
      return refi.takeError();
    if (*refi < 1)
      return makeError("target " + target.name + ": nREFI must be >= 1");
    nREFI = *refi;
  }

  for (const TimingConstraint &tc : target.constraints) {
    if (tc.window < 1 || tc.window > 64)
      return makeError("target " + target.name + ": constraint " + tc.param +
                       ": window must be 1..64");
    if (tc.cycles < 0 || tc.cycles > (int64_t(1) << 32))
      return makeError("target " + target.name + ": constraint " + tc.param +
                       ": cycles must be 0..2^32");
    maxCycles = std::max(maxCycles, tc.cycles);
    unsigned l = idx(tc.level);
    if (l >= kNumLevels)
      return makeError("target " + target.name + ": constraint " + tc.param +
                       ": invalid level");
    for (Command from : tc.from) {
      for (Command to : tc.to)
        effects[l][idx(from)].push_back({static_cast<uint8_t>(to),
                                         static_cast<uint8_t>(tc.window),
                                         tc.cycles});
      if (tc.window > 1)
        historyLen[l][idx(from)] = std::max<uint8_t>(
            historyLen[l][idx(from)], static_cast<uint8_t>(tc.window));
    }
  }
  for (unsigned l = 0; l < kNumLevels; ++l) {
    uint16_t offset = 0;
    for (unsigned c = 0; c < kNumCommands; ++c) {
      historyOffset[l][c] = offset;
      if (historyLen[l][c] > 1)
        offset += historyLen[l][c];
    }
    historyStride[l] = offset;
  }
  return Error::success();
}

namespace {

/// A request with its validated address.
struct Item {
  const Request *req;
  DecodedAddress addr;
  uint32_t channel; // global channel (stack * channels + channel)
  uint16_t bank;    // flat bank within the channel
};

/// A queue entry.
struct Entry {
  const Item *item = nullptr; // nullptr: a refresh (REFab) request
  RequestType type = RequestType::Read;
  Command final = Command::RD;
  bool barrier = false;
  bool started = false; // issued its first command
  uint8_t pch = 0;      // refresh: the pseudo-channel
  uint16_t bank = 0;    // the request's bank (row-hit key)
  int64_t row = 0;
  int64_t arrive = 0;
  // Derived from the bank state; valid while stateStamp is current.
  uint64_t stateStamp = kStale;
  uint8_t cmd = kNoCommand;
  bool rowHit = false;
  uint16_t cmdBank = 0; // bank on the command's address path
  // Earliest issue cycle of cmd: exact while timeStamp is current, else a
  // lower bound (ready cycles only grow); kStale: unknown.
  uint64_t timeStamp = kStale;
  int64_t readyAt = 0;
};

/// One controller queue. All but the active queue keep arrival order.
struct Queue {
  std::vector<Entry> entries;
  bool arrivalOrdered = true;
  // Queued row hits per bank, for the bank state of hitStamp (every entry
  // is derived for that state while it is current).
  std::vector<uint16_t> hits;
  uint64_t hitStamp = kStale;

  bool empty() const { return entries.empty(); }
  size_t size() const { return entries.size(); }
  Entry &operator[](size_t i) { return entries[i]; }
  Entry &front() { return entries.front(); }
  void erase(size_t i) {
    const Entry &e = entries[i];
    if (e.rowHit && hitStamp != kStale && e.stateStamp == hitStamp)
      --hits[e.bank];
    entries.erase(entries.begin() + i);
  }
  bool hasHit(uint16_t bank) const { return hits[bank] != 0; }
};

struct Channel {
  unsigned id = 0;
  // Timing: ready cycle per node per command, and issue histories for
  // window constraints.
  std::array<std::vector<std::array<int64_t, kNumCommands>>, kNumLevels> ready;
  std::array<std::vector<int64_t>, kNumLevels> history;
  // Banks. As in Ramulator, a bank holds a set of open rows: an all-bank
  // ACT adds its row to banks that are already open (a request to either
  // row is then a row hit) and a precharge clears the set.
  std::vector<int64_t> openRow; // the newest open row; -1: closed
  std::vector<std::vector<int64_t>> olderRows; // further open rows
  std::vector<int64_t> openSince;
  int64_t numOpen = 0;
  int64_t multiRowBanks = 0; // banks with olderRows
  // With multiRowBanks == 0 and >= 0: every bank is open with this row.
  int64_t allOpenRow = -1;

  bool hasRow(unsigned b, int64_t row) const {
    return openRow[b] == row ||
           (!olderRows[b].empty() &&
            std::find(olderRows[b].begin(), olderRows[b].end(), row) !=
                olderRows[b].end());
  }
  // Controller.
  Queue active, prio, pim, reads, writes;
  bool writeMode = false;
  int64_t nextRefresh = kNever;
  int64_t nextEval = kNever;
  int64_t lastPop = kNoIssue; // when the last pending read leaves
  int64_t lastDone = 0;       // when a request last completed
  uint64_t stateEpoch = 0;    // bumped by every command that opens/closes
  uint64_t timeEpoch = 0;     // bumped by every issued command
  bool freedSlot = false;     // an input queue lost an entry this cycle

  bool hasRequests() const {
    return !(active.empty() && pim.empty() && reads.empty() && writes.empty());
  }
  bool queuesEmpty() const {
    return active.empty() && prio.empty() && pim.empty() && reads.empty() &&
           writes.empty();
  }
};

} // namespace

/// The device between runs (DeviceState): every channel's timing, banks,
/// refresh schedule and controller, with empty queues, and the clock.
struct DeviceState::Impl {
  std::vector<Channel> channels; // empty: a fresh device
  int64_t clock = 0;
};

namespace {

/// A request stream fed in order (the whole trace, or one channel's stream).
struct Feed {
  std::vector<Item> items;
  size_t next = 0;
  int64_t wake = 0;
  int blockedOn = -1; // channel whose full queue stalls the stream
  bool done() const { return next == items.size(); }
};

/// One run on a device state: from the state's clock through the idle
/// cycles up to `start`, then until every request has completed.
class Simulation {
public:
  Simulation(const Engine::Impl &impl, DeviceState::Impl &state)
      : m(impl), t(impl.target), state(state), channels(state.channels) {}
  Expected<Stats> run(std::vector<Feed> feeds, int64_t start);

private:
  const Engine::Impl &m;
  const Target &t;
  DeviceState::Impl &state;
  std::vector<Channel> &channels;
  std::vector<Feed> feeds;
  Stats stats;
  int64_t start = 0; // the run's first cycle; requests arrive from here

  /// The device at a refresh boundary while it idles (idle-refresh skip).
  struct IdleProbe {
    int64_t at = kNoIssue;
    int64_t horizon = kNoIssue; // nothing arrives before it
    std::vector<Channel> channels;
    Stats stats;
  } probe;
  int64_t idleHorizon(int64_t now) const;
  bool repeatsProbe(int64_t now) const;
  bool sameTiming(const Channel &a, const Channel &b, int64_t now) const;
  bool sameStatsShape(const Stats &a, const Stats &b) const;
  void shiftChannel(Channel &ch, int64_t now, int64_t by) const;
  void addIntervals(int64_t k, int64_t by);
  int64_t skipIdleRefresh(int64_t now);

  void initChannel(Channel &ch, unsigned id);
  void addBusy(Channel &ch, unsigned b, int64_t until);
  bool finished(int64_t now, int64_t &next) const;
  Error checkProgress(int64_t now) const;
  void finishStats();
  void feed(Feed &f, int64_t now);
  void evaluate(Channel &ch, int64_t now);

  // Next command of an entry from bank state (section 7.2).
  void deriveCommand(Channel &ch, Entry &e);
  void ensureCommand(Channel &ch, Entry &e) {
    if (e.stateStamp != ch.stateEpoch)
      deriveCommand(ch, e);
  }
  void ensureHitMask(Channel &ch, Queue &q);
  void enqueue(Channel &ch, Queue &q, const Entry &e);
  int64_t readyCycle(const Channel &ch, Command c, unsigned bank) const;
  bool isReady(Channel &ch, Entry &e, int64_t now, int64_t &wake);
  int tournament(Channel &ch, Queue &q, int64_t now, int64_t &wake);
  int bestOf(Channel &ch, Queue &q, int64_t now, int64_t &wake);
  bool blockedByActive(const Channel &ch, const Entry &e) const;
  void setWriteMode(Channel &ch);

  struct Choice {
    Queue *queue = nullptr;
    int index = -1;
  };
  Choice pickFirst(Channel &ch, int64_t now, int64_t &wake, uint8_t &first,
                   bool &trySecond);
  Choice pickSecond(Channel &ch, int64_t now, int64_t &wake, uint8_t first);

  void issue(Channel &ch, Queue &q, int index, int64_t now);
  void record(Channel &ch, unsigned level, unsigned node, Command c,
              int64_t now);
  void recordTiming(Channel &ch, Command c, const Entry &e, int64_t now);
  void openBank(Channel &ch, unsigned b, int64_t row, int64_t now);
  void closeBank(Channel &ch, unsigned b, int64_t now);
  void updateBanks(Channel &ch, Command c, const Entry &e, int64_t now);
  void countCommand(Channel &ch, Command c, const Entry &e, int64_t now);
};

void Simulation::initChannel(Channel &ch, unsigned id) {
  ch.id = id;
  for (unsigned l = 0; l < kNumLevels; ++l) {
    std::array<int64_t, kNumCommands> zero;
    zero.fill(0);
    ch.ready[l].assign(m.nodesAt[l], zero);
    ch.history[l].assign(m.nodesAt[l] * m.historyStride[l], kNoIssue);
  }
  ch.openRow.assign(m.banks, -1);
  ch.olderRows.assign(m.banks, {});
  ch.openSince.assign(m.banks, 0);
  for (Queue *q : {&ch.active, &ch.prio, &ch.pim, &ch.reads, &ch.writes})
    q->hits.assign(m.banks, 0);
  ch.active.arrivalOrdered = false;
  // Ramulator's clock starts at 1 and the first refresh is due at clock
  // nREFI; our cycle c is its clock c + 1.
  ch.nextRefresh = m.options.refresh ? m.nREFI - 1 : kNever;
  ch.nextEval = ch.nextRefresh;
}

int64_t Simulation::readyCycle(const Channel &ch, Command c,
                               unsigned bank) const {
  unsigned ci = idx(c);
  int64_t r = ch.ready[0][0][ci];
  if (checkedLevels(c) == kNumLevels)
    for (unsigned l = 1; l < kNumLevels; ++l)
      r = std::max(r, ch.ready[l][m.nodeOfBank[l][bank]][ci]);
  return r;
}

void Simulation::deriveCommand(Channel &ch, Entry &e) {
  e.stateStamp = ch.stateEpoch;
  uint8_t oldCmd = e.cmd;
  uint16_t oldBank = e.cmdBank;
  e.cmdBank = e.bank;
  e.rowHit = false;
  if (e.barrier) {
    e.cmd = kNoCommand;
    return;
  }
  if (!e.item) { // refresh: close every bank first (RequireAllBanksClosed)
    e.cmd =
        static_cast<uint8_t>(ch.numOpen > 0 ? Command::PREA : Command::REFab);
    if (e.cmd != oldCmd)
      e.timeStamp = kStale;
    return;
  }
  Command c = e.final;
  switch (bankScope(e.type)) {
  case BankScope::None:
    break;
  case BankScope::Bank: {
    if (ch.openRow[e.bank] < 0)
      c = Command::ACT;
    else if (!ch.hasRow(e.bank, e.row))
      c = Command::PRE;
    break;
  }
  case BankScope::AllBank:
    // Walk all banks in order pCH, SID, BG, bank: first closed -> ACTAB,
    // first open with another row -> PREA. The lockstep summary answers
    // without the walk in the common cases.
    if (ch.numOpen == 0)
      c = Command::ACTAB;
    else if (ch.allOpenRow >= 0 && ch.multiRowBanks == 0)
      c = ch.allOpenRow == e.row ? e.final : Command::PREA;
    else
      for (unsigned b = 0; b < static_cast<unsigned>(m.banks); ++b) {
        if (ch.openRow[b] < 0) {
          c = Command::ACTAB;
          break;
        }
        if (!ch.hasRow(b, e.row)) {
          c = Command::PREA;
          break;
        }
      }
    break;
  case BankScope::SameBank:
    for (uint16_t b : m.sameBankIndex[e.bank % m.banksPerBg]) {
      if (ch.openRow[b] < 0) {
        c = Command::ACTSB;
        break;
      }
      if (!ch.hasRow(b, e.row)) {
        // PRESB closes the banks of the SID/BG it is addressed to; address
        // it to the bank in the way (AttAcc addresses the request's own
        // banks, which never terminates when another SID/BG is in the way).
        c = Command::PRESB;
        e.cmdBank = b;
        break;
      }
    }
    break;
  case BankScope::PerBank:
    for (uint16_t b : m.bothPchs[e.bank]) {
      if (ch.openRow[b] < 0) {
        c = Command::ACTPB;
        break;
      }
      if (!ch.hasRow(b, e.row)) {
        c = Command::PREPB;
        break;
      }
    }
    break;
  }
  e.cmd = static_cast<uint8_t>(c);
  e.rowHit = c == e.final && accessesRow(c);
  if (e.cmd != oldCmd || e.cmdBank != oldBank)
    e.timeStamp = kStale;
}

bool Simulation::isReady(Channel &ch, Entry &e, int64_t now, int64_t &wake) {
  ensureCommand(ch, e);
  // A stale ready cycle that is still in the future is a valid "not yet":
  // ready cycles only grow. It may wake the controller early, never late.
  if (e.timeStamp != ch.timeEpoch &&
      (e.timeStamp == kStale || e.readyAt <= now)) {
    e.timeStamp = ch.timeEpoch;
    if (e.barrier)
      e.readyAt = 0;
    else if (!e.item)
      e.readyAt = ch.ready[0][0][e.cmd];
    else
      e.readyAt = readyCycle(ch, static_cast<Command>(e.cmd), e.cmdBank);
  }
  if (e.readyAt <= now)
    return true;
  wake = std::min(wake, e.readyAt);
  return false;
}

/// Derives every entry's next command and the banks with a queued row hit.
void Simulation::ensureHitMask(Channel &ch, Queue &q) {
  if (q.hitStamp == ch.stateEpoch)
    return;
  std::fill(q.hits.begin(), q.hits.end(), 0);
  const Entry *prev = nullptr;
  for (Entry &e : q.entries) {
    if (e.stateStamp != ch.stateEpoch) {
      // Neighbours in a queue are often the same operation on the same
      // row (a GEMV's MACs): reuse the derivation.
      if (prev && prev->item && e.item && prev->type == e.type &&
          prev->bank == e.bank && prev->row == e.row) {
        e.stateStamp = ch.stateEpoch;
        if (e.cmd != prev->cmd || e.cmdBank != prev->cmdBank)
          e.timeStamp = kStale;
        e.cmd = prev->cmd;
        e.rowHit = prev->rowHit;
        e.cmdBank = prev->cmdBank;
      } else {
        deriveCommand(ch, e);
      }
    }
    prev = &e;
    if (e.rowHit)
      ++q.hits[e.bank];
  }
  q.hitStamp = ch.stateEpoch;
}

void Simulation::enqueue(Channel &ch, Queue &q, const Entry &e) {
  q.entries.push_back(e);
  if (q.hitStamp == ch.stateEpoch) {
    Entry &added = q.entries.back();
    deriveCommand(ch, added);
    if (added.rowHit)
      ++q.hits[added.bank];
  }
}

/// AttAcc's PIM scheduler (get_best_request / compare), used for every
/// queue: a pairwise tournament in queue order. compare(a, b): if exactly
/// one is ready, the ready one, except that a ready b which is not a row hit
/// loses while some queued request has a row hit in b's bank; otherwise the
/// older. Behind a barrier only row-opening/closing commands take part.
int Simulation::tournament(Channel &ch, Queue &q, int64_t now, int64_t &wake) {
  int cand = 0;
  bool behindBarrier = false;
  for (int i = 1, n = static_cast<int>(q.size()); i < n; ++i) {
    Entry &next = q[i];
    if (next.barrier)
      behindBarrier = true;
    if (behindBarrier && !opensRow(next.cmd) && !closesRow(next.cmd))
      continue;
    bool r1 = isReady(ch, q[cand], now, wake);
    bool r2 = isReady(ch, next, now, wake);
    if (r1 != r2) {
      if (r1)
        continue;
      if (!next.rowHit && q.hasHit(next.bank))
        continue;
      cand = i;
      continue;
    }
    if (q[cand].arrive > next.arrive)
      cand = i;
  }
  return cand;
}

/// The scheduler's candidate of a queue, or -1 when it is empty. Drops a
/// barrier at the head (everything ahead of it has issued its final
/// command). In an arrival-ordered queue the tournament's winner is the
/// first eligible entry that is ready and not held back by a queued row hit
/// (a ready candidate never loses later), else the head, so the scan stops
/// there; entries after it cannot change the outcome until a command
/// issues.
int Simulation::bestOf(Channel &ch, Queue &q, int64_t now, int64_t &wake) {
  if (q.empty())
    return -1;
  if (q.front().barrier) {
    q.erase(0);
    ch.freedSlot = true;
    if (q.empty())
      return -1;
  }
  ensureHitMask(ch, q);
  if (!q.arrivalOrdered)
    return tournament(ch, q, now, wake);
  if (isReady(ch, q[0], now, wake))
    return 0;
  bool behindBarrier = false;
  const Entry *prev = nullptr;
  for (int i = 1, n = static_cast<int>(q.size()); i < n; ++i) {
    Entry &next = q[i];
    if (next.barrier) {
      behindBarrier = true;
      continue;
    }
    if (behindBarrier && !opensRow(next.cmd) && !closesRow(next.cmd))
      continue;
    if (next.timeStamp != ch.timeEpoch && prev &&
        prev->timeStamp == ch.timeEpoch && prev->item && next.item &&
        prev->cmd == next.cmd && prev->cmdBank == next.cmdBank) {
      next.timeStamp = ch.timeEpoch;
      next.readyAt = prev->readyAt;
    }
    prev = &next;
    if (!isReady(ch, next, now, wake))
      continue;
    if (!next.rowHit && q.hasHit(next.bank))
      continue;
    return i;
  }
  return 0;
}

/// A closing command may not interrupt a plain request that activated the
/// same bank and waits for its column command. The request itself is
/// exempt: AttAcc compares against the whole active queue, so a request
/// whose bank another request re-opened with a different row would block
/// its own precharge forever.
bool Simulation::blockedByActive(const Channel &ch, const Entry &e) const {
  if (!closesRow(e.cmd) || !e.item)
    return false;
  for (const Entry &a : ch.active.entries)
    if (a.bank == e.bank && &a != &e)
      return true;
  return false;
}

void Simulation::setWriteMode(Channel &ch) {
  double depth = static_cast<double>(t.queueDepth);
  double size = static_cast<double>(ch.writes.size());
  if (!ch.writeMode) {
    if (size > 0.8 * depth || ch.reads.empty())
      ch.writeMode = true;
  } else if (size < 0.2 * depth && !ch.reads.empty()) {
    ch.writeMode = false;
  }
}

/// The first command of a cycle (schedule_request). `first`/`trySecond` say
/// whether a second command of the other class may be looked for.
Simulation::Choice Simulation::pickFirst(Channel &ch, int64_t now,
                                         int64_t &wake, uint8_t &first,
                                         bool &trySecond) {
  trySecond = false;
  Choice choice;
  auto take = [&](Queue &q, int i) -> bool {
    if (!isReady(ch, q[i], now, wake))
      return false;
    choice = {&q, i};
    return true;
  };
  int i = bestOf(ch, ch.active, now, wake);
  bool found = i >= 0 && take(ch.active, i);
  if (!found && !ch.prio.empty()) {
    if (!take(ch.prio, 0)) {
      // A waiting refresh blocks this slot; column commands may still go.
      first = ch.prio.front().cmd;
      trySecond = true;
      return {};
    }
    found = true;
  }
  if (!found) {
    i = bestOf(ch, ch.pim, now, wake);
    found = i >= 0 && take(ch.pim, i);
  }
  if (!found) {
    setWriteMode(ch);
    Queue &q = ch.writeMode ? ch.writes : ch.reads;
    i = bestOf(ch, q, now, wake);
    found = i >= 0 && take(q, i);
  }
  if (!found)
    return {}; // a second look would find the same unready candidates
  Entry &e = (*choice.queue)[choice.index];
  if (blockedByActive(ch, e)) {
    first = e.cmd;
    trySecond = true;
    return {};
  }
  return choice;
}

/// The second command of a cycle (schedule_sec_request): the other class.
Simulation::Choice Simulation::pickSecond(Channel &ch, int64_t now,
                                          int64_t &wake, uint8_t first) {
  PairClass firstClass = pairClass(first);
  if (firstClass == PairClass::Alone)
    return {};
  auto otherClass = [&](const Entry &e) {
    PairClass c = pairClass(e.cmd);
    return c != PairClass::Alone && c != firstClass;
  };
  Choice choice;
  int i = bestOf(ch, ch.active, now, wake);
  if (i >= 0 && otherClass(ch.active[i]) &&
      isReady(ch, ch.active[i], now, wake))
    choice = {&ch.active, i};
  if (!choice.queue && !ch.prio.empty()) {
    Entry &head = ch.prio.front();
    ensureCommand(ch, head);
    if (otherClass(head)) {
      if (!isReady(ch, head, now, wake))
        return {};
      choice = {&ch.prio, 0};
    }
  }
  if (!choice.queue) {
    i = bestOf(ch, ch.pim, now, wake);
    if (i >= 0 && otherClass(ch.pim[i]) && isReady(ch, ch.pim[i], now, wake))
      choice = {&ch.pim, i};
  }
  if (!choice.queue) {
    setWriteMode(ch);
    Queue &q = ch.writeMode ? ch.writes : ch.reads;
    i = bestOf(ch, q, now, wake);
    if (i >= 0 && otherClass(q[i]) && isReady(ch, q[i], now, wake))
      choice = {&q, i};
  }
  if (choice.queue && blockedByActive(ch, (*choice.queue)[choice.index]))
    return {};
  return choice;
}

void Simulation::record(Channel &ch, unsigned level, unsigned node, Command c,
                        int64_t now) {
  const std::vector<Effect> &effects = m.effects[level][idx(c)];
  if (effects.empty())
    return;
  int64_t *hist = nullptr;
  unsigned len = m.historyLen[level][idx(c)];
  if (len > 1) {
    hist = &ch.history[level][node * m.historyStride[level] +
                              m.historyOffset[level][idx(c)]];
    std::memmove(hist + 1, hist, (len - 1) * sizeof(int64_t));
    hist[0] = now;
  }
  std::array<int64_t, kNumCommands> &ready = ch.ready[level][node];
  for (const Effect &f : effects) {
    int64_t past = f.window > 1 ? hist[f.window - 1] : now;
    if (past == kNoIssue)
      continue;
    ready[f.to] = std::max(ready[f.to], past + f.cycles);
  }
}

void Simulation::recordTiming(Channel &ch, Command c, const Entry &e,
                              int64_t now) {
  if (!e.item) {
    // Refresh commands address (channel, pseudo-channel) only and record on
    // every node below that pseudo-channel.
    record(ch, 0, 0, c, now);
    record(ch, 1, e.pch, c, now);
    for (unsigned l = 2; l < kNumLevels; ++l) {
      int64_t per = m.nodesAt[l] / m.pchs;
      for (int64_t n = e.pch * per; n < (e.pch + 1) * per; ++n)
        record(ch, l, static_cast<unsigned>(n), c, now);
    }
    return;
  }
  for (unsigned l = 0; l < kNumLevels; ++l)
    record(ch, l, m.nodeOfBank[l][e.cmdBank], c, now);
  // MACSB / MACPB apply their bank-level constraints to every bank they
  // touch (AttAcc's PIMSameBankActions / PIMPerBankActions; for MACPB the
  // bank in each pCH, not the one AttAcc's code picks: docs/pimsim-engine.md,
  // departure 4).
  const std::vector<uint16_t> *touched = nullptr;
  if (c == Command::MACSB)
    touched = &m.sameBankIndex[e.cmdBank % m.banksPerBg];
  else if (c == Command::MACPB)
    touched = &m.bothPchs[e.cmdBank];
  if (touched)
    for (uint16_t b : *touched)
      if (b != e.cmdBank)
        record(ch, idx(Level::Bank), b, c, now);
}

void Simulation::openBank(Channel &ch, unsigned b, int64_t row, int64_t now) {
  if (ch.openRow[b] < 0) {
    ++ch.numOpen;
    ch.openSince[b] = now;
  } else if (!ch.hasRow(b, row)) {
    if (ch.olderRows[b].empty())
      ++ch.multiRowBanks;
    ch.olderRows[b].push_back(ch.openRow[b]);
  } else {
    return;
  }
  ch.openRow[b] = row;
}

void Simulation::closeBank(Channel &ch, unsigned b, int64_t now) {
  if (ch.openRow[b] < 0)
    return;
  if (!ch.olderRows[b].empty()) {
    ch.olderRows[b].clear();
    --ch.multiRowBanks;
  }
  --ch.numOpen;
  addBusy(ch, b, now);
  ch.openRow[b] = -1;
}

void Simulation::updateBanks(Channel &ch, Command c, const Entry &e,
                             int64_t now) {
  switch (c) {
  case Command::ACT:
    openBank(ch, e.cmdBank, e.row, now);
    break;
  case Command::PRE:
    closeBank(ch, e.cmdBank, now);
    break;
  case Command::PREA: // channel-wide in this model (section 7.2)
    for (int64_t b = 0; b < m.banks; ++b)
      closeBank(ch, static_cast<unsigned>(b), now);
    break;
  case Command::PRESB: // the SID/BG/bank it addresses, in every pCH
  case Command::PREPB:
    for (uint16_t b : m.bothPchs[e.cmdBank])
      closeBank(ch, b, now);
    break;
  case Command::ACTAB:
    for (int64_t b = 0; b < m.banks; ++b)
      openBank(ch, static_cast<unsigned>(b), e.row, now);
    ch.allOpenRow = e.row;
    return;
  case Command::ACTSB:
    for (uint16_t b : m.sameBankIndex[e.cmdBank % m.banksPerBg])
      openBank(ch, b, e.row, now);
    break;
  case Command::ACTPB:
    for (uint16_t b : m.bothPchs[e.cmdBank])
      openBank(ch, b, e.row, now);
    break;
  default:
    return; // no bank state change
  }
  ch.allOpenRow = -1;
}

void Simulation::countCommand(Channel &ch, Command c, const Entry &e,
                              int64_t now) {
  ++stats.commandCounts[idx(c)];
  ChannelStats &cs = stats.channels[ch.id];
  ++cs.commands;
  if (isRowCommand(c))
    ++cs.rowSlotBusy;
  else
    ++cs.columnSlotBusy;
  cs.lastCycle = now;
  int64_t access = t.org.accessBytes;
  switch (c) {
  case Command::RD:
  case Command::RDACC:
    stats.bytesRead += access;
    break;
  case Command::WR:
  case Command::WRGB:
    stats.bytesWritten += access;
    break;
  case Command::MACAB:
    stats.bytesMac += access * m.banks;
    break;
  case Command::MACSB:
    stats.bytesMac +=
        access *
        static_cast<int64_t>(m.sameBankIndex[e.cmdBank % m.banksPerBg].size());
    break;
  case Command::MACPB:
    stats.bytesMac += access * m.pchs;
    break;
  default:
    break;
  }
  // Row hit: the request's first issued command is its final command
  // (section 7.2: only RD, WR and MAC* can hit).
  if (e.item && !e.started && accessesRow(e.final)) {
    if (c == e.final)
      ++stats.rowHits;
    else
      ++stats.rowMisses;
  }
}

void Simulation::issue(Channel &ch, Queue &q, int index, int64_t now) {
  Entry &e = q[index];
  Command c = static_cast<Command>(e.cmd);
  recordTiming(ch, c, e, now);
  updateBanks(ch, c, e, now);
  countCommand(ch, c, e, now);
  e.started = true;
  ++ch.timeEpoch;
  if (opensRow(e.cmd) || closesRow(e.cmd))
    ++ch.stateEpoch;
  if (CommandObserver *obs = m.options.observer) {
    DecodedAddress a;
    if (e.item) {
      a = m.bankAddress(e.item->addr, e.cmdBank);
    } else {
      a.stack = ch.id / t.org.channels;
      a.channel = ch.id % t.org.channels;
      a.pseudoChannel = e.pch;
    }
    obs->onCommand(now, c, a, e.item ? e.item->req : nullptr);
  }
  bool inputQueue = &q == &ch.pim || &q == &ch.reads || &q == &ch.writes;
  if (c == e.final && e.item) {
    ch.lastDone = now;
    if (e.type == RequestType::Read) {
      // The pending queue releases one read per cycle, in order.
      ch.lastPop = std::max(now + m.readLatency, ch.lastPop + 1);
    }
    q.erase(index);
    ch.freedSlot |= inputQueue;
  } else if (c == Command::REFab && !e.item) {
    q.erase(index);
  } else if (!isPimRequest(e.type) && opensRow(e.cmd)) {
    // A plain request that activated its row waits in the active queue,
    // which is served first.
    Entry moved = e;
    q.erase(index);
    enqueue(ch, ch.active, moved);
    ch.freedSlot |= inputQueue;
  }
}

void Simulation::evaluate(Channel &ch, int64_t now) {
  if (now >= ch.nextRefresh) {
    for (int64_t p = 0; p < m.pchs; ++p) {
      Entry r;
      r.pch = static_cast<uint8_t>(p);
      r.final = Command::REFab;
      r.arrive = now;
      enqueue(ch, ch.prio, r);
    }
    ch.nextRefresh += m.nREFI;
  }
  int64_t wake = kNever;
  bool issued = false;
  uint8_t first = kNoCommand;
  bool trySecond = false;
  Choice c1 = pickFirst(ch, now, wake, first, trySecond);
  if (c1.queue) {
    Entry &e = (*c1.queue)[c1.index];
    if (e.barrier) {
      // Two barriers in a row: AttAcc issues the second as a command that
      // takes the cycle.
      c1.queue->erase(c1.index);
      ch.freedSlot = true;
      trySecond = false;
    } else {
      first = e.cmd;
      issue(ch, *c1.queue, c1.index, now);
      trySecond = true;
    }
    issued = true;
  }
  if (trySecond) {
    Choice c2 = pickSecond(ch, now, wake, first);
    if (c2.queue) {
      issue(ch, *c2.queue, c2.index, now);
      issued = true;
    }
  }
  ch.nextEval = issued ? now + 1 : std::min(wake, ch.nextRefresh);
  if (ch.nextEval <= now)
    ch.nextEval = now + 1;
}

void Simulation::feed(Feed &f, int64_t now) {
  f.blockedOn = -1;
  while (!f.done()) {
    const Item &item = f.items[f.next];
    const Request &req = *item.req;
    if (start + req.arrival > now) {
      f.wake = start + req.arrival;
      return;
    }
    Channel &ch = channels[item.channel];
    if (req.type == RequestType::Read) {
      // A read of an address with a queued write is answered from the write
      // queue (AttAcc's controller forwards it).
      bool forwarded = std::any_of(
          ch.writes.entries.begin(), ch.writes.entries.end(),
          [&](const Entry &w) { return w.item->req->addr == req.addr; });
      if (forwarded) {
        ch.lastPop = std::max(now, ch.lastPop + 1);
        ++f.next;
        continue;
      }
    }
    Queue &q = isPimRequest(req.type)          ? ch.pim
               : req.type == RequestType::Read ? ch.reads
                                               : ch.writes;
    // Admitted while it holds at most queueDepth (AttAcc: 33 of 32).
    if (static_cast<int64_t>(q.size()) > t.queueDepth) {
      f.blockedOn = static_cast<int>(item.channel);
      f.wake = kNever;
      return;
    }
    Entry e;
    e.item = &item;
    e.type = req.type;
    e.final = finalCommand(req.type);
    e.barrier = req.type == RequestType::Barrier;
    e.bank = item.bank;
    e.row = item.addr.row;
    e.arrive = now;
    if (!ch.hasRequests())
      ch.lastDone = now;
    enqueue(ch, q, e);
    ch.nextEval = now;
    ++f.next;
  }
  f.wake = kNever;
}

/// The cycles of [start, until) during which bank b had a row open.
void Simulation::addBusy(Channel &ch, unsigned b, int64_t until) {
  int64_t since = std::max(ch.openSince[b], start);
  if (until > since)
    stats.bankBusyCycles[ch.id * m.banks + b] += until - since;
}

/// Whether the run is over at `now`: every request fed and done and no
/// refresh pending, at or after the start. Otherwise lowers `next` to the
/// start, or to when the last read's data leaves.
bool Simulation::finished(int64_t now, int64_t &next) const {
  if (now < start) {
    next = std::min(next, start);
    return false;
  }
  if (!std::all_of(feeds.begin(), feeds.end(),
                   [](const Feed &f) { return f.done(); }))
    return false;
  int64_t lastPop = kNoIssue;
  for (const Channel &ch : channels) {
    if (!ch.queuesEmpty())
      return false;
    lastPop = std::max(lastPop, ch.lastPop);
  }
  // Ramulator runs until nothing is pending, reads in flight included.
  if (lastPop <= now)
    return true;
  next = std::min(next, lastPop);
  return false;
}

/// Requests that need different rows of the same banks can close each
/// other's rows forever (AttAcc's model has no arbitration against it).
Error Simulation::checkProgress(int64_t now) const {
  for (const Channel &ch : channels)
    if (ch.hasRequests() && now - ch.lastDone > kProgressWindow)
      return makeError(
          formatv("pimsim: channel {0}: no request completed in cycles "
                  "{1}..{2} although {3} are queued (requests keep "
                  "closing each other's rows: livelock)",
                  ch.id, ch.lastDone, now,
                  ch.pim.size() + ch.reads.size() + ch.writes.size() +
                      ch.active.size())
              .str());
  return Error::success();
}

Expected<Stats> Simulation::run(std::vector<Feed> feedList, int64_t first) {
  feeds = std::move(feedList);
  start = first;
  int64_t numChannels = t.org.totalChannels();
  if (channels.empty()) {
    channels.resize(numChannels);
    for (int64_t c = 0; c < numChannels; ++c)
      initChannel(channels[c], static_cast<unsigned>(c));
  }
  if (static_cast<int64_t>(channels.size()) != numChannels ||
      static_cast<int64_t>(channels[0].openRow.size()) != m.banks)
    return makeError("pimsim: the device state belongs to another target");
  if (start < state.clock)
    return makeError(formatv("pimsim: a run cannot start at cycle {0}, "
                             "before the device's clock {1}",
                             start, state.clock)
                         .str());
  stats.channels.assign(numChannels, {});
  stats.bankBusyCycles.assign(numChannels * m.banks, 0);
  for (Feed &f : feeds) {
    stats.requests += static_cast<int64_t>(f.items.size());
    f.wake = start;
  }
  // Every queue is empty between runs: until requests arrive, a channel
  // only refreshes.
  for (Channel &ch : channels)
    ch.nextEval = ch.nextRefresh;

  int64_t now = state.clock;
  for (;;) {
    now = skipIdleRefresh(now);
    for (Feed &f : feeds)
      if (f.wake <= now)
        feed(f, now);
    for (Channel &ch : channels) {
      if (ch.nextEval > now)
        continue;
      evaluate(ch, now);
      if (ch.freedSlot) {
        ch.freedSlot = false;
        for (Feed &f : feeds)
          if (f.blockedOn == static_cast<int>(ch.id))
            f.wake = now + 1;
      }
    }
    int64_t next = kNever;
    if (finished(now, next))
      break;
    for (const Feed &f : feeds)
      next = std::min(next, f.wake);
    for (const Channel &ch : channels)
      next = std::min(next, ch.nextEval);
    if (next >= kNever)
      return makeError(formatv("pimsim: no command can issue after cycle {0} "
                               "but requests remain (deadlock)",
                               now)
                           .str());
    if (Error e = checkProgress(now))
      return e;
    now = std::max(next, now + 1);
  }
  finishStats();
  return std::move(stats);
}

/// The first cycle at which anything but refresh can happen when every
/// channel idles at its refresh boundary `now`; kNoIssue when one does not.
int64_t Simulation::idleHorizon(int64_t now) const {
  for (const Channel &ch : channels)
    if (!ch.queuesEmpty() || ch.nextRefresh != now || ch.nextEval != now ||
        ch.lastPop >= now)
      return kNoIssue;
  int64_t horizon = now < start ? start : kNever;
  for (const Feed &f : feeds)
    if (!f.done())
      horizon = std::min(horizon, f.wake);
  return horizon;
}

/// Whether two idle channels, `a` at the probe's cycle and `b` one refresh
/// interval later at `now`, behave alike from there on: every ready cycle
/// and every window entry that can still matter is shifted by nREFI.
bool Simulation::sameTiming(const Channel &a, const Channel &b,
                            int64_t now) const {
  int64_t then = now - m.nREFI;
  if (a.writeMode != b.writeMode || a.numOpen != 0 || b.numOpen != 0)
    return false;
  for (unsigned l = 0; l < kNumLevels; ++l) {
    for (size_t n = 0; n < a.ready[l].size(); ++n)
      for (unsigned c = 0; c < kNumCommands; ++c)
        if (std::max(a.ready[l][n][c], then) + m.nREFI !=
            std::max(b.ready[l][n][c], now))
          return false;
    // A window entry older than the longest constraint raises nothing.
    for (size_t i = 0; i < a.history[l].size(); ++i)
      if (std::max(a.history[l][i], then - m.maxCycles - 1) + m.nREFI !=
          std::max(b.history[l][i], now - m.maxCycles - 1))
        return false;
  }
  return true;
}

/// Whether an interval between the probe's stats `a` and `b` did only
/// refresh work (counts that the skip can repeat).
bool Simulation::sameStatsShape(const Stats &a, const Stats &b) const {
  return a.rowHits == b.rowHits && a.rowMisses == b.rowMisses &&
         a.bytesRead == b.bytesRead && a.bytesWritten == b.bytesWritten &&
         a.bytesMac == b.bytesMac && a.bankBusyCycles == b.bankBusyCycles;
}

bool Simulation::repeatsProbe(int64_t now) const {
  if (probe.at != now - m.nREFI || probe.horizon < now ||
      !sameStatsShape(probe.stats, stats))
    return false;
  for (size_t c = 0; c < channels.size(); ++c)
    if (!sameTiming(probe.channels[c], channels[c], now))
      return false;
  return true;
}

/// Moves an idle channel's timers that can still matter at `now` by `by`.
void Simulation::shiftChannel(Channel &ch, int64_t now, int64_t by) const {
  for (unsigned l = 0; l < kNumLevels; ++l) {
    for (auto &node : ch.ready[l])
      for (int64_t &r : node)
        if (r >= now)
          r += by;
    for (int64_t &h : ch.history[l])
      if (h != kNoIssue && h >= now - m.maxCycles)
        h += by;
  }
  ch.nextRefresh += by;
  ch.nextEval += by;
}

/// Adds k more intervals like the one since the probe, `by` cycles long.
void Simulation::addIntervals(int64_t k, int64_t by) {
  for (unsigned c = 0; c < kNumCommands; ++c)
    stats.commandCounts[c] +=
        k * (stats.commandCounts[c] - probe.stats.commandCounts[c]);
  for (size_t i = 0; i < stats.channels.size(); ++i) {
    ChannelStats &cs = stats.channels[i];
    const ChannelStats &was = probe.stats.channels[i];
    if (cs.commands == was.commands)
      continue;
    cs.rowSlotBusy += k * (cs.rowSlotBusy - was.rowSlotBusy);
    cs.columnSlotBusy += k * (cs.columnSlotBusy - was.columnSlotBusy);
    cs.commands += k * (cs.commands - was.commands);
    cs.lastCycle += by;
  }
}

/// At a refresh boundary of an idle device: skips the whole intervals up to
/// the next arrival once the last one repeated the one before, else takes
/// a probe. Returns the cycle to continue at.
int64_t Simulation::skipIdleRefresh(int64_t now) {
  if (m.nREFI < 1 || !m.options.skipIdleRefresh ||
      (m.options.observer && m.options.observer->seesRefresh()))
    return now;
  int64_t horizon = idleHorizon(now);
  if (horizon == kNoIssue || horizon - now < m.nREFI)
    return now;
  if (repeatsProbe(now)) {
    int64_t k = (horizon - now) / m.nREFI;
    int64_t by = k * m.nREFI;
    addIntervals(k, by);
    for (Channel &ch : channels)
      shiftChannel(ch, now, by);
    probe.at = kNoIssue;
    return now + by;
  }
  probe.at = now;
  probe.horizon = horizon;
  probe.channels = channels;
  probe.stats = stats;
  return now;
}

/// Cycles, bank busy time and energy of the finished run; moves the
/// device's clock to the run's end.
void Simulation::finishStats() {
  int64_t last = kNoIssue;
  for (const Channel &ch : channels) {
    last = std::max(last, ch.lastPop);
    if (stats.channels[ch.id].commands > 0)
      last = std::max(last, stats.channels[ch.id].lastCycle);
  }
  int64_t end = std::max(start, last == kNoIssue ? 0 : last + 1);
  state.clock = end;
  stats.cycles = end - start;
  stats.seconds = static_cast<double>(stats.cycles) * t.tCKps * 1e-12;
  for (Channel &ch : channels)
    for (int64_t b = 0; b < m.banks; ++b)
      if (ch.openRow[b] >= 0)
        addBusy(ch, static_cast<unsigned>(b), end);

  const auto &n = stats.commandCounts;
  int64_t sameBanks = m.pchs * m.sids * m.bgs;
  double activations = double(n[idx(Command::ACT)]) +
                       double(n[idx(Command::ACTAB)]) * m.banks +
                       double(n[idx(Command::ACTSB)]) * sameBanks +
                       double(n[idx(Command::ACTPB)]) * m.pchs;
  double bankBytes =
      double(n[idx(Command::RD)] + n[idx(Command::WR)]) * t.org.accessBytes +
      double(stats.bytesMac) +
      double(n[idx(Command::EWMUL)]) * m.banks * t.org.accessBytes;
  const Energy &en = t.energy;
  stats.energyPj =
      activations * en.actPj + bankBytes * 8 * en.readPjPerBit +
      double(stats.bytesRead + stats.bytesWritten) * 8 * en.ioPjPerBit +
      double(stats.bytesMac) * en.macPjPerByte +
      double(n[idx(Command::REFab)]) * en.refreshPj;
}

/// Decodes and checks one request; errors name it by `what`.
Expected<Item> makeItem(const Engine::Impl &m, const Request &req,
                        const Twine &what) {
  if (!isValidRequestType(req.type))
    return makeError(what + ": invalid request type " +
                     Twine(static_cast<unsigned>(req.type)));
  if (req.arrival < 0 || req.arrival > kMaxArrivalCycle)
    return makeError(what + ": arrival cycle " + Twine(req.arrival) +
                     " is outside 0.." + Twine(kMaxArrivalCycle));
  const Target &t = m.target;
  const Organization &org = t.org;
  DecodedAddress a = decodeAddress(t, req.addr);
  uint64_t offsetMask = static_cast<uint64_t>(org.accessBytes) - 1;
  bool inRange = a.stack >= 0 && a.stack < org.stacks && a.channel >= 0 &&
                 a.channel < org.channels && a.pseudoChannel >= 0 &&
                 a.pseudoChannel < org.pseudoChannels && a.sid >= 0 &&
                 a.sid < org.sids && a.bankGroup >= 0 &&
                 a.bankGroup < org.bankGroups && a.bank >= 0 &&
                 a.bank < org.banks && a.row >= 0 && a.row < org.rows &&
                 a.column >= 0 && a.column < org.columns;
  // Bits above the mapped fields do not survive a decode/encode round trip.
  if (!inRange || encodeAddress(t, a) != (req.addr & ~offsetMask))
    return makeError(what + ": address " + formatv("{0:x}", req.addr).str() +
                     " is outside the device (" + t.name + ", " +
                     Twine(org.totalBytes()) + " bytes)");
  Item item;
  item.req = &req;
  item.addr = a;
  item.channel = static_cast<uint32_t>(a.stack * org.channels + a.channel);
  item.bank = m.flatBank(a);
  return item;
}

} // namespace

Engine::Engine(const Target &target, EngineOptions options)
    : impl(std::make_unique<Impl>(target, options)) {}

Engine::~Engine() = default;

Expected<Stats> Engine::runTrace(ArrayRef<Request> requests) {
  if (!impl->setupError.empty())
    return makeError(impl->setupError);
  std::vector<Feed> feeds(1);
  feeds[0].items.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    Expected<Item> item = makeItem(*impl, requests[i], "request " + Twine(i));
    if (!item)
      return item.takeError();
    feeds[0].items.push_back(*item);
  }
  DeviceState fresh;
  return Simulation(*impl, *fresh.impl).run(std::move(feeds), 0);
}

Expected<Stats> Engine::runStreams(ArrayRef<std::vector<Request>> streams) {
  DeviceState fresh;
  return runStreams(streams, fresh, 0);
}

Expected<Stats> Engine::runStreams(ArrayRef<std::vector<Request>> streams,
                                   DeviceState &state, int64_t start) {
  if (!impl->setupError.empty())
    return makeError(impl->setupError);
  int64_t numChannels = impl->target.org.totalChannels();
  if (static_cast<int64_t>(streams.size()) > numChannels)
    return makeError("pimsim: " + Twine(streams.size()) +
                     " channel streams for a device with " +
                     Twine(numChannels) + " channels");
  std::vector<Feed> feeds(streams.size());
  for (size_t c = 0; c < streams.size(); ++c) {
    feeds[c].items.reserve(streams[c].size());
    for (size_t i = 0; i < streams[c].size(); ++i) {
      std::string what = ("channel " + Twine(c) + " request " + Twine(i)).str();
      Expected<Item> item = makeItem(*impl, streams[c][i], what);
      if (!item)
        return item.takeError();
      if (item->channel != c)
        return makeError(what + ": address " +
                         formatv("{0:x}", streams[c][i].addr).str() +
                         " decodes to channel " + Twine(item->channel));
      feeds[c].items.push_back(*item);
    }
  }
  return Simulation(*impl, *state.impl).run(std::move(feeds), start);
}

DeviceState::DeviceState() : impl(std::make_unique<Impl>()) {}
DeviceState::~DeviceState() = default;
DeviceState::DeviceState(DeviceState &&) = default;
DeviceState &DeviceState::operator=(DeviceState &&) = default;
int64_t DeviceState::clock() const { return impl->clock; }

} // namespace pimsim
