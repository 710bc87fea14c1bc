//===- Program.cpp - pimsim programs: ISA tables, parameters, checks ------===//
//
// The in-memory program: the ISA tables, instructions, parameters and the two
// checks, checkProgram (structure, no target) and validateProgram (against a
// target's organisation). The flatbuffers form is ProgramBinary.cpp's, the
// text form ProgramText.cpp's.
//
//===----------------------------------------------------------------------===//

#include "pimsim/Program.h"

#include "EnumNames.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/SHA256.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

using namespace llvm;

namespace pimsim {

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

namespace {
using detail::nameOf;
using detail::parseName;

const StringRef kRegionKindNames[] = {"weights", "kv_cache", "activations",
                                      "scratch"};
const StringRef kInterleaveNames[] = {"channel", "bank"};
const StringRef kKernelKindNames[] = {
    "gemm",     "gemv",       "softmax",     "rmsnorm",   "layernorm",
    "rope",     "activation", "elementwise", "embedding", "attention",
    "sampling", "copy",       "reduce",      "other"};
const StringRef kOpcodeNames[] = {
    "mac_ab",    "mac_sb",   "mac_pb",  "wr_gb",      "wr_bias",
    "wr_ab",     "rd_acc",   "rd_af",   "copy_bk_gb", "copy_gb_bk",
    "mv_sb",     "mv_gb",    "sfm",     "ew_mul",     "ew_add",
    "af",        "ld",       "st",      "barrier",    "sync",
    "set_model", "set_head", "set_cfr", "call",       "loop"};
const StringRef kFunctionNames[] = {"softmax", "exp",     "relu", "gelu",
                                    "silu",    "sigmoid", "tanh", "leaky_relu"};
const StringRef kFieldNames[] = {
    "channels", "row",    "col",  "count", "bank",       "offset", "src",
    "bytes",    "length", "fn",   "reg",   "value",      "data",   "kernel",
    "cap",      "alibi",  "head", "key0",  "alibi_scale"};
static_assert(std::size(kKernelKindNames) == kNumKernelKinds);
static_assert(std::size(kOpcodeNames) == kNumOpcodes);
static_assert(std::size(kFunctionNames) == kNumFunctions);
static_assert(std::size(kFieldNames) == kNumFields);
} // namespace

StringRef regionKindName(RegionKind kind) {
  return nameOf(kRegionKindNames, kind);
}
std::optional<RegionKind> parseRegionKind(StringRef name) {
  return parseName<RegionKind>(kRegionKindNames, name);
}
StringRef interleaveName(Interleave interleave) {
  return nameOf(kInterleaveNames, interleave);
}
std::optional<Interleave> parseInterleave(StringRef name) {
  return parseName<Interleave>(kInterleaveNames, name);
}
StringRef kernelKindName(KernelKind kind) {
  return nameOf(kKernelKindNames, kind);
}
std::optional<KernelKind> parseKernelKind(StringRef name) {
  return parseName<KernelKind>(kKernelKindNames, name);
}
StringRef opcodeName(Opcode op) { return nameOf(kOpcodeNames, op); }
std::optional<Opcode> parseOpcode(StringRef mnemonic) {
  return parseName<Opcode>(kOpcodeNames, mnemonic);
}
StringRef functionName(Function fn) { return nameOf(kFunctionNames, fn); }
std::optional<Function> parseFunction(StringRef name) {
  return parseName<Function>(kFunctionNames, name);
}
StringRef fieldName(Field field) { return nameOf(kFieldNames, field); }
std::optional<Field> parseField(StringRef name) {
  return parseName<Field>(kFieldNames, name);
}

bool isStridable(Field field) {
  switch (field) {
  case Field::Row:
  case Field::Col:
  case Field::Bank:
  case Field::Offset:
  case Field::Src:
  case Field::Reg:
  case Field::Value:
  case Field::Data:
  case Field::Head:
  case Field::Key0:
    return true;
  default:
    return false;
  }
}

bool isParamStridable(Field field) {
  return isStridable(field) || field == Field::Count ||
         field == Field::Length || field == Field::Bytes;
}

//===----------------------------------------------------------------------===//
// Operands of each op
//===----------------------------------------------------------------------===//

namespace {
using F = Field;
constexpr OperandSpec R(Field f) { return {f, true}; }
constexpr OperandSpec O(Field f) { return {f, false}; }

// Channels is optional on every op but call (a call is a rendezvous of the
// whole stream, so it cannot be narrowed).
// Offset of a MAC (1.1) is the byte base of its global-buffer input.
// Reg of a MAC, rd_acc and mv_sb (1.3) is the accumulator register of each
// PIM unit it uses (0 .. pim_unit.accumulators - 1).
const OperandSpec kMacAB[] = {R(F::Row),    R(F::Col), R(F::Count),
                              O(F::Offset), O(F::Reg), O(F::Channels)};
const OperandSpec kMacBank[] = {R(F::Bank),    R(F::Row),    R(F::Col),
                                R(F::Count),   O(F::Offset), O(F::Reg),
                                O(F::Channels)};
// Bank and row of wr_gb / mv_sb / mv_gb only place the request on a bank
// path (bus timing, AttAcc's address fields); no bank state is involved.
const OperandSpec kWrGB[] = {R(F::Offset), R(F::Bytes), O(F::Bank),
                             O(F::Row),    O(F::Data),  O(F::Channels)};
const OperandSpec kBursts[] = {O(F::Count), O(F::Data), O(F::Channels)};
const OperandSpec kRdAcc[] = {O(F::Count), O(F::Data), O(F::Reg),
                              O(F::Channels)};
const OperandSpec kWrAB[] = {R(F::Row), R(F::Col), R(F::Count), O(F::Data),
                             O(F::Channels)};
const OperandSpec kCopy[] = {R(F::Bank),  R(F::Row),    R(F::Col),
                             R(F::Count), O(F::Offset), O(F::Channels)};
const OperandSpec kMove[] = {O(F::Bank), O(F::Row), O(F::Count),
                             O(F::Channels)};
const OperandSpec kMvSB[] = {O(F::Bank), O(F::Row), O(F::Count), O(F::Reg),
                             O(F::Channels)};
// Data of an sfm (1.4): where fn=softmax writes its statistics [max, sum]
// (two fp32, 8 bytes).
const OperandSpec kSfm[] = {R(F::Length), O(F::Fn),         O(F::Data),
                            O(F::Cap),    O(F::Alibi),      O(F::Head),
                            O(F::Key0),   O(F::AlibiScale), O(F::Channels)};
const OperandSpec kEwMul[] = {R(F::Row), R(F::Col), R(F::Count),
                              O(F::Channels)};
const OperandSpec kEwAdd[] = {R(F::Offset), R(F::Src), R(F::Count),
                              O(F::Channels)};
const OperandSpec kAf[] = {R(F::Fn), O(F::Count), O(F::Channels)};
const OperandSpec kLdSt[] = {R(F::Bank),  R(F::Row),  R(F::Col),
                             R(F::Count), O(F::Data), O(F::Channels)};
const OperandSpec kNone[] = {O(F::Channels)};
const OperandSpec kSetValue[] = {O(F::Value), O(F::Channels)};
const OperandSpec kSetCfr[] = {R(F::Reg), R(F::Value), O(F::Channels)};
const OperandSpec kCall[] = {R(F::Kernel)};
const OperandSpec kLoop[] = {R(F::Count), O(F::Channels)};
} // namespace

ArrayRef<OperandSpec> opcodeOperands(Opcode op) {
  switch (op) {
  case Opcode::MacAB:
    return kMacAB;
  case Opcode::MacSB:
  case Opcode::MacPB:
    return kMacBank;
  case Opcode::WrGB:
    return kWrGB;
  case Opcode::RdAcc:
    return kRdAcc;
  case Opcode::WrBias:
  case Opcode::RdAf:
    return kBursts;
  case Opcode::WrAB:
    return kWrAB;
  case Opcode::CopyBkGb:
  case Opcode::CopyGbBk:
    return kCopy;
  case Opcode::MvSB:
    return kMvSB;
  case Opcode::MvGB:
    return kMove;
  case Opcode::Sfm:
    return kSfm;
  case Opcode::EwMul:
    return kEwMul;
  case Opcode::EwAdd:
    return kEwAdd;
  case Opcode::Af:
    return kAf;
  case Opcode::Ld:
  case Opcode::St:
    return kLdSt;
  case Opcode::Barrier:
  case Opcode::Sync:
    return kNone;
  case Opcode::SetModel:
  case Opcode::SetHead:
    return kSetValue;
  case Opcode::SetCfr:
    return kSetCfr;
  case Opcode::Call:
    return kCall;
  case Opcode::Loop:
    return kLoop;
  }
  return {};
}

bool opcodeHasField(Opcode op, Field field) {
  return any_of(opcodeOperands(op),
                [&](const OperandSpec &s) { return s.field == field; });
}

bool isStridable(Opcode op, Field field) {
  return isStridable(field) && opcodeHasField(op, field) &&
         !(op == Opcode::SetCfr && field == Field::Reg);
}

bool isParamStridable(Opcode op, Field field) {
  return isParamStridable(field) && opcodeHasField(op, field) &&
         !(op == Opcode::SetCfr && field == Field::Reg);
}

//===----------------------------------------------------------------------===//
// Instruction
//===----------------------------------------------------------------------===//

int64_t Instruction::get(Field field) const {
  switch (field) {
  case Field::Channels:
    return 0;
  case Field::Row:
    return row;
  case Field::Col:
    return col;
  case Field::Count:
    return count;
  case Field::Bank:
    return bank;
  case Field::Offset:
    return offset;
  case Field::Src:
    return src;
  case Field::Bytes:
    return bytes;
  case Field::Length:
    return length;
  case Field::Fn:
    return static_cast<int64_t>(fn);
  case Field::Reg:
    return reg;
  case Field::Value:
    return value;
  case Field::Data:
    return dataOffset;
  case Field::Kernel:
    return kernel;
  case Field::Cap:
  case Field::Alibi:
  case Field::AlibiScale:
    return 0;
  case Field::Head:
    return head;
  case Field::Key0:
    return key0;
  }
  return 0;
}

void Instruction::set(Field field, int64_t v) {
  switch (field) {
  case Field::Channels:
    break;
  case Field::Row:
    row = v;
    break;
  case Field::Col:
    col = v;
    break;
  case Field::Count:
    count = v;
    break;
  case Field::Bank:
    bank = v;
    break;
  case Field::Offset:
    offset = v;
    break;
  case Field::Src:
    src = v;
    break;
  case Field::Bytes:
    bytes = v;
    break;
  case Field::Length:
    length = v;
    break;
  case Field::Fn:
    fn = static_cast<Function>(v);
    break;
  case Field::Reg:
    reg = v;
    break;
  case Field::Value:
    value = v;
    break;
  case Field::Data:
    dataOffset = v;
    break;
  case Field::Kernel:
    kernel = v;
    break;
  case Field::Cap:
  case Field::Alibi:
  case Field::AlibiScale:
    break;
  case Field::Head:
    head = v;
    break;
  case Field::Key0:
    key0 = v;
    break;
  }
}

int64_t Instruction::at(Field field, ArrayRef<int64_t> loopIndices,
                        int64_t channelIndex, ArrayRef<int64_t> params) const {
  int64_t v = get(field);
  for (const Stride &s : strides) {
    if (s.field != field)
      continue;
    if (s.loop == kChannelIndex)
      v += s.step * channelIndex;
    else if (isParamStride(s.loop)) {
      if (s.loop - kParamBase < params.size())
        v += s.step * params[s.loop - kParamBase];
    } else if (s.loop < loopIndices.size())
      v += s.step * loopIndices[s.loop];
  }
  return v;
}

Instruction &Instruction::addStride(Field field, unsigned loop, int64_t step) {
  auto key = [](const Stride &s) {
    return std::make_pair(static_cast<unsigned>(s.field), s.loop);
  };
  Stride add{field, loop, step};
  auto it = std::lower_bound(
      strides.begin(), strides.end(), add,
      [&](const Stride &a, const Stride &b) { return key(a) < key(b); });
  if (it != strides.end() && key(*it) == key(add)) {
    it->step += step;
    if (it->step == 0)
      strides.erase(it);
  } else if (step != 0) {
    strides.insert(it, add);
  }
  return *this;
}

Instruction Instruction::make(Opcode op) {
  Instruction inst;
  inst.op = op;
  return inst;
}
Instruction Instruction::macAB(int64_t row, int64_t col, int64_t count) {
  Instruction inst = make(Opcode::MacAB);
  inst.row = row;
  inst.col = col;
  inst.count = count;
  return inst;
}
static Instruction bankOp(Opcode op, int64_t bank, int64_t row, int64_t col,
                          int64_t count) {
  Instruction inst = Instruction::make(op);
  inst.bank = bank;
  inst.row = row;
  inst.col = col;
  inst.count = count;
  return inst;
}
Instruction Instruction::macSB(int64_t bank, int64_t row, int64_t col,
                               int64_t count) {
  return bankOp(Opcode::MacSB, bank, row, col, count);
}
Instruction Instruction::macPB(int64_t bank, int64_t row, int64_t col,
                               int64_t count) {
  return bankOp(Opcode::MacPB, bank, row, col, count);
}
Instruction Instruction::load(int64_t bank, int64_t row, int64_t col,
                              int64_t count) {
  return bankOp(Opcode::Ld, bank, row, col, count);
}
Instruction Instruction::store(int64_t bank, int64_t row, int64_t col,
                               int64_t count) {
  return bankOp(Opcode::St, bank, row, col, count);
}
Instruction Instruction::wrGB(int64_t offset, int64_t bytes) {
  Instruction inst = make(Opcode::WrGB);
  inst.offset = offset;
  inst.bytes = bytes;
  return inst;
}
Instruction Instruction::mvSB(int64_t bank, int64_t count) {
  Instruction inst = make(Opcode::MvSB);
  inst.bank = bank;
  inst.count = count;
  return inst;
}
Instruction Instruction::mvGB(int64_t bank, int64_t count) {
  Instruction inst = make(Opcode::MvGB);
  inst.bank = bank;
  inst.count = count;
  return inst;
}
Instruction Instruction::sfm(int64_t length, Function fn, float cap) {
  Instruction inst = make(Opcode::Sfm);
  inst.length = length;
  inst.fn = fn;
  inst.cap = cap;
  return inst;
}
Instruction Instruction::rdAcc(int64_t count) {
  Instruction inst = make(Opcode::RdAcc);
  inst.count = count;
  return inst;
}
Instruction Instruction::af(Function fn, int64_t count) {
  Instruction inst = make(Opcode::Af);
  inst.fn = fn;
  inst.count = count;
  return inst;
}
Instruction Instruction::barrier() { return make(Opcode::Barrier); }
Instruction Instruction::call(int64_t kernel) {
  Instruction inst = make(Opcode::Call);
  inst.kernel = kernel;
  return inst;
}
Instruction Instruction::loop(int64_t count, std::vector<Instruction> body) {
  Instruction inst = make(Opcode::Loop);
  inst.count = count;
  inst.body = std::move(body);
  return inst;
}

bool Instruction::operator==(const Instruction &o) const {
  return op == o.op && channels == o.channels && row == o.row && col == o.col &&
         count == o.count && bank == o.bank && offset == o.offset &&
         src == o.src && bytes == o.bytes && length == o.length && fn == o.fn &&
         reg == o.reg && value == o.value && dataRegion == o.dataRegion &&
         dataOffset == o.dataOffset && kernel == o.kernel && cap == o.cap &&
         alibi == o.alibi && head == o.head && key0 == o.key0 &&
         alibiScale == o.alibiScale && strides == o.strides && body == o.body;
}

//===----------------------------------------------------------------------===//
// Program equality, channel sets, target hash
//===----------------------------------------------------------------------===//

namespace {
auto orgTuple(const Organization &o) {
  return std::make_tuple(o.stacks, o.channels, o.pseudoChannels, o.sids,
                         o.bankGroups, o.banks, o.rows, o.columns,
                         o.accessBytes);
}
} // namespace

bool TargetIdentity::operator==(const TargetIdentity &b) const {
  return name == b.name && hash == b.hash && orgTuple(org) == orgTuple(b.org);
}
bool Region::operator==(const Region &b) const {
  return name == b.name && kind == b.kind && channels == b.channels &&
         banks == b.banks && rows == b.rows && bytes == b.bytes;
}
std::vector<std::string> gemvRowsProblems(const GemvRows &g) {
  std::vector<std::string> out;
  for (auto [key, value, min] :
       {std::tuple<StringRef, int64_t, int64_t>{"n0", g.n0, 0},
        {"ch0", g.ch0, 0},
        {"nch", g.nch, 1},
        {"row0", g.row0, 0},
        {"k_rows", g.kRows, 1},
        {"k0", g.k0, 0},
        {"k_len", g.kLen, 1}})
    if (value < min)
      out.push_back(
          (key + " is " + Twine(value) + ", must be at least " + Twine(min))
              .str());
  switch (g.source) {
  case GemvRows::Source::Dense:
    if (g.bits != 0 || g.groupSize != 0 || g.sym || !g.packing.empty() ||
        !g.scaleType.empty())
      out.push_back("a dense source has no bits, group_size, sym, packing or "
                    "scale_type");
    return out;
  case GemvRows::Source::Gptq:
    if (g.bits != 4 && g.bits != 8)
      out.push_back(("bits is " + Twine(g.bits) + ", expected 4 or 8").str());
    if (g.groupSize < 1 && g.groupSize != -1)
      out.push_back(("group_size is " + Twine(g.groupSize) +
                     ", expected >= 1 or -1 (one group over K)")
                        .str());
    if (g.packing != "gptq" && g.packing != "gptq_v2")
      out.push_back("packing '" + g.packing + "' is not gptq or gptq_v2");
    if (!g.scaleType.empty() && g.scaleType != "f16" && g.scaleType != "bf16" &&
        g.scaleType != "f32")
      out.push_back("scale_type '" + g.scaleType + "' is not f16, bf16 or f32");
    return out;
  }
  out.push_back(("unknown source " + Twine(static_cast<int>(g.source))).str());
  return out;
}

bool WeightBinding::operator==(const WeightBinding &b) const {
  return tensor == b.tensor && region == b.region && format == b.format &&
         shape == b.shape && axis == b.axis && tile == b.tile &&
         interleave == b.interleave && rows == b.rows && offset == b.offset &&
         bytes == b.bytes && layout == b.layout && gemvRows == b.gemvRows;
}
bool KernelOperand::operator==(const KernelOperand &b) const {
  return role == b.role && region == b.region && offset == b.offset &&
         bytes == b.bytes;
}
bool HostKernel::operator==(const HostKernel &b) const {
  return name == b.name && kind == b.kind && m == b.m && n == b.n && k == b.k &&
         flops == b.flops && bytes == b.bytes && operands == b.operands &&
         unit == b.unit && elements == b.elements && ops == b.ops &&
         sets == b.sets;
}
bool Stream::operator==(const Stream &b) const {
  return name == b.name && channels == b.channels && body == b.body &&
         info == b.info;
}
bool Entry::operator==(const Entry &b) const {
  return name == b.name && steps == b.steps;
}

bool Program::operator==(const Program &o) const {
  return version.major == o.version.major && version.minor == o.version.minor &&
         target == o.target && regions == o.regions && weights == o.weights &&
         kernels == o.kernels && streams == o.streams && entries == o.entries &&
         params == o.params && model == o.model &&
         hostTensors == o.hostTensors && memory == o.memory;
}

int64_t Program::hostTensorIndex(StringRef name) const {
  for (size_t i = 0; i < hostTensors.size(); ++i)
    if (hostTensors[i].name == name)
      return static_cast<int64_t>(i);
  return -1;
}

int64_t Program::paramIndex(StringRef name) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].name == name)
      return static_cast<int64_t>(i);
  return -1;
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

namespace {
int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t saturatingAddParam(int64_t a, int64_t b) {
  int64_t sum = 0;
  return AddOverflow(a, b, sum) ? (b > 0 ? INT64_MAX : INT64_MIN) : sum;
}
/// Derived parameter `p` from the value of its source.
int64_t derivedValue(const Param &p, int64_t src) {
  int64_t v = floorDiv(saturatingAddParam(src, p.add), p.div);
  if (p.mod > 0) {
    v %= p.mod;
    if (v < 0)
      v += p.mod;
  }
  return std::clamp(v, p.min, std::max(p.min, p.max));
}
} // namespace

Expected<std::vector<int64_t>>
resolveParams(const Program &program,
              const std::map<std::string, int64_t> &inputs) {
  for (const auto &[name, value] : inputs) {
    int64_t i = program.paramIndex(name);
    if (i < 0)
      return createStringError(inconvertibleErrorCode(),
                               "program has no parameter '%s'", name.c_str());
    if (program.params[i].device)
      return createStringError(
          inconvertibleErrorCode(),
          "parameter '%s' is set by the device during the run, not an input",
          name.c_str());
    if (!program.params[i].isInput())
      return createStringError(
          inconvertibleErrorCode(),
          "parameter '%s' is derived from '%s', not an input", name.c_str(),
          program.params[program.params[i].src].name.c_str());
  }
  std::vector<int64_t> values;
  values.reserve(program.params.size());
  for (const Param &p : program.params) {
    int64_t v = 0;
    if (p.device) {
      v = p.timing;
    } else if (p.isInput()) {
      auto it = inputs.find(p.name);
      if (it == inputs.end())
        return createStringError(inconvertibleErrorCode(),
                                 "entry needs parameter '%s'", p.name.c_str());
      v = it->second;
      if (v < p.min || v > p.max)
        return createStringError(
            inconvertibleErrorCode(),
            "parameter '%s' = %lld is out of range [%lld, %lld]",
            p.name.c_str(), static_cast<long long>(v),
            static_cast<long long>(p.min), static_cast<long long>(p.max));
    } else {
      if (p.src < 0 || p.src >= static_cast<int64_t>(values.size()) ||
          p.div < 1)
        return createStringError(inconvertibleErrorCode(),
                                 "parameter '%s' is malformed", p.name.c_str());
      v = derivedValue(p, values[p.src]);
    }
    values.push_back(v);
  }
  return values;
}

void updateDerivedParams(const Program &program, std::vector<int64_t> &values) {
  for (auto [i, p] : llvm::enumerate(program.params))
    if (!p.device && !p.isInput() && p.src >= 0 &&
        p.src < static_cast<int64_t>(i) && i < values.size())
      values[i] = derivedValue(p, values[p.src]);
}

DecodedAddress bankAddress(const Organization &org, int64_t channel,
                           int64_t bank, int64_t row, int64_t col) {
  DecodedAddress a;
  int64_t perStack = std::max<int64_t>(org.channels, 1);
  a.stack = channel / perStack;
  a.channel = channel % perStack;
  // Flat bank index: pseudo-channel, SID, bank group, bank (slowest first).
  a.bank = bank % org.banks;
  bank /= org.banks;
  a.bankGroup = bank % org.bankGroups;
  bank /= org.bankGroups;
  a.sid = bank % org.sids;
  a.pseudoChannel = bank / org.sids;
  a.row = row;
  a.column = col;
  return a;
}

bool channelSetContains(const ChannelSet &set, int64_t channel) {
  return any_of(set, [&](const Range &r) { return r.contains(channel); });
}

std::string targetContentHash(StringRef fileBytes) {
  auto digest = SHA256::hash(arrayRefFromStringRef(fileBytes));
  return "sha256:" + toHex(digest, /*LowerCase=*/true);
}

//===----------------------------------------------------------------------===//
// Diagnostics shared by the checks
//===----------------------------------------------------------------------===//

namespace {
/// Collects messages so one run reports every problem (up to a cap).
class Problems {
public:
  void add(const Twine &msg) {
    if (messages.size() < kMax)
      messages.push_back(msg.str());
    ++total;
  }
  bool empty() const { return total == 0; }
  Error take() {
    if (total == 0)
      return Error::success();
    std::string text = join(messages, "\n");
    if (total > messages.size())
      text +=
          "\n(" + std::to_string(total - messages.size()) + " more problems)";
    return createStringError(inconvertibleErrorCode(), text);
  }

private:
  static constexpr size_t kMax = 20;
  std::vector<std::string> messages;
  size_t total = 0;
};

/// Names the program may print bare: they are the text form's references.
bool isIdentifier(StringRef s) {
  if (s.empty() || !(isAlpha(s[0]) || s[0] == '_'))
    return false;
  return all_of(s, [](char c) { return isAlnum(c) || c == '_' || c == '.'; });
}

std::string rangeText(const Range &r) {
  if (r.count == 1)
    return std::to_string(r.first);
  return std::to_string(r.first) + "-" + std::to_string(r.end() - 1);
}

bool checkChannelSet(const ChannelSet &set, std::string &why) {
  for (size_t i = 0; i < set.size(); ++i) {
    if (set[i].first < 0 || set[i].count <= 0 ||
        set[i].count > INT64_MAX - set[i].first) {
      why = "channel range " + std::to_string(set[i].first) + "+" +
            std::to_string(set[i].count) + " is empty or negative";
      return false;
    }
    if (i > 0 && set[i].first < set[i - 1].end()) {
      why = "channel ranges are not sorted and disjoint";
      return false;
    }
  }
  return true;
}

/// Where a problem is: a text, or an instruction, which is formatted
/// ("stream 0 (score), instruction 3 (mac_ab)") only when a problem is
/// reported (a program has millions of instructions and few problems).
class Where {
public:
  Where(std::string text) : text(std::move(text)) {}
  Where(size_t streamIndex, const Stream &stream, size_t instIndex,
        const Instruction &inst)
      : streamIndex(streamIndex), instIndex(instIndex), stream(&stream),
        inst(&inst) {}

  std::string str() const {
    if (!stream)
      return text;
    return ("stream " + Twine(streamIndex) + " (" + stream->name +
            "), instruction " + Twine(instIndex) + " (" + opcodeName(inst->op) +
            ")")
        .str();
  }
  friend std::string operator+(const Where &w, const char *s) {
    return w.str() + s;
  }

private:
  std::string text;
  size_t streamIndex = 0, instIndex = 0;
  const Stream *stream = nullptr;
  const Instruction *inst = nullptr;
};
} // namespace

//===----------------------------------------------------------------------===//
// checkProgram: structure
//===----------------------------------------------------------------------===//

namespace {
constexpr unsigned kMaxLoopDepth = 32;

class StructureChecker {
public:
  StructureChecker(const Program &p, Problems &problems)
      : p(p), problems(problems) {}

  void run() {
    StringSet<> regionNames, launchNames, entryNames, paramNames;
    if (p.params.size() > kMaxParams)
      problems.add("program has " + Twine(p.params.size()) +
                   " parameters, at most " + Twine(kMaxParams) +
                   " are allowed");
    for (auto [i, prm] : enumerate(p.params)) {
      std::string ctx = ("parameter " + Twine(i) + " (" + prm.name + ")").str();
      checkParamName(ctx, prm.name, paramNames);
      if (prm.min > prm.max)
        problems.add(ctx + ": min " + Twine(prm.min) + " is above max " +
                     Twine(prm.max));
      if (prm.src != -1 && (prm.src < 0 || prm.src >= static_cast<int64_t>(i)))
        problems.add(ctx + ": derived from parameter " + Twine(prm.src) +
                     ", which is not an earlier parameter");
      if (prm.div < 1)
        problems.add(ctx + ": div " + Twine(prm.div) + " must be >= 1");
      if (prm.mod < 0)
        problems.add(ctx + ": mod " + Twine(prm.mod) + " must be >= 0");
      if (prm.src == -1 && (prm.add != 0 || prm.div != 1 || prm.mod != 0))
        problems.add(ctx + ": an input parameter has no add, div or mod");
      if (prm.device && prm.src != -1)
        problems.add(ctx + ": a device parameter is not derived");
      if (prm.device && (prm.timing < prm.min || prm.timing > prm.max))
        problems.add(ctx + ": timing value " + Twine(prm.timing) +
                     " is outside [" + Twine(prm.min) + ", " + Twine(prm.max) +
                     "]");
      if (!prm.device && prm.timing != 0)
        problems.add(ctx + ": only a device parameter has a timing value");
    }
    for (auto [i, r] : enumerate(p.regions)) {
      std::string ctx = ("region " + Twine(i) + " (" + r.name + ")").str();
      checkName(ctx, r.name, regionNames);
      if (static_cast<size_t>(r.kind) >= std::size(kRegionKindNames))
        problems.add(ctx + ": unknown region kind " +
                     Twine(static_cast<int>(r.kind)));
      checkRange(ctx, "channels", r.channels);
      checkRange(ctx, "banks", r.banks);
      checkRange(ctx, "rows", r.rows);
      if (r.bytes < 0)
        problems.add(ctx + ": negative byte size");
    }
    for (auto [i, w] : enumerate(p.weights)) {
      std::string ctx = ("weight " + Twine(i) + " (" + w.tensor + ")").str();
      if (w.tensor.empty())
        problems.add(ctx + ": empty tensor name");
      checkRegionIndex(ctx, w.region);
      if (static_cast<size_t>(w.interleave) >= std::size(kInterleaveNames))
        problems.add(ctx + ": unknown interleave " +
                     Twine(static_cast<int>(w.interleave)));
      checkRange(ctx, "rows", w.rows);
      for (int64_t d : w.shape)
        if (d < 0)
          problems.add(ctx + ": negative dimension in shape");
      for (int64_t d : w.tile)
        if (d < 0)
          problems.add(ctx + ": negative dimension in tile");
      if (w.offset < 0 || w.bytes < 0 || w.bytes > INT64_MAX - w.offset)
        problems.add(ctx + ": negative offset or byte size");
      if (w.gemvRows)
        checkGemvRows(ctx, w, *w.gemvRows);
    }
    for (auto [i, k] : enumerate(p.kernels)) {
      std::string ctx = ("kernel " + Twine(i) + " (" + k.name + ")").str();
      checkName(ctx, k.name, launchNames);
      if (static_cast<size_t>(k.kind) >= kNumKernelKinds)
        problems.add(ctx + ": unknown kernel kind " +
                     Twine(static_cast<int>(k.kind)));
      if (!k.unit.empty() && !isIdentifier(k.unit))
        problems.add(ctx + ": unit '" + k.unit +
                     "' is not an identifier ([A-Za-z_][A-Za-z0-9_.]*)");
      if (k.elements < 0)
        problems.add(ctx + ": negative element count " + Twine(k.elements));
      for (auto [j, op] : enumerate(k.operands)) {
        std::string octx = (ctx + ", operand " + Twine(j)).str();
        if (op.role != OperandRole::Input && op.role != OperandRole::Output)
          problems.add(octx + ": unknown role " +
                       Twine(static_cast<int>(op.role)));
        checkRegionIndex(octx, op.region);
        if (op.offset < 0 || op.bytes < 0 || op.bytes > INT64_MAX - op.offset)
          problems.add(octx + ": negative offset or byte size");
      }
      for (auto [j, op] : enumerate(k.ops))
        for (const std::string &why : hostOpProblems(op, p))
          problems.add(ctx + ", op " + Twine(j) + " (" +
                       hostOpKindName(op.kind) + "): " + why);
      for (auto [j, set] : enumerate(k.sets))
        checkParamSet((ctx + ", set " + Twine(j)).str(), set);
    }
    checkDeviceParamsSet();
    checkHostTensors();
    for (auto [i, s] : enumerate(p.streams)) {
      std::string ctx = ("stream " + Twine(i) + " (" + s.name + ")").str();
      checkName(ctx, s.name, launchNames);
      std::string why;
      // The text form cannot say "no channels" (`channels=` needs a range),
      // and such a stream would run nowhere: both readers reject it.
      if (s.channels.empty())
        problems.add(ctx + ": no channels (a stream runs on at least one)");
      else if (!checkChannelSet(s.channels, why))
        problems.add(ctx + ": " + why);
      checkStreamInfo(ctx, s.info);
      size_t counter = 0;
      for (const Instruction &inst : s.body)
        checkInstruction(i, s, inst, 0, counter);
    }
    for (auto [i, e] : enumerate(p.entries)) {
      std::string ctx = ("entry " + Twine(i) + " (" + e.name + ")").str();
      checkName(ctx, e.name, entryNames);
      for (auto [j, step] : enumerate(e.steps)) {
        std::string sctx = (ctx + ", step " + Twine(j)).str();
        switch (step.kind) {
        case StepKind::Stream:
          if (step.index < 0 ||
              step.index >= static_cast<int64_t>(p.streams.size()))
            problems.add(sctx + ": refers to stream " + Twine(step.index) +
                         ", but the program has " + Twine(p.streams.size()) +
                         " streams");
          break;
        case StepKind::Kernel:
          if (step.index < 0 ||
              step.index >= static_cast<int64_t>(p.kernels.size()))
            problems.add(sctx + ": refers to kernel " + Twine(step.index) +
                         ", but the program has " + Twine(p.kernels.size()) +
                         " kernels");
          break;
        case StepKind::Barrier:
          if (step.index != 0)
            problems.add(sctx + ": barrier step with index " +
                         Twine(step.index));
          break;
        default:
          problems.add(sctx + ": unknown step kind " +
                       Twine(static_cast<int>(step.kind)));
        }
      }
    }
    bool deviceParams =
        any_of(p.params, [](const Param &prm) { return prm.device; });
    if (problems.empty() && deviceParams)
      for (const Entry &e : p.entries)
        checkDeviceParamOrder(e);
  }

private:
  /// (2.3) A kernel sets a device parameter from an int32 inside a region.
  void checkParamSet(const std::string &ctx, const ParamSet &set) {
    if (set.param < 0 || set.param >= static_cast<int64_t>(p.params.size())) {
      problems.add(ctx + ": refers to parameter " + Twine(set.param) +
                   ", but the program has " + Twine(p.params.size()) +
                   " parameters");
      return;
    }
    if (!p.params[set.param].device)
      problems.add(ctx + ": parameter '" + p.params[set.param].name +
                   "' is not a device parameter");
    checkRegionIndex(ctx, set.region);
    if (set.region < 0 || set.region >= static_cast<int64_t>(p.regions.size()))
      return;
    const Region &r = p.regions[set.region];
    if (set.offset < 0 || set.offset % 4 != 0 || set.offset > r.bytes - 4)
      problems.add(ctx + ": offset " + Twine(set.offset) +
                   " is not a 4-byte "
                   "aligned int32 inside region '" +
                   r.name + "' (" + Twine(r.bytes) + " bytes)");
  }

  /// (2.3) A device parameter no kernel sets would be a constant.
  void checkDeviceParamsSet() {
    for (auto [i, prm] : enumerate(p.params)) {
      if (!prm.device)
        continue;
      bool set = any_of(p.kernels, [&, i = i](const HostKernel &k) {
        return any_of(k.sets, [&](const ParamSet &s) {
          return s.param == static_cast<int64_t>(i);
        });
      });
      if (!set)
        problems.add("parameter " + Twine(i) + " (" + prm.name +
                     "): a device parameter that no kernel sets");
    }
  }

  /// The device parameter behind parameter `i` (itself or the root of its
  /// derivation), or -1.
  int64_t deviceRoot(int64_t i) const {
    while (i >= 0 && !p.params[i].device)
      i = p.params[i].src;
    return i;
  }

  /// Device parameters a stream's fields use, and the kernels it calls.
  void streamUses(ArrayRef<Instruction> body, std::set<int64_t> &params,
                  std::vector<int64_t> &calls) const {
    for (const Instruction &inst : body) {
      for (const Stride &st : inst.strides)
        if (isParamStride(st.loop))
          if (int64_t d = deviceRoot(st.loop - kParamBase); d >= 0)
            params.insert(d);
      if (inst.op == Opcode::Call)
        calls.push_back(inst.kernel);
      streamUses(inst.body, params, calls);
    }
  }

  /// (2.3) Streams are expanded before their phase runs and kernels set
  /// parameters when they complete, so a stream may use a device parameter
  /// only in a phase after the one where a kernel set it.
  void checkDeviceParamOrder(const Entry &e) {
    std::set<int64_t> ready, pending;
    auto setBy = [&](int64_t kernel) {
      for (const ParamSet &s : p.kernels[kernel].sets)
        pending.insert(s.param);
    };
    for (auto [j, step] : enumerate(e.steps)) {
      if (step.kind == StepKind::Barrier) {
        ready.insert(pending.begin(), pending.end());
        continue;
      }
      if (step.kind == StepKind::Kernel) {
        setBy(step.index);
        continue;
      }
      std::set<int64_t> used;
      std::vector<int64_t> calls;
      streamUses(p.streams[step.index].body, used, calls);
      for (int64_t d : used)
        if (!ready.count(d))
          problems.add("entry '" + e.name + "', step " + Twine(j) +
                       " (stream " + p.streams[step.index].name +
                       "): uses device parameter '" + p.params[d].name +
                       "' before a kernel has set it in an earlier phase");
      for (int64_t k : calls)
        if (k >= 0 && k < static_cast<int64_t>(p.kernels.size()))
          setBy(k);
    }
  }

  void checkHostTensors() {
    StringSet<> names;
    for (auto [i, t] : enumerate(p.hostTensors)) {
      std::string ctx = ("host tensor " + Twine(i) + " (" + t.name + ")").str();
      if (t.name.empty())
        problems.add(ctx + ": no name");
      else if (!names.insert(t.name).second)
        problems.add(ctx + ": the name is listed twice");
      if (t.shape.empty() || any_of(t.shape, [](int64_t d) { return d < 1; }))
        problems.add(ctx + ": the shape must list positive sizes");
    }
  }

  /// Parameter names appear in affine expressions next to loop variables,
  /// so they have no dots and are not a canonical loop variable name.
  void checkParamName(const Where &ctx, StringRef name, StringSet<> &seen) {
    if (!isIdentifier(name) || name.contains('.')) {
      problems.add(ctx + ": name '" + name +
                   "' is not a parameter name ([A-Za-z_][A-Za-z0-9_]*)");
      return;
    }
    StringRef digits = name.drop_front();
    if (name == "ch" || name == "i" || name == "j" || name == "k" ||
        name == "l" ||
        (name.size() > 1 && name[0] == 'i' && all_of(digits, isDigit)))
      problems.add(ctx + ": '" + name +
                   "' is reserved for loop variables and the channel index");
    if (!seen.insert(name).second)
      problems.add(ctx + ": name '" + name + "' is used twice");
  }

  /// The layout belongs to a gemv_rows binding and each of its values is
  /// in its domain (gemvRowsProblems).
  void checkGemvRows(const Where &ctx, const WeightBinding &w,
                     const GemvRows &g) {
    std::string at = ctx + ": gemv_rows: ";
    if (w.layout != "gemv_rows")
      problems.add(at + "the layout is '" + w.layout + "', not gemv_rows");
    for (const std::string &problem : gemvRowsProblems(g))
      problems.add(at + problem);
  }

  /// Names are identifiers (they print as bare words), part >= -1, bytes
  /// >= 0.
  void checkStreamInfo(const Where &ctx, const StreamInfo &info) {
    for (auto [key, value] :
         {std::pair<StringRef, StringRef>{"layer", info.layer},
          {"op", info.op},
          {"class", info.workClass},
          {"kernel", info.kernel}})
      if (!value.empty() && !isIdentifier(value))
        problems.add(ctx + ": " + key + " '" + value +
                     "' is not a name ([A-Za-z_][A-Za-z0-9_.]*)");
    if (info.part < -1)
      problems.add(ctx + ": part " + Twine(info.part) + " is negative");
    if (info.bytes < 0)
      problems.add(ctx + ": bytes " + Twine(info.bytes) + " is negative");
  }

  void checkName(const Where &ctx, StringRef name, StringSet<> &seen) {
    if (!isIdentifier(name)) {
      problems.add(ctx + ": name '" + name +
                   "' is not an identifier ([A-Za-z_][A-Za-z0-9_.]*)");
      return;
    }
    if (name == "barrier")
      problems.add(ctx + ": 'barrier' is reserved");
    if (!seen.insert(name).second)
      problems.add(ctx + ": name '" + name + "' is used twice");
  }
  void checkRange(const Where &ctx, StringRef what, const Range &r) {
    if (r.first < 0 || r.count <= 0 || r.count > INT64_MAX - r.first)
      problems.add(ctx + ": " + what + " range " + Twine(r.first) + "+" +
                   Twine(r.count) + " is empty or negative");
  }
  void checkRegionIndex(const Where &ctx, int64_t region) {
    if (region < 0 || region >= static_cast<int64_t>(p.regions.size()))
      problems.add(ctx + ": refers to region " + Twine(region) +
                   ", but the program has " + Twine(p.regions.size()) +
                   " regions");
  }

  /// (2.2) ALiBi on sfm: finite slopes and a positive finite scale; head=,
  /// key0= and alibi_scale= only with slopes.
  void checkAlibi(const Where &ctx, const Instruction &inst) {
    if (inst.alibi.empty()) {
      if (inst.alibiScale != 0.0f || inst.head != 0 || inst.key0 != 0 ||
          any_of(inst.strides, [](const Stride &st) {
            return st.field == Field::Head || st.field == Field::Key0;
          }))
        problems.add(ctx + ": head=, key0= and alibi_scale= need alibi= "
                           "slopes");
      return;
    }
    for (auto [i, m] : enumerate(inst.alibi))
      if (!std::isfinite(m)) {
        problems.add(ctx + ": alibi slope " + Twine(i) + " is not finite");
        break;
      }
    if (!(std::isfinite(inst.alibiScale) && inst.alibiScale > 0.0f))
      problems.add(ctx + ": alibi_scale " +
                   formatv("{0}", format("%g", double(inst.alibiScale))).str() +
                   " must be positive and finite");
  }

  void checkInstruction(size_t streamIndex, const Stream &s,
                        const Instruction &inst, unsigned depth,
                        size_t &counter) {
    Where ctx(streamIndex, s, counter++, inst);
    if (static_cast<size_t>(inst.op) >= kNumOpcodes) {
      problems.add(ctx + ": unknown opcode " +
                   Twine(static_cast<int>(inst.op)));
      return;
    }
    Instruction defaults;
    for (unsigned f = 0; f < kNumFields; ++f) {
      auto field = static_cast<Field>(f);
      if (opcodeHasField(inst.op, field))
        continue;
      bool isDefault =
          field == Field::Channels ? inst.channels.empty()
          : field == Field::Data ? inst.dataRegion == -1 && inst.dataOffset == 0
          : field == Field::Cap  ? inst.cap == 0.0f
          : field == Field::Alibi      ? inst.alibi.empty()
          : field == Field::AlibiScale ? inst.alibiScale == 0.0f
                                       : inst.get(field) == defaults.get(field);
      if (!isDefault)
        problems.add(ctx + ": field '" + fieldName(field) +
                     "' is not used by " + opcodeName(inst.op));
    }
    std::string why;
    if (!checkChannelSet(inst.channels, why))
      problems.add(ctx + ": " + why);
    if (inst.cap != 0.0f && !(std::isfinite(inst.cap) && inst.cap > 0.0f))
      problems.add(ctx + ": cap " +
                   formatv("{0}", format("%g", double(inst.cap))).str() +
                   " must be positive and finite");
    checkAlibi(ctx, inst);
    if (opcodeHasField(inst.op, Field::Fn) &&
        static_cast<size_t>(inst.fn) >= kNumFunctions)
      problems.add(ctx + ": unknown function " +
                   Twine(static_cast<int>(inst.fn)));
    if (opcodeHasField(inst.op, Field::Data)) {
      if (inst.dataRegion == -1) {
        if (inst.dataOffset != 0 || any_of(inst.strides, [](const Stride &st) {
              return st.field == Field::Data;
            }))
          problems.add(ctx + ": data offset without a data region");
      } else {
        checkRegionIndex(ctx, inst.dataRegion);
      }
    }
    if (inst.op == Opcode::Call &&
        (inst.kernel < 0 ||
         inst.kernel >= static_cast<int64_t>(p.kernels.size())))
      problems.add(ctx + ": calls kernel " + Twine(inst.kernel) +
                   ", but the program has " + Twine(p.kernels.size()) +
                   " kernels");
    for (auto [j, st] : enumerate(inst.strides)) {
      if (isParamStride(st.loop)) {
        if (!isParamStridable(inst.op, st.field))
          problems.add(ctx + ": field '" + fieldName(st.field) +
                       "' cannot take a parameter stride");
        if (st.loop - kParamBase >= p.params.size())
          problems.add(ctx + ": stride refers to parameter " +
                       Twine(st.loop - kParamBase) + ", but the program has " +
                       Twine(p.params.size()) + " parameters");
      } else if (!isStridable(inst.op, st.field))
        problems.add(ctx + ": field '" + fieldName(st.field) +
                     "' cannot take a loop stride");
      else if (st.loop >= depth && st.loop != kChannelIndex)
        problems.add(ctx + ": stride refers to loop depth " + Twine(st.loop) +
                     ", but the instruction is inside " + Twine(depth) +
                     " loops");
      if (st.step == 0)
        problems.add(ctx + ": zero stride");
      if (j > 0) {
        const Stride &prev = inst.strides[j - 1];
        if (std::make_pair(prev.field, prev.loop) >=
            std::make_pair(st.field, st.loop))
          problems.add(ctx + ": strides are not sorted by (field, loop) "
                             "without repeats");
      }
    }
    if (inst.op != Opcode::Loop) {
      if (!inst.body.empty())
        problems.add(ctx + ": only a loop has a body");
      return;
    }
    if (depth + 1 > kMaxLoopDepth) {
      problems.add(ctx + ": loops nested more than " + Twine(kMaxLoopDepth) +
                   " deep");
      return;
    }
    for (const Instruction &child : inst.body)
      checkInstruction(streamIndex, s, child, depth + 1, counter);
  }

  const Program &p;
  Problems &problems;
};
} // namespace

Error checkProgram(const Program &program) {
  Problems problems;
  StructureChecker(program, problems).run();
  return problems.take();
}

//===----------------------------------------------------------------------===//
// validateProgram: against the target
//===----------------------------------------------------------------------===//

namespace {
/// Smallest and largest value a field takes over all loop iterations.
struct Span {
  int64_t lo = 0, hi = 0;
  bool overflow = false;
};

/// Out-of-range values only need to compare as too large.
int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  return AddOverflow(a, b, sum) ? (b > 0 ? INT64_MAX : INT64_MIN) : sum;
}

/// The first channel of `r` not in `set`, or -1.
int64_t firstChannelOutside(const Range &r, const ChannelSet &set) {
  int64_t c = r.first;
  while (c < r.end()) {
    auto it = find_if(set, [&](const Range &s) { return s.contains(c); });
    if (it == set.end())
      return c;
    c = it->end(); // adjacent ranges of `set` may continue the run
  }
  return -1;
}

class TargetChecker {
public:
  TargetChecker(const Program &p, const Target &t, Problems &problems)
      : p(p), t(t), org(t.org), problems(problems) {}

  void run() {
    if (!checkOrganization())
      return; // every range check below would be against the wrong device
    checkRegions();
    checkWeights();
    checkKernels();
    for (auto [i, s] : enumerate(p.streams)) {
      std::string ctx = ("stream " + Twine(i) + " (" + s.name + ")").str();
      for (const Range &r : s.channels)
        if (r.end() > org.totalChannels())
          problems.add(ctx + ": channels " + rangeText(r) +
                       " are out of range (target has " +
                       Twine(org.totalChannels()) + " channels)");
      size_t counter = 0;
      loops.clear();
      cornerValues.assign(p.params.size(), 0);
      streamChannels = 0;
      for (const Range &r : s.channels)
        streamChannels += r.count;
      streamWork = 0;
      for (const Instruction &inst : s.body)
        checkInstruction(i, s, inst, counter);
      checkStreamWork(ctx);
    }
    for (auto [i, e] : enumerate(p.entries))
      if (e.steps.empty())
        problems.add("entry " + Twine(i) + " (" + e.name + "): no steps");
  }

private:
  bool checkOrganization() {
    const Organization &a = p.target.org;
    struct Item {
      const char *what;
      int64_t program, target;
    } items[] = {{"stacks", a.stacks, org.stacks},
                 {"channels", a.channels, org.channels},
                 {"pseudo-channels", a.pseudoChannels, org.pseudoChannels},
                 {"SIDs", a.sids, org.sids},
                 {"bank groups", a.bankGroups, org.bankGroups},
                 {"banks", a.banks, org.banks},
                 {"rows", a.rows, org.rows},
                 {"columns", a.columns, org.columns},
                 {"access bytes", a.accessBytes, org.accessBytes}};
    bool same = true;
    for (const Item &item : items)
      if (item.program != item.target) {
        problems.add("program was compiled for " + Twine(item.program) + " " +
                     item.what + ", target '" + t.name + "' has " +
                     Twine(item.target));
        same = false;
      }
    return same;
  }

  void checkDeviceRange(const Where &ctx, StringRef what, const Range &r,
                        int64_t limit, StringRef unit) {
    if (r.end() > limit)
      problems.add(ctx + ": " + what + " " + rangeText(r) +
                   " are out of range (target has " + Twine(limit) + " " +
                   unit + ")");
  }

  void checkRegions() {
    for (auto [i, r] : enumerate(p.regions)) {
      std::string ctx = ("region " + Twine(i) + " (" + r.name + ")").str();
      checkDeviceRange(ctx, "channels", r.channels, org.totalChannels(),
                       "channels");
      checkDeviceRange(ctx, "banks", r.banks, org.banksPerChannel(),
                       "banks per channel");
      checkDeviceRange(ctx, "rows", r.rows, org.rows, "rows");
      // Saturate: a region can claim an absurd size only to be told so.
      int64_t capacity = org.rowBytes(), tmp = 0;
      for (int64_t n : {r.channels.count, r.banks.count, r.rows.count})
        capacity = MulOverflow(capacity, n, tmp) ? INT64_MAX : tmp;
      if (r.bytes > capacity)
        problems.add(ctx + ": " + Twine(r.bytes) +
                     " bytes do not fit its channels, banks and rows (" +
                     Twine(capacity) + " bytes)");
    }
    for (size_t i = 0; i < p.regions.size(); ++i)
      for (size_t j = i + 1; j < p.regions.size(); ++j) {
        const Region &a = p.regions[i], &b = p.regions[j];
        auto meet = [](const Range &x, const Range &y) {
          return x.first < y.end() && y.first < x.end();
        };
        if (meet(a.channels, b.channels) && meet(a.banks, b.banks) &&
            meet(a.rows, b.rows))
          problems.add("regions '" + a.name + "' and '" + b.name + "' overlap");
      }
  }

  void checkExtent(const Where &ctx, int64_t region, int64_t lo, int64_t hi,
                   StringRef what) {
    const Region &r = p.regions[region];
    if (lo < 0 || hi > r.bytes)
      report(ctx + ": " + what + " [" + Twine(lo) + ", " + Twine(hi) +
             ") is outside region '" + r.name + "' (" + Twine(r.bytes) +
             " bytes)");
  }

  void checkWeights() {
    for (auto [i, w] : enumerate(p.weights)) {
      std::string ctx = ("weight " + Twine(i) + " (" + w.tensor + ")").str();
      const Region &r = p.regions[w.region];
      if (w.rows.first < r.rows.first || w.rows.end() > r.rows.end())
        problems.add(ctx + ": rows " + rangeText(w.rows) +
                     " are outside region '" + r.name + "' rows " +
                     rangeText(r.rows));
      checkExtent(ctx, w.region, w.offset, w.offset + w.bytes, "bytes");
      if (w.format.empty())
        problems.add(ctx + ": no element format");
      if (!w.shape.empty() &&
          (w.axis < 0 || w.axis >= static_cast<int64_t>(w.shape.size())))
        problems.add(ctx + ": tiling axis " + Twine(w.axis) +
                     " is out of range for a rank-" + Twine(w.shape.size()) +
                     " tensor");
      if (!w.tile.empty() && w.tile.size() != w.shape.size())
        problems.add(ctx + ": tile has rank " + Twine(w.tile.size()) +
                     ", tensor has rank " + Twine(w.shape.size()));
    }
  }

  void checkKernels() {
    for (auto [i, k] : enumerate(p.kernels))
      if (!k.unit.empty() &&
          none_of(t.nearMemory,
                  [&](const NearMemoryUnit &u) { return u.name == k.unit; }))
        problems.add("kernel " + Twine(i) + " (" + k.name + "): target '" +
                     t.name + "' has no near-memory unit '" + k.unit + "'");
    for (auto [i, k] : enumerate(p.kernels))
      for (auto [j, op] : enumerate(k.operands))
        checkExtent(
            ("kernel " + Twine(i) + " (" + k.name + "), operand " + Twine(j))
                .str(),
            op.region, op.offset, op.offset + op.bytes, "bytes");
  }

  /// A field's value with every parameter at the current corner.
  int64_t valueAt(const Instruction &inst, Field field) {
    int64_t v = inst.get(field);
    for (const Stride &st : inst.strides)
      if (st.field == field && isParamStride(st.loop)) {
        int64_t term = 0;
        if (MulOverflow(st.step, cornerValues[st.loop - kParamBase], term))
          term = st.step > 0 ? INT64_MAX : INT64_MIN;
        v = saturatingAdd(v, term);
      }
    return v;
  }

  /// The span of `field` over every loop iteration and channel, with the
  /// parameters at the current corner.
  Span span(const Instruction &inst, Field field) {
    Span s;
    s.lo = s.hi = inst.get(field);
    for (const Stride &st : inst.strides) {
      if (st.field != field)
        continue;
      int64_t n = 1;
      if (isParamStride(st.loop)) {
        // A fixed value at this corner: moves both ends.
        int64_t term = 0;
        if (MulOverflow(st.step, cornerValues[st.loop - kParamBase], term) ||
            AddOverflow(s.lo, term, s.lo) || AddOverflow(s.hi, term, s.hi))
          s.overflow = true;
        continue;
      }
      if (st.loop == kChannelIndex)
        n = streamChannels;
      else if (st.loop < loops.size())
        n = valueAt(*loops[st.loop], Field::Count);
      // A positive step stretches the top of the span, a negative one the
      // bottom.
      int64_t reach = 0;
      int64_t &end = st.step > 0 ? s.hi : s.lo;
      if (MulOverflow(st.step, std::max<int64_t>(n - 1, 0), reach) ||
          AddOverflow(end, reach, end))
        s.overflow = true;
    }
    return s;
  }

  /// (2.2) ALiBi: every channel's and iteration's head indexes the slopes,
  /// and key positions are not negative.
  void checkAlibiRanges(const Where &ctx, const Instruction &inst) {
    Span h = span(inst, Field::Head), k = span(inst, Field::Key0);
    if (h.overflow || h.lo < 0 || h.hi >= int64_t(inst.alibi.size()))
      report(ctx + ": head spans [" + Twine(h.lo) + ", " + Twine(h.hi) +
             "], outside the " + Twine(inst.alibi.size()) + " alibi slopes");
    if (k.overflow || k.lo < 0)
      report(ctx + ": key0 reaches " + Twine(k.lo) +
             "; key positions are "
             "not negative");
  }

  /// Reports a problem of the current instruction once, however many
  /// parameter corners show it, naming the first corner that does.
  void report(const Twine &msg) {
    std::string text = msg.str();
    if (!reported.insert(text).second)
      return;
    problems.add(text + cornerText);
  }

  /// lo..hi within [0, limit).
  void checkIndex(const Where &ctx, const Instruction &inst, Field field,
                  int64_t limit, StringRef unit) {
    Span s = span(inst, field);
    if (s.overflow) {
      report(ctx + ": " + fieldName(field) + " overflows");
      return;
    }
    int64_t bad = s.lo < 0 ? s.lo : s.hi;
    if (s.lo < 0 || s.hi >= limit)
      report(ctx + ": " + fieldName(field) + " " + Twine(bad) +
             " is out of range (target has " + Twine(limit) + " " + unit + ")");
  }

  /// The base and every stride step of `field` are multiples of `unit`.
  static bool aligned(const Instruction &inst, Field field, int64_t unit) {
    bool ok = inst.get(field) % unit == 0;
    for (const Stride &st : inst.strides)
      if (st.field == field)
        ok &= st.step % unit == 0;
    return ok;
  }

  /// A byte extent [lo, hi + size) within [0, limit), aligned to accesses.
  void checkBuffer(const Where &ctx, const Instruction &inst, Field field,
                   int64_t size) {
    Span s = span(inst, field);
    if (s.overflow) {
      report(ctx + ": " + fieldName(field) + " overflows");
      return;
    }
    int64_t gb = t.pim.globalBufferBytes;
    int64_t end = saturatingAdd(s.hi, size);
    if (s.lo < 0 || (gb > 0 && end > gb))
      report(ctx + ": global-buffer bytes [" + Twine(s.lo) + ", " + Twine(end) +
             ") are out of range (target has " + Twine(gb) + " bytes)");
    if (!aligned(inst, field, org.accessBytes))
      report(ctx + ": " + fieldName(field) + " is not a multiple of " +
             Twine(org.accessBytes) + " bytes");
  }

  /// Checks `inst` at every corner of the parameters it (or an enclosing
  /// loop's count) refers to: every field is affine in each parameter, so
  /// its extremes are at the ends of the parameters' ranges.
  void checkInstruction(size_t streamIndex, const Stream &s,
                        const Instruction &inst, size_t &counter) {
    Where ctx(streamIndex, s, counter++, inst);
    SmallVector<unsigned, 8> used;
    auto collect = [&](const Instruction &in, bool countOnly) {
      for (const Stride &st : in.strides)
        if (isParamStride(st.loop) && (!countOnly || st.field == Field::Count))
          if (!is_contained(used, st.loop - kParamBase))
            used.push_back(st.loop - kParamBase);
    };
    collect(inst, false);
    for (const Instruction *l : loops)
      collect(*l, true);
    llvm::sort(used);
    // 2^n corners; past 12 parameters, only all-min and all-max.
    bool allCorners = used.size() <= 12;
    uint64_t corners = allCorners ? uint64_t(1) << used.size() : 2;
    reported.clear();
    for (uint64_t c = 0; c < corners; ++c) {
      cornerText.clear();
      for (auto [b, pi] : enumerate(used)) {
        const Param &prm = p.params[pi];
        bool high = allCorners ? (c >> b) & 1 : c == 1;
        cornerValues[pi] = high ? prm.max : prm.min;
        cornerText += (cornerText.empty() ? " (at " : ", ") + prm.name + "=" +
                      std::to_string(cornerValues[pi]);
      }
      if (!cornerText.empty())
        cornerText += ")";
      checkAtCorner(s, inst, ctx);
    }
    cornerText.clear();
    reported.clear();
    streamWork = saturatingAdd(streamWork, instWork);
    instWork = 0;
    if (inst.op != Opcode::Loop)
      return;
    if (inst.body.empty())
      problems.add(ctx + ": empty loop body");
    loops.push_back(&inst);
    for (const Instruction &child : inst.body)
      checkInstruction(streamIndex, s, child, counter);
    loops.pop_back();
  }

  void checkAtCorner(const Stream &s, const Instruction &inst,
                     const Where &ctx) {
    for (const Range &r : inst.channels)
      if (int64_t c = firstChannelOutside(r, s.channels); c >= 0)
        report(ctx + ": channel " + Twine(c) +
               " is not one of the stream's channels");
    bool hasCol = opcodeHasField(inst.op, Field::Col);
    int64_t count = valueAt(inst, Field::Count);
    if (opcodeHasField(inst.op, Field::Count) && count < 1)
      report(ctx + ": " + (inst.op == Opcode::Loop ? "loop count " : "count ") +
             Twine(count) + " must be positive");
    for (const Instruction *l : loops)
      if (valueAt(*l, Field::Count) < 1)
        return; // the body does not run (reported at the loop)
    instWork = std::max(instWork, workAtCorner(inst));
    if (opcodeHasField(inst.op, Field::Row))
      checkIndex(ctx, inst, Field::Row, org.rows, "rows");
    if (opcodeHasField(inst.op, Field::Bank))
      checkIndex(ctx, inst, Field::Bank, org.banksPerChannel(),
                 "banks per channel");
    if (opcodeHasField(inst.op, Field::Reg) && inst.op != Opcode::SetCfr)
      checkIndex(ctx, inst, Field::Reg, t.pim.accumulators,
                 "accumulators per PIM unit");
    if (hasCol) {
      checkIndex(ctx, inst, Field::Col, org.columns, "columns");
      Span c = span(inst, Field::Col);
      if (!c.overflow && c.hi < org.columns && count >= 1 &&
          saturatingAdd(c.hi, count) > org.columns)
        report(ctx + ": columns " + Twine(c.hi) + ".." +
               Twine(saturatingAdd(c.hi, count) - 1) +
               " are out of range (target has " + Twine(org.columns) +
               " columns)");
    }
    int64_t burstBytes = 0;
    if (MulOverflow(std::max<int64_t>(count, 0), org.accessBytes, burstBytes))
      burstBytes = INT64_MAX;
    int64_t bytes = valueAt(inst, Field::Bytes);
    switch (inst.op) {
    case Opcode::MacAB:
    case Opcode::MacSB:
    case Opcode::MacPB:
      // The base of the MAC's input: one access within the buffer.
      checkBuffer(ctx, inst, Field::Offset, org.accessBytes);
      break;
    case Opcode::WrGB:
      if (bytes <= 0 || !aligned(inst, Field::Bytes, org.accessBytes))
        report(ctx + ": bytes " + Twine(bytes) +
               " must be a positive multiple of " + Twine(org.accessBytes));
      checkBuffer(ctx, inst, Field::Offset, std::max<int64_t>(bytes, 0));
      break;
    case Opcode::CopyBkGb:
    case Opcode::CopyGbBk:
      checkBuffer(ctx, inst, Field::Offset, burstBytes);
      break;
    case Opcode::EwAdd:
      checkBuffer(ctx, inst, Field::Offset, burstBytes);
      checkBuffer(ctx, inst, Field::Src, burstBytes);
      break;
    case Opcode::Sfm: {
      int64_t length = valueAt(inst, Field::Length);
      if (length <= 0)
        report(ctx + ": length " + Twine(length) + " must be positive");
      if (inst.fn != Function::Softmax && inst.fn != Function::Exp)
        report(ctx + ": the near-memory unit runs softmax or exp, not " +
               functionName(inst.fn));
      else if (inst.fn == Function::Exp && inst.dataRegion != -1)
        report(ctx + ": only fn=softmax writes statistics (data=)");
      else if (inst.fn == Function::Exp && inst.cap != 0.0f)
        report(ctx + ": only fn=softmax takes a logit softcap (cap=)");
      else if (inst.fn == Function::Exp && !inst.alibi.empty())
        report(ctx + ": only fn=softmax takes ALiBi biases (alibi=)");
      else if (!t.nearMemoryUnit("softmax"))
        report(ctx + ": target '" + t.name +
               "' has no softmax near-memory unit");
      else if (inst.cap != 0.0f &&
               !is_contained(t.nearMemoryUnit("softmax")->features, "softcap"))
        report(ctx + ": target '" + t.name +
               "': its softmax near-memory unit has no feature 'softcap' "
               "(cap=)");
      else if (!inst.alibi.empty() &&
               !is_contained(t.nearMemoryUnit("softmax")->features, "alibi"))
        report(ctx + ": target '" + t.name +
               "': its softmax near-memory unit has no feature 'alibi' "
               "(alibi=)");
      if (!inst.alibi.empty())
        checkAlibiRanges(ctx, inst);
      break;
    }
    case Opcode::Af:
      if (inst.fn == Function::Softmax)
        report(ctx + ": softmax is not an activation function (use sfm)");
      else if (!is_contained(t.pim.activationFunctions,
                             functionName(inst.fn).str()))
        report(
            ctx + ": target '" + t.name + "' has no activation function " +
            functionName(inst.fn) +
            (t.pim.activationFunctions.empty()
                 ? std::string(" (no AF unit)")
                 : " (it has " + join(t.pim.activationFunctions, ", ") + ")"));
      break;
    case Opcode::SetCfr:
      if (inst.reg < 0)
        report(ctx + ": negative register " + Twine(inst.reg));
      break;
    default:
      break;
    }
    if (opcodeHasField(inst.op, Field::Data) && inst.dataRegion >= 0) {
      Span d = span(inst, Field::Data);
      int64_t size = inst.op == Opcode::WrGB  ? std::max<int64_t>(bytes, 0)
                     : inst.op == Opcode::Sfm ? 8 // [max, sum] (1.4)
                                              : burstBytes;
      if (d.overflow)
        report(ctx + ": data offset overflows");
      else
        checkExtent(ctx, inst.dataRegion, d.lo, saturatingAdd(d.hi, size),
                    "data bytes");
    }
  }

  /// Requests (or, for a loop, iterations) `inst` expands to on one
  /// channel at the current corner, times the enclosing loops' trips.
  int64_t workAtCorner(const Instruction &inst) {
    int64_t work = 1, tmp = 0;
    if (opcodeHasField(inst.op, Field::Count))
      work = std::max<int64_t>(1, valueAt(inst, Field::Count));
    if (opcodeHasField(inst.op, Field::Bytes))
      work = std::max(work, valueAt(inst, Field::Bytes) / org.accessBytes);
    for (const Instruction *l : loops)
      work =
          MulOverflow(work, valueAt(*l, Field::Count), tmp) ? INT64_MAX : tmp;
    return work;
  }

  /// The expanded work of a stream over all its channels is bounded
  /// (kMaxExpandedWork) so that a small file cannot ask for unbounded
  /// simulation time or memory.
  void checkStreamWork(const Where &ctx) {
    int64_t total = 0;
    if (MulOverflow(streamWork, std::max<int64_t>(streamChannels, 1), total))
      total = INT64_MAX;
    if (total > kMaxExpandedWork)
      problems.add(ctx + ": loop counts x op sizes (count, bytes) x " +
                   Twine(streamChannels) + " channels expand to " +
                   (total == INT64_MAX ? std::string("more than 2^63")
                                       : std::to_string(total)) +
                   " requests, above the limit " + Twine(kMaxExpandedWork));
  }

  const Program &p;
  const Target &t;
  const Organization &org;
  Problems &problems;
  int64_t streamWork = 0; // checkStreamWork: per channel, so far
  int64_t instWork = 0;   // the current instruction's, over its corners
  std::vector<const Instruction *> loops; // enclosing loops, outermost first
  int64_t streamChannels = 0;             // channels of the current stream
  std::vector<int64_t> cornerValues;      // parameter values at the corner
  std::string cornerText;                 // " (at kv_len=4096)"
  StringSet<> reported;                   // this instruction's problems
};
} // namespace

Error validateProgram(const Program &program, const Target &target) {
  if (Error err = checkProgram(program))
    return err;
  if (target.org.accessBytes <= 0 || target.org.columns <= 0)
    return createStringError(inconvertibleErrorCode(),
                             "target '%s' has no organisation",
                             target.name.c_str());
  Problems problems;
  TargetChecker(program, target, problems).run();
  return problems.take();
}

} // namespace pimsim
