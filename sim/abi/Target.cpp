//===- Target.cpp - PIM device description (targets/*.json) ---------------===//
//
// A target file is trusted by everything downstream: the engine indexes
// arrays with its counts and shifts addresses by its field widths, and the
// compiler tiles with them. So loading checks every key, type and range and
// names the offending JSON path; an unknown key is an error rather than
// silently ignored, because a misspelled timing would otherwise fall back to
// nothing at all. The schema is documented in docs/target-schema.md.
//
//===----------------------------------------------------------------------===//

#include "pimsim/Target.h"
#include "pimc/Support/JSON.h"
#include "pimc/Support/JSONFields.h"

#include "EnumNames.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"

#include <algorithm>
#include <tuple>

using namespace llvm;
using pimc::IntRange;
using pimc::jsonFieldPath;
using pimc::JSONFields;
using pimc::JSONFieldStyle;
using pimc::jsonIndexPath;
using pimc::jsonKindName;
using pimc::required;

namespace pimsim {

//===----------------------------------------------------------------------===//
// Name tables
//===----------------------------------------------------------------------===//

namespace {

constexpr StringLiteral kLevelNames[kNumLevels] = {"channel", "pseudo_channel",
                                                   "sid", "bank_group", "bank"};

constexpr unsigned kNumAddrFields = 8;
constexpr StringLiteral kAddrFieldNames[kNumAddrFields] = {
    "stack", "channel", "pseudo_channel", "sid", "bank_group",
    "bank",  "row",     "column"};

constexpr StringLiteral kCommandNames[kNumCommands] = {
    "ACT",   "PRE",   "PREA",  "PRESB", "PREPB", "RD",    "WR",    "REFab",
    "REFsb", "ACTAB", "ACTSB", "ACTPB", "MACAB", "MACSB", "MACPB", "WRGB",
    "MVSB",  "MVGB",  "SFM",   "RDACC", "EWMUL", "AF",    "SETM",  "SETH"};

} // namespace

StringRef levelName(Level level) { return detail::nameOf(kLevelNames, level); }

std::optional<Level> parseLevel(StringRef name) {
  return detail::parseName<Level>(kLevelNames, name);
}

StringRef addrFieldName(AddrField field) {
  return detail::nameOf(kAddrFieldNames, field);
}

std::optional<AddrField> parseAddrField(StringRef name) {
  return detail::parseName<AddrField>(kAddrFieldNames, name);
}

StringRef commandName(Command cmd) {
  return detail::nameOf(kCommandNames, cmd);
}

std::optional<Command> parseCommand(StringRef name) {
  return detail::parseName<Command>(kCommandNames, name);
}

bool isRowCommand(Command cmd) {
  switch (cmd) {
  case Command::ACT:
  case Command::PRE:
  case Command::PREA:
  case Command::PRESB:
  case Command::PREPB:
  case Command::REFab:
  case Command::REFsb:
  case Command::ACTAB:
  case Command::ACTSB:
  case Command::ACTPB:
    return true;
  default:
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Target queries
//===----------------------------------------------------------------------===//

const NearMemoryUnit *Target::nearMemoryUnit(StringRef name) const {
  auto it = llvm::find_if(
      nearMemory, [&](const NearMemoryUnit &u) { return u.name == name; });
  return it == nearMemory.end() ? nullptr : &*it;
}

Expected<int64_t> Target::timing(StringRef timingName) const {
  auto it = timings.find(timingName);
  if (it == timings.end())
    return createStringError(Twine("target '") + name + "': timing '" +
                             timingName + "' is not defined");
  return it->second;
}

double Target::externalPeakBytesPerSec() const {
  // Each pseudo-channel has its own data bus; one access per nBL cycles.
  auto it = timings.find("nBL");
  if (it == timings.end() || it->second <= 0 || tCKps <= 0)
    return 0;
  double seconds = static_cast<double>(it->second) * tCKps * 1e-12;
  return static_cast<double>(org.totalChannels() * org.pseudoChannels *
                             org.accessBytes) /
         seconds;
}

double Target::internalPeakBytesPerSec() const {
  // Every PIM unit reads one access per MACAB; MACABs are nCCDAB apart.
  auto it = timings.find("nCCDAB");
  if (it == timings.end() || it->second <= 0 || tCKps <= 0 ||
      pim.banksPerUnit <= 0)
    return 0;
  double seconds = static_cast<double>(it->second) * tCKps * 1e-12;
  int64_t unitsPerChannel = org.banksPerChannel() / pim.banksPerUnit;
  return static_cast<double>(org.totalChannels() * unitsPerChannel *
                             org.accessBytes) /
         seconds;
}

//===----------------------------------------------------------------------===//
// Address decoding
//===----------------------------------------------------------------------===//

namespace {

int64_t fieldCount(const Organization &org, AddrField field) {
  switch (field) {
  case AddrField::Stack:
    return org.stacks;
  case AddrField::Channel:
    return org.channels;
  case AddrField::PseudoChannel:
    return org.pseudoChannels;
  case AddrField::Sid:
    return org.sids;
  case AddrField::BankGroup:
    return org.bankGroups;
  case AddrField::Bank:
    return org.banks;
  case AddrField::Row:
    return org.rows;
  case AddrField::Column:
    return org.columns;
  }
  return 1;
}

/// Bits a field takes. Every field but the stack is a power of two (checked
/// at load); the stack is the most significant field, so a count that is not
/// a power of two just leaves some codes unused (callers range-check).
unsigned fieldBits(const Organization &org, AddrField field) {
  int64_t count = fieldCount(org, field);
  return count <= 1 ? 0 : Log2_64_Ceil(static_cast<uint64_t>(count));
}

unsigned offsetBits(const Organization &org) {
  return org.accessBytes <= 1
             ? 0
             : Log2_64_Ceil(static_cast<uint64_t>(org.accessBytes));
}

/// The member of a (const or mutable) decoded address that holds `field`.
template <typename Decoded> auto &fieldRef(Decoded &a, AddrField field) {
  switch (field) {
  case AddrField::Stack:
    return a.stack;
  case AddrField::Channel:
    return a.channel;
  case AddrField::PseudoChannel:
    return a.pseudoChannel;
  case AddrField::Sid:
    return a.sid;
  case AddrField::BankGroup:
    return a.bankGroup;
  case AddrField::Bank:
    return a.bank;
  case AddrField::Row:
    return a.row;
  case AddrField::Column:
    return a.column;
  }
  return a.column;
}

uint64_t lowMask(unsigned bits) {
  return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
}

} // namespace

DecodedAddress decodeAddress(const Target &target, uint64_t addr) {
  DecodedAddress out;
  const Organization &org = target.org;
  unsigned shift = offsetBits(org);
  uint64_t rest = shift >= 64 ? 0 : addr >> shift;
  for (AddrField field : llvm::reverse(target.mapping)) {
    unsigned bits = fieldBits(org, field);
    fieldRef(out, field) = static_cast<int64_t>(rest & lowMask(bits));
    rest = bits >= 64 ? 0 : rest >> bits;
  }
  return out;
}

uint64_t encodeAddress(const Target &target, const DecodedAddress &a) {
  const Organization &org = target.org;
  uint64_t addr = 0;
  for (AddrField field : target.mapping) {
    unsigned bits = fieldBits(org, field);
    uint64_t value = static_cast<uint64_t>(fieldRef(a, field));
    addr = (bits >= 64 ? 0 : addr << bits) | (value & lowMask(bits));
  }
  unsigned shift = offsetBits(org);
  return shift >= 64 ? 0 : addr << shift;
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

namespace {

constexpr int64_t kSchemaVersion = 1;

/// Timings the engine reads by name, whatever the constraint table says.
constexpr StringLiteral kEngineTimings[] = {"nBL",    "nCL", "nCWL", "nRCDRD",
                                            "nRCDWR", "nRP", "nRAS", "nRC",
                                            "nREFI",  "nRFC"};

/// Timings the engine divides by or uses as a period: must be at least 1.
constexpr StringLiteral kPositiveTimings[] = {"nBL", "nREFI", "nCCDAB"};

/// Keeps cycle arithmetic in the engine far from overflow.
constexpr int64_t kMaxTiming = int64_t(1) << 32;

/// Upper bound of any count without a tighter limit of its own.
constexpr int64_t kMaxCount = int64_t(1) << 24;

/// Organisation limits (docs/target-schema.md): host memory stays
/// proportional to a real device.
constexpr int64_t kMaxTotalChannels = 4096;   // stacks x channels
constexpr int64_t kMaxBanksPerChannel = 4096; // the engine's 16-bit banks
constexpr int64_t kMaxTotalBanks = 1 << 16;   // over the whole device
constexpr int64_t kMaxRowBytes = 1 << 20;     // columns x access_bytes

/// Real-valued fields are finite and at most this; strictly positive ones
/// at least kMinPositiveReal, so products and quotients stay finite.
constexpr double kMaxReal = 1e18;
constexpr double kMinPositiveReal = 1e-6;

constexpr StringLiteral kFormats[] = {"fp32", "fp16", "bf16", "int8", "int4"};
constexpr StringLiteral kInputFormats[] = {"fp16", "bf16"};
constexpr StringLiteral kAccumulateFormats[] = {"fp32", "fp16", "bf16"};
constexpr StringLiteral kActivationFunctions[] = {
    "gelu", "sigmoid", "tanh", "relu", "leaky_relu", "silu", "exp"};
constexpr StringLiteral kPlacements[] = {"buffer_die", "controller"};
/// Options of a near-memory unit's macro-op (2.2): "softcap" is `sfm cap=`,
/// "alibi" `sfm alibi=` (ALiBi biases).
constexpr StringLiteral kNearMemoryFeatures[] = {"softcap", "alibi"};

std::string joinNames(ArrayRef<StringLiteral> names) {
  std::string out;
  for (StringRef n : names) {
    if (!out.empty())
      out += ", ";
    out += n.str();
  }
  return out;
}

bool isIdentifier(StringRef s) {
  if (s.empty() || !(isAlpha(s.front()) || s.front() == '_'))
    return false;
  return llvm::all_of(s, [](char c) { return isAlnum(c) || c == '_'; });
}

/// A derived timing: expr := term (('+' | '-') term)*, term := integer |
/// timing | '(' expr ')'. Names refer to `timings` only, so there is no
/// evaluation order to get wrong and no cycle to detect.
class DerivedExpression {
public:
  DerivedExpression(StringRef text, const StringMap<int64_t> &timings)
      : text(text), timings(timings) {}

  Expected<int64_t> evaluate() {
    auto v = parseSum();
    if (!v)
      return v.takeError();
    skipSpace();
    if (pos != text.size())
      return syntaxError("expected '+', '-' or the end");
    return v;
  }

private:
  StringRef text;
  const StringMap<int64_t> &timings;
  size_t pos = 0;

  void skipSpace() {
    while (pos < text.size() && isSpace(text[pos]))
      ++pos;
  }
  Error syntaxError(const Twine &what) const {
    return createStringError("in '" + text + "' at column " + Twine(pos + 1) +
                             ": " + what);
  }

  Expected<int64_t> parseSum() {
    auto lhs = parseTerm();
    if (!lhs)
      return lhs.takeError();
    int64_t value = *lhs;
    for (;;) {
      skipSpace();
      if (pos >= text.size() || (text[pos] != '+' && text[pos] != '-'))
        return value;
      char op = text[pos++];
      auto rhs = parseTerm();
      if (!rhs)
        return rhs.takeError();
      value = op == '+' ? value + *rhs : value - *rhs;
    }
  }

  Expected<int64_t> parseTerm() {
    skipSpace();
    if (pos < text.size() && text[pos] == '(') {
      ++pos;
      auto v = parseSum();
      if (!v)
        return v.takeError();
      skipSpace();
      if (pos >= text.size() || text[pos] != ')')
        return syntaxError("expected ')'");
      ++pos;
      return v;
    }
    size_t start = pos;
    if (pos < text.size() && isDigit(text[pos])) {
      while (pos < text.size() && isDigit(text[pos]))
        ++pos;
      int64_t n;
      if (text.slice(start, pos).getAsInteger(10, n) || n > kMaxTiming)
        return syntaxError("integer too large");
      return n;
    }
    if (pos < text.size() && (isAlpha(text[pos]) || text[pos] == '_')) {
      while (pos < text.size() && (isAlnum(text[pos]) || text[pos] == '_'))
        ++pos;
      StringRef name = text.slice(start, pos);
      auto it = timings.find(name);
      if (it == timings.end())
        return createStringError("timing '" + name +
                                 "' is not defined in timings");
      return it->second;
    }
    return syntaxError("expected a timing name, an integer or '('");
  }
};

/// Reads one target file; every error is `<source>: <path>: <what>`.
class TargetReader {
public:
  explicit TargetReader(StringRef source) : source(source) {
    style.error = [source](StringRef path, const Twine &what) {
      return pathError(source, path, what);
    };
  }
  TargetReader(const TargetReader &) = delete; // readers point at `style`
  TargetReader &operator=(const TargetReader &) = delete;

  Expected<Target> read(StringRef text);

private:
  StringRef source;
  JSONFieldStyle style;
  Target target;

  static Error pathError(StringRef source, const Twine &path,
                         const Twine &what) {
    return createStringError(Twine(source) + ": " + path + ": " + what);
  }
  Error error(const Twine &path, const Twine &what) const {
    return pathError(source, path, what);
  }

  // --- target-specific field rules ----------------------------------------
  Expected<int64_t> positiveCount(const JSONFields &obj, StringRef k,
                                  bool isRequired, bool powerOfTwo,
                                  int64_t max = kMaxCount) const;
  Expected<double> nonNegative(const JSONFields &obj, StringRef k,
                               bool strictlyPositive) const;
  Expected<std::vector<std::string>> stringList(const json::Array &arr,
                                                StringRef path,
                                                ArrayRef<StringLiteral> allowed,
                                                StringRef what) const;

  // --- sections ------------------------------------------------------------
  Error readClock(const JSONFields &root);
  Error readOrganization(const JSONFields &root);
  Error readMapping(const JSONFields &root);
  Error readTimings(const JSONFields &root);
  Error readDerivedTimings(const JSONFields &root);
  Error readConstraints(const JSONFields &root,
                        std::vector<std::string> &minNames);
  Error checkOrganizationSize() const;
  Error checkEngineTimings() const;
  Error checkRefresh() const;
  Error resolveConstraintTimings(const std::vector<std::string> &minNames);
  Error readPimUnit(const JSONFields &root);
  Error readNearMemory(const JSONFields &root);
  Error readFeatures(const JSONFields &unit, NearMemoryUnit &out);
  Error readHost(const JSONFields &root);
  Error readEnergy(const JSONFields &root);
  Error readController(const JSONFields &root);
};

/// A count in [1, max]; 1 when absent and not required.
Expected<int64_t> TargetReader::positiveCount(const JSONFields &obj,
                                              StringRef k, bool isRequired,
                                              bool powerOfTwo,
                                              int64_t max) const {
  IntRange range{1, max};
  Expected<int64_t> n =
      isRequired ? obj.integer(k, required, range) : obj.integerOr(k, 1, range);
  if (!n)
    return n.takeError();
  if (powerOfTwo && !isPowerOf2_64(static_cast<uint64_t>(*n)))
    return obj.fieldError(k, formatv("must be a power of two, got {0}", *n));
  return *n;
}

Expected<double> TargetReader::nonNegative(const JSONFields &obj, StringRef k,
                                           bool strictlyPositive) const {
  Expected<double> v = obj.number(k, required);
  if (!v)
    return v.takeError();
  double d = *v;
  if (strictlyPositive ? !(d > 0) : !(d >= 0))
    return obj.fieldError(
        k, formatv("must be {0}, got {1}",
                   strictlyPositive ? "positive" : "non-negative", d));
  if (d > kMaxReal || (strictlyPositive && d < kMinPositiveReal))
    return obj.fieldError(k, formatv("{0:e} is outside [{1:e}, {2:e}]", d,
                                     strictlyPositive ? kMinPositiveReal : 0,
                                     kMaxReal));
  return d;
}

Expected<std::vector<std::string>>
TargetReader::stringList(const json::Array &arr, StringRef path,
                         ArrayRef<StringLiteral> allowed,
                         StringRef what) const {
  std::vector<std::string> out;
  for (size_t i = 0; i < arr.size(); ++i) {
    std::optional<StringRef> s = arr[i].getAsString();
    if (!s)
      return error(jsonIndexPath(path, i),
                   "expected a string, got " + jsonKindName(arr[i]));
    if (!allowed.empty() && !llvm::is_contained(allowed, *s))
      return error(jsonIndexPath(path, i),
                   "unknown " + what + " '" + *s +
                       "' (expected one of: " + joinNames(allowed) + ")");
    if (llvm::is_contained(out, s->str()))
      return error(jsonIndexPath(path, i), "'" + *s + "' listed twice");
    out.push_back(s->str());
  }
  return out;
}

Error TargetReader::readClock(const JSONFields &root) {
  auto clock = root.object("clock", required);
  if (!clock)
    return clock.takeError();
  if (Error e = clock->checkKeys({"tck_ps"}))
    return e;
  auto tck = nonNegative(*clock, "tck_ps", /*strictlyPositive=*/true);
  if (!tck)
    return tck.takeError();
  target.tCKps = *tck;
  return Error::success();
}

Error TargetReader::readOrganization(const JSONFields &root) {
  auto o = root.object("organization", required);
  if (!o)
    return o.takeError();
  if (Error e = o->checkKeys({"stacks", "channels", "pseudo_channels", "sids",
                              "bank_groups", "banks", "rows", "columns",
                              "access_bytes"}))
    return e;
  Organization &org = target.org;
  struct Count {
    StringLiteral name;
    int64_t *dest;
    bool required;
    bool powerOfTwo;
    int64_t max;
  } counts[] = {
      // The stack is the most significant address field, so any count works.
      {"stacks", &org.stacks, false, false, 64},
      {"channels", &org.channels, true, true, 256},
      {"pseudo_channels", &org.pseudoChannels, false, true, 16},
      {"sids", &org.sids, false, true, 16},
      {"bank_groups", &org.bankGroups, true, true, 64},
      {"banks", &org.banks, true, true, 64},
      {"rows", &org.rows, true, true, kMaxCount},
      {"columns", &org.columns, true, true, 1 << 16},
      {"access_bytes", &org.accessBytes, true, true, 4096},
  };
  for (const Count &c : counts) {
    auto n = positiveCount(*o, c.name, c.required, c.powerOfTwo, c.max);
    if (!n)
      return n.takeError();
    *c.dest = *n;
  }
  if (Error e = checkOrganizationSize())
    return e;
  unsigned bits = offsetBits(org);
  for (unsigned f = 0; f < kNumAddrFields; ++f)
    bits += fieldBits(org, static_cast<AddrField>(f));
  if (bits > 63)
    return o->error(formatv("a byte address needs {0} bits; at most 63 are "
                            "supported",
                            bits));
  return Error::success();
}

Error TargetReader::readMapping(const JSONFields &root) {
  auto arr = root.array("address_mapping", required);
  if (!arr)
    return arr.takeError();
  constexpr StringRef p = "address_mapping";
  auto names = stringList(**arr, p, ArrayRef(kAddrFieldNames), "field");
  if (!names)
    return names.takeError();
  bool wantStack = target.org.stacks > 1;
  for (size_t i = 0; i < names->size(); ++i) {
    AddrField f = *parseAddrField((*names)[i]);
    if (f == AddrField::Stack) {
      if (!wantStack)
        return error(jsonIndexPath(p, i),
                     "'stack' given but organization.stacks is 1");
      if (i != 0)
        return error(jsonIndexPath(p, i),
                     "'stack' must come first (most significant)");
    }
    target.mapping.push_back(f);
  }
  for (unsigned f = 0; f < kNumAddrFields; ++f) {
    auto field = static_cast<AddrField>(f);
    if (field == AddrField::Stack && !wantStack)
      continue;
    if (!llvm::is_contained(target.mapping, field))
      return error(p, "missing '" + addrFieldName(field) + "'" +
                          (field == AddrField::Stack
                               ? formatv(" (organization.stacks is {0})",
                                         target.org.stacks)
                                     .str()
                               : std::string()));
  }
  return Error::success();
}

Error TargetReader::readTimings(const JSONFields &root) {
  auto timings = root.object("timings", required);
  if (!timings)
    return timings.takeError();
  for (StringRef name : timings->keys()) { // sorted: deterministic errors
    std::string path = timings->pathOf(name);
    if (!isIdentifier(name))
      return error(path, "a timing name must be an identifier "
                         "([A-Za-z_][A-Za-z0-9_]*)");
    auto cycles = timings->integer(name, required);
    if (!cycles)
      return cycles.takeError();
    if (*cycles < 0 || *cycles > kMaxTiming)
      return error(path, formatv("must be between 0 and {0} cycles, got {1}",
                                 kMaxTiming, *cycles));
    target.timings[name] = *cycles;
  }
  return Error::success();
}

Error TargetReader::readDerivedTimings(const JSONFields &root) {
  auto obj = root.object("derived_timings");
  if (!obj)
    return obj.takeError();
  if (!*obj)
    return Error::success();
  const JSONFields &exprs = **obj;
  llvm::StringMap<int64_t> derived;
  for (StringRef name : exprs.keys()) {
    std::string path = exprs.pathOf(name);
    if (!isIdentifier(name))
      return error(path, "a timing name must be an identifier "
                         "([A-Za-z_][A-Za-z0-9_]*)");
    if (target.timings.count(name))
      return error(path, "already defined in timings");
    auto expr = exprs.string(name, required);
    if (!expr)
      return expr.takeError();
    auto v = DerivedExpression(*expr, target.timings).evaluate();
    if (!v)
      return error(path, toString(v.takeError()));
    if (*v < 0 || *v > kMaxTiming)
      return error(path, formatv("'{0}' evaluates to {1}; a timing must be "
                                 "between 0 and {2} cycles",
                                 *expr, *v, kMaxTiming));
    derived[name] = *v;
  }
  // Added only now so that derived timings cannot refer to each other.
  for (const auto &kv : derived)
    target.timings[kv.getKey()] = kv.getValue();
  return Error::success();
}

Error TargetReader::readConstraints(const JSONFields &root,
                                    std::vector<std::string> &minNames) {
  auto arr = root.array("constraints", required);
  if (!arr)
    return arr.takeError();
  StringSet<> seen;
  for (size_t i = 0; i < (*arr)->size(); ++i) {
    std::string p = jsonIndexPath("constraints", i);
    auto c = JSONFields::of((**arr)[i], p, style);
    if (!c)
      return c.takeError();
    if (Error e =
            c->checkKeys({"level", "from", "to", "min", "window", "note"}))
      return e;
    TimingConstraint tc;
    auto level = c->string("level", required);
    if (!level)
      return level.takeError();
    std::optional<Level> lv = parseLevel(*level);
    if (!lv)
      return c->fieldError(
          "level", "unknown level '" + *level +
                       "' (expected one of: " + joinNames(kLevelNames) + ")");
    tc.level = *lv;
    for (StringRef side : {"from", "to"}) {
      auto list = c->array(side, required);
      if (!list)
        return list.takeError();
      if ((*list)->empty())
        return c->fieldError(side, "must name at least one command");
      auto names = stringList(**list, c->pathOf(side), ArrayRef(kCommandNames),
                              "command");
      if (!names)
        return names.takeError();
      std::vector<Command> &cmds = side == "from" ? tc.from : tc.to;
      for (const std::string &n : *names)
        cmds.push_back(*parseCommand(n));
    }
    auto minName = c->value("min", required);
    if (!minName)
      return minName.takeError();
    std::optional<StringRef> m = (*minName)->getAsString();
    if (!m)
      return c->fieldError("min", "expected the name of a timing (a string), "
                                  "got " +
                                      jsonKindName(**minName));
    tc.param = m->str();
    auto window = c->integer("window");
    if (!window)
      return window.takeError();
    if (*window) {
      if (**window < 1 || **window > 64)
        return c->fieldError(
            "window", formatv("must be between 1 and 64, got {0}", **window));
      tc.window = static_cast<int>(**window);
    }
    auto note = c->string("note");
    if (!note)
      return note.takeError();

    // The same rule twice is a copy-paste slip, never intended.
    std::string signature =
        (levelName(tc.level) + "|" + tc.param + "|" + Twine(tc.window)).str();
    for (const std::vector<Command> *side : {&tc.from, &tc.to}) {
      SmallVector<unsigned> ids;
      for (Command cmd : *side)
        ids.push_back(static_cast<unsigned>(cmd));
      llvm::sort(ids);
      signature += "|";
      for (unsigned id : ids)
        signature += Twine(id).str() + ",";
    }
    if (!seen.insert(signature).second)
      return error(p, "duplicates an earlier constraint");

    minNames.push_back(tc.param);
    target.constraints.push_back(std::move(tc));
  }
  return Error::success();
}

/// Products of the organisation counts (each already bounded on its own).
Error TargetReader::checkOrganizationSize() const {
  const Organization &org = target.org;
  struct Product {
    StringLiteral what;
    int64_t value, max;
  } products[] = {
      {"stacks x channels", org.totalChannels(), kMaxTotalChannels},
      {"pseudo_channels x sids x bank_groups x banks", org.banksPerChannel(),
       kMaxBanksPerChannel},
      {"banks of the device", org.totalChannels() * org.banksPerChannel(),
       kMaxTotalBanks},
      {"columns x access_bytes", org.rowBytes(), kMaxRowBytes},
  };
  for (const Product &pr : products)
    if (pr.value > pr.max)
      return error("organization", formatv("{0} = {1} is above the limit {2}",
                                           pr.what, pr.value, pr.max));
  return Error::success();
}

/// All-bank refresh blocks a pseudo-channel for nRFC every nREFI cycles:
/// with nREFI <= nRFC refreshes queue up faster than they complete.
Error TargetReader::checkRefresh() const {
  int64_t refi = target.timings.lookup("nREFI");
  int64_t rfc = target.timings.lookup("nRFC");
  if (refi <= rfc)
    return error("timings.nREFI",
                 formatv("{0} must be greater than timings.nRFC ({1}): "
                         "refresh would never leave time for requests",
                         refi, rfc));
  return Error::success();
}

Error TargetReader::checkEngineTimings() const {
  for (StringRef name : kEngineTimings)
    if (!target.timings.count(name))
      return error(jsonFieldPath("timings", name), "missing");
  bool usesMacAB = llvm::any_of(target.constraints, [](const auto &c) {
    return llvm::is_contained(c.from, Command::MACAB) ||
           llvm::is_contained(c.to, Command::MACAB);
  });
  if (usesMacAB && !target.timings.count("nCCDAB"))
    return error("timings.nCCDAB",
                 "missing (required because a constraint mentions MACAB)");
  for (StringRef name : kPositiveTimings) {
    auto it = target.timings.find(name);
    if (it != target.timings.end() && it->second < 1)
      return error(jsonFieldPath("timings", name),
                   formatv("must be at least 1, got {0}", it->second));
  }
  return checkRefresh();
}

Error TargetReader::resolveConstraintTimings(
    const std::vector<std::string> &minNames) {
  for (size_t i = 0; i < minNames.size(); ++i) {
    auto it = target.timings.find(minNames[i]);
    if (it == target.timings.end())
      return error(jsonFieldPath(jsonIndexPath("constraints", i), "min"),
                   "timing '" + minNames[i] + "' is not defined in timings");
    target.constraints[i].cycles = it->second;
  }
  return Error::success();
}

Error TargetReader::readPimUnit(const JSONFields &root) {
  auto o = root.object("pim_unit", required);
  if (!o)
    return o.takeError();
  if (Error e = o->checkKeys({"banks_per_unit", "lanes", "input_format",
                              "accumulate_format", "native_formats",
                              "accumulators", "global_buffer_bytes",
                              "activation_functions", "reduction"}))
    return e;
  PimUnit &pim = target.pim;
  const Organization &org = target.org;

  auto banksPerUnit = positiveCount(*o, "banks_per_unit", true, true);
  if (!banksPerUnit)
    return banksPerUnit.takeError();
  if (*banksPerUnit > org.banksPerChannel())
    return o->fieldError("banks_per_unit",
                         formatv("{0} is more than the {1} banks of a channel",
                                 *banksPerUnit, org.banksPerChannel()));
  pim.banksPerUnit = *banksPerUnit;

  auto lanes = positiveCount(*o, "lanes", true, false, 4096);
  if (!lanes)
    return lanes.takeError();
  pim.lanes = *lanes;

  for (auto [k, allowed, dest] :
       {std::tuple(StringRef("input_format"), ArrayRef(kInputFormats),
                   &pim.inputFormat),
        std::tuple(StringRef("accumulate_format"), ArrayRef(kAccumulateFormats),
                   &pim.accumulateFormat)}) {
    auto s = o->string(k, required);
    if (!s)
      return s.takeError();
    if (!llvm::is_contained(allowed, *s))
      return o->fieldError(k, "unknown format '" + *s + "' (expected one of: " +
                                  joinNames(allowed) + ")");
    *dest = s->str();
  }
  // fp16 and bf16 are both 2 bytes: one column command feeds every lane.
  if (pim.lanes * 2 != org.accessBytes)
    return o->fieldError(
        "lanes",
        formatv("{0} lanes of {1} read {2} bytes per MAC, but one "
                "column access (organization.access_bytes) is {3}",
                pim.lanes, pim.inputFormat, pim.lanes * 2, org.accessBytes));

  {
    auto s = o->string("reduction", required);
    if (!s)
      return s.takeError();
    if (*s != "lanes" && *s != "tree")
      return o->fieldError("reduction", "unknown reduction '" + *s +
                                            "' (expected one of: lanes, tree)");
    pim.reduction = s->str();
  }

  auto native = o->array("native_formats", required);
  if (!native)
    return native.takeError();
  if ((*native)->empty())
    return o->fieldError("native_formats", "must name at least one format");
  auto formats =
      stringList(**native, o->pathOf("native_formats"), kFormats, "format");
  if (!formats)
    return formats.takeError();
  pim.nativeFormats = std::move(*formats);

  auto accumulators = positiveCount(*o, "accumulators", true, false, 1024);
  if (!accumulators)
    return accumulators.takeError();
  pim.accumulators = *accumulators;

  auto buffer =
      positiveCount(*o, "global_buffer_bytes", true, false, int64_t(1) << 24);
  if (!buffer)
    return buffer.takeError();
  if (*buffer % org.accessBytes != 0)
    return o->fieldError(
        "global_buffer_bytes",
        formatv("{0} is not a multiple of organization.access_bytes ({1})",
                *buffer, org.accessBytes));
  pim.globalBufferBytes = *buffer;

  auto afs = o->array("activation_functions");
  if (!afs)
    return afs.takeError();
  if (*afs) {
    auto names = stringList(**afs, o->pathOf("activation_functions"),
                            kActivationFunctions, "activation function");
    if (!names)
      return names.takeError();
    pim.activationFunctions = std::move(*names);
  }
  return Error::success();
}

Error TargetReader::readNearMemory(const JSONFields &root) {
  auto arr = root.array("near_memory");
  if (!arr)
    return arr.takeError();
  if (!*arr)
    return Error::success();
  for (size_t i = 0; i < (*arr)->size(); ++i) {
    auto u = JSONFields::of((**arr)[i], jsonIndexPath("near_memory", i), style);
    if (!u)
      return u.takeError();
    if (Error e = u->checkKeys({"name", "placement", "elements_per_cycle",
                                "latency_cycles", "functions", "features"}))
      return e;
    NearMemoryUnit unit;
    auto name = u->string("name", required);
    if (!name)
      return name.takeError();
    if (!isIdentifier(*name))
      return u->fieldError("name", "'" + *name + "' is not an identifier");
    if (llvm::any_of(target.nearMemory,
                     [&](const auto &n) { return n.name == *name; }))
      return u->fieldError("name", "'" + *name + "' listed twice");
    unit.name = name->str();
    auto placement = u->string("placement", required);
    if (!placement)
      return placement.takeError();
    if (!llvm::is_contained(kPlacements, *placement))
      return u->fieldError("placement", "unknown placement '" + *placement +
                                            "' (expected one of: " +
                                            joinNames(kPlacements) + ")");
    unit.placement = placement->str();
    auto rate = nonNegative(*u, "elements_per_cycle", true);
    if (!rate)
      return rate.takeError();
    unit.elementsPerCycle = *rate;
    auto latency = u->integer("latency_cycles", required, IntRange{0});
    if (!latency)
      return latency.takeError();
    unit.latencyCycles = *latency;
    auto fns = u->array("functions");
    if (!fns)
      return fns.takeError();
    if (*fns) {
      std::string path = u->pathOf("functions");
      auto names = stringList(**fns, path, {}, "function");
      if (!names)
        return names.takeError();
      for (size_t j = 0; j < names->size(); ++j)
        if ((*names)[j].empty())
          return error(jsonIndexPath(path, j), "empty function name");
      unit.functions = std::move(*names);
    }
    if (Error e = readFeatures(*u, unit))
      return e;
    target.nearMemory.push_back(std::move(unit));
  }
  return Error::success();
}

Error TargetReader::readFeatures(const JSONFields &u, NearMemoryUnit &unit) {
  auto arr = u.array("features");
  if (!arr)
    return arr.takeError();
  if (!*arr)
    return Error::success();
  auto names =
      stringList(**arr, u.pathOf("features"), kNearMemoryFeatures, "feature");
  if (!names)
    return names.takeError();
  // softcap and alibi are options of `sfm`, which only the softmax unit
  // runs.
  if (!names->empty() && unit.name != "softmax")
    return u.fieldError("features", "'" + names->front() +
                                        "' is a feature of the softmax unit "
                                        "(sfm), not of '" +
                                        unit.name + "'");
  unit.features = std::move(*names);
  return Error::success();
}

Error TargetReader::readHost(const JSONFields &root) {
  auto h = root.object("host", required);
  if (!h)
    return h.takeError();
  if (Error e = h->checkKeys(
          {"flops", "bandwidth_bytes_per_s", "link_bytes_per_s", "launch_ns"}))
    return e;
  HostModel &host = target.host;
  for (auto [k, dest, positive] :
       {std::tuple(StringRef("flops"), &host.flops, true),
        std::tuple(StringRef("bandwidth_bytes_per_s"), &host.bandwidthBytes,
                   true),
        std::tuple(StringRef("link_bytes_per_s"), &host.linkBytes, true),
        std::tuple(StringRef("launch_ns"), &host.launchNs, false)}) {
    auto v = nonNegative(*h, k, positive);
    if (!v)
      return v.takeError();
    *dest = *v;
  }
  return Error::success();
}

Error TargetReader::readEnergy(const JSONFields &root) {
  auto obj = root.object("energy", required);
  if (!obj)
    return obj.takeError();
  if (Error e = obj->checkKeys({"act_pj", "read_pj_per_bit", "io_pj_per_bit",
                                "mac_pj_per_byte", "refresh_pj"}))
    return e;
  Energy &en = target.energy;
  for (auto [k, dest] :
       {std::pair(StringRef("act_pj"), &en.actPj),
        std::pair(StringRef("read_pj_per_bit"), &en.readPjPerBit),
        std::pair(StringRef("io_pj_per_bit"), &en.ioPjPerBit),
        std::pair(StringRef("mac_pj_per_byte"), &en.macPjPerByte),
        std::pair(StringRef("refresh_pj"), &en.refreshPj)}) {
    auto v = nonNegative(*obj, k, /*strictlyPositive=*/false);
    if (!v)
      return v.takeError();
    *dest = *v;
  }
  return Error::success();
}

Error TargetReader::readController(const JSONFields &root) {
  auto obj = root.object("controller", required);
  if (!obj)
    return obj.takeError();
  if (Error e = obj->checkKeys({"queue_depth"}))
    return e;
  auto depth = positiveCount(*obj, "queue_depth", true, false, 4096);
  if (!depth)
    return depth.takeError();
  target.queueDepth = *depth;
  return Error::success();
}

Expected<Target> TargetReader::read(StringRef text) {
  Expected<json::Value> parsed = pimc::parseJSON(text);
  if (!parsed) {
    // Turn "[line:col, byte=N]: msg" into the usual file:line:col form.
    std::string msg = toString(parsed.takeError());
    SmallVector<StringRef> m;
    if (Regex(R"(^\[([0-9]+):([0-9]+), byte=[0-9]+\]: (.*)$)").match(msg, &m))
      return createStringError(Twine(source) + ":" + m[1] + ":" + m[2] +
                               ": invalid JSON: " + m[3]);
    return createStringError(Twine(source) + ": invalid JSON: " + msg);
  }
  const json::Object *rootObj = parsed->getAsObject();
  if (!rootObj)
    return createStringError(Twine(source) +
                             ": expected a JSON object at the top level, got " +
                             jsonKindName(*parsed));
  JSONFields root(*rootObj, "", style);

  // The version first: a newer file may have any shape.
  auto version = root.integer("schema_version", required);
  if (!version)
    return version.takeError();
  if (*version != kSchemaVersion)
    return root.fieldError(
        "schema_version",
        formatv("got {0}, this pimsim reads {1}", *version, kSchemaVersion));
  if (Error e = root.checkKeys(
          {"schema_version", "name", "description", "clock", "organization",
           "address_mapping", "timings", "derived_timings", "constraints",
           "pim_unit", "near_memory", "host", "energy", "controller"}))
    return e;

  auto name = root.string("name", required);
  if (!name)
    return name.takeError();
  if (name->empty())
    return root.fieldError("name", "must not be empty");
  target.name = name->str();
  auto description = root.string("description");
  if (!description)
    return description.takeError();
  if (*description)
    target.description = (*description)->str();

  std::vector<std::string> minNames;
  if (Error e = readClock(root))
    return e;
  if (Error e = readOrganization(root))
    return e;
  if (Error e = readMapping(root))
    return e;
  if (Error e = readTimings(root))
    return e;
  if (Error e = readDerivedTimings(root))
    return e;
  if (Error e = readConstraints(root, minNames))
    return e;
  // Missing engine timings are reported before dangling constraint names so
  // that a target without nCCDAB says so instead of pointing at a MACAB rule.
  if (Error e = checkEngineTimings())
    return e;
  if (Error e = resolveConstraintTimings(minNames))
    return e;
  if (Error e = readPimUnit(root))
    return e;
  if (Error e = readNearMemory(root))
    return e;
  if (Error e = readHost(root))
    return e;
  if (Error e = readEnergy(root))
    return e;
  if (Error e = readController(root))
    return e;
  return std::move(target);
}

} // namespace

Expected<Target> parseTarget(StringRef jsonText, StringRef sourceName) {
  return TargetReader(sourceName).read(jsonText);
}

Expected<Target> loadTarget(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return createStringError(Twine(path) + ": cannot read target file: " +
                             buffer.getError().message());
  return parseTarget((*buffer)->getBuffer(), path);
}

} // namespace pimsim
