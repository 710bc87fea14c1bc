//===- Functional.cpp - pimsim's functional (data) model ------------------===//
#include "pimsim/Functional.h"
#include "pimsim/Simulator.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

using namespace llvm;
using namespace pimsim;

float pimsim::fp16ToFloat(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0) { // zero or subnormal: man * 2^-24, exact in fp32
    float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  uint32_t bits = sign << 31;
  if (exp == 31)
    bits |= 0x7f800000u | (man << 13);
  else
    bits |= ((exp + 112) << 23) | (man << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float pimsim::bf16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t pimsim::floatToFp16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) // NaN: keep the top payload bits, quiet
    return sign | 0x7e00 | ((abs >> 13) & 0x3ff);
  if (abs >= 0x477ff000u) // >= 65520 (the tie above 65504) rounds to inf
    return sign | 0x7c00;
  int exp = static_cast<int>(abs >> 23) - 127;
  if (exp < -25) // below 2^-25 (fp32 subnormals included): rounds to zero
    return sign;
  uint32_t sig = (abs & 0x7fffffu) | 0x800000u; // 24 bits, value sig*2^(exp-23)
  // fp16 normal: keep 11 bits (shift 13); subnormal: units of 2^-24.
  int shift = exp >= -14 ? 13 : -(exp + 1);
  uint32_t h = sig >> shift, rem = sig & ((1u << shift) - 1),
           half = 1u << (shift - 1);
  if (exp >= -14)
    h = (static_cast<uint32_t>(exp + 15) << 10) | (h & 0x3ff);
  if (rem > half || (rem == half && (h & 1)))
    ++h; // a carry moves into the exponent (or to the smallest normal)
  return sign | static_cast<uint16_t>(h);
}

uint16_t pimsim::floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40); // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

float pimsim::pairwiseSum(ArrayRef<float> values) {
  if (values.empty())
    return 0.0f;
  float level[64];
  std::vector<float> big;
  float *v = level;
  if (values.size() > 64) {
    big.assign(values.begin(), values.end());
    v = big.data();
  } else {
    std::copy(values.begin(), values.end(), level);
  }
  size_t n = values.size();
  while (n > 1) {
    size_t half = 0;
    for (size_t i = 0; i + 1 < n; i += 2)
      v[half++] = v[i] + v[i + 1];
    if (n % 2)
      v[half++] = v[n - 1]; // an odd element moves up a level unchanged
    n = half;
  }
  return v[0];
}

Error pimsim::checkFunctionalTarget(const Target &t) {
  const PimUnit &p = t.pim;
  if (p.inputFormat != "fp16" && p.inputFormat != "bf16")
    return createStringError(
        formatv("functional mode does not model pim_unit.input_format '{0}'",
                p.inputFormat));
  if (p.accumulateFormat != "fp32")
    return createStringError(formatv(
        "functional mode does not model pim_unit.accumulate_format '{0}' "
        "(only fp32)",
        p.accumulateFormat));
  if (p.reduction != "lanes" && p.reduction != "tree")
    return createStringError(
        formatv("functional mode does not model pim_unit.reduction '{0}'",
                p.reduction));
  if (p.lanes * 2 != t.org.accessBytes || t.org.accessBytes % 4 != 0)
    return createStringError("functional mode needs pim_unit.lanes * 2 == "
                             "organization.access_bytes");
  return Error::success();
}

FunctionalModel::FunctionalModel(const Target &target, const Program &program,
                                 SparseMemory &dram,
                                 std::vector<SparseMemory> &regions)
    : tgt(target), prog(program), dram(dram), regions(regions),
      channels(target.org.totalChannels()),
      units(target.org.banksPerChannel() / target.pim.banksPerUnit),
      accumulators(std::max<int64_t>(1, target.pim.accumulators)),
      bf16(target.pim.inputFormat == "bf16"),
      treeReduction(target.pim.reduction == "tree") {
  // The softmax buffer holds the largest of a channel's full accumulator
  // width (units x lanes values), the longest sfm of the program (at the
  // parameters' extremes) and the global buffer's elements.
  softmaxCapacity = std::max<int64_t>(units * target.pim.lanes,
                                      target.pim.globalBufferBytes / 2);
  std::function<void(ArrayRef<Instruction>)> walk =
      [&](ArrayRef<Instruction> body) {
        for (const Instruction &inst : body) {
          if (inst.op == Opcode::Sfm) {
            int64_t length = inst.length;
            for (const Stride &st : inst.strides)
              if (st.field == Field::Length && isParamStride(st.loop) &&
                  st.loop - kParamBase < program.params.size()) {
                const Param &p = program.params[st.loop - kParamBase];
                length += st.step * (st.step > 0 ? p.max : p.min);
              }
            softmaxCapacity = std::max(softmaxCapacity, length);
          }
          walk(inst.body);
        }
      };
  for (const Stream &s : program.streams)
    walk(s.body);
}

FunctionalModel::~FunctionalModel() = default;

Error FunctionalModel::takeError() {
  if (error.empty())
    return Error::success();
  std::string e = std::move(error);
  error.clear();
  return createStringError(e);
}

void FunctionalModel::fail(std::string message) {
  if (error.empty())
    error = std::move(message);
}

FunctionalModel::ChannelState &FunctionalModel::state(int64_t channel) {
  ChannelState &s = channels[channel];
  if (s.globalBuffer.empty()) {
    s.globalBuffer.assign(tgt.pim.globalBufferBytes, 0);
    s.acc.assign(units * accumulators * tgt.pim.lanes, 0.0f);
    s.softmax.assign(softmaxCapacity, 0.0f);
  }
  return s;
}

bool FunctionalModel::checkRegister(StringRef what, int64_t reg) {
  if (reg >= 0 && reg < accumulators)
    return true;
  fail(formatv("functional model: {0} uses accumulator register {1}, but a "
               "PIM unit has {2}",
               what, reg, accumulators));
  return false;
}

float FunctionalModel::takeAccumulator(ChannelState &s, int64_t unit,
                                       int64_t reg) {
  int64_t lanes = tgt.pim.lanes;
  float *acc = &s.acc[(unit * accumulators + reg) * lanes];
  float v = treeReduction ? acc[0] : pairwiseSum(ArrayRef(acc, lanes));
  std::fill(acc, acc + lanes, 0.0f);
  return v;
}

void FunctionalModel::moveToSoftmax(int64_t channel, int64_t firstUnit,
                                    int64_t reg) {
  if (!checkRegister("mv_sb", reg))
    return;
  ChannelState &s = state(channel);
  int64_t n = tgt.org.accessBytes / 4;
  if (firstUnit < 0 || firstUnit + n > units) {
    fail(formatv("functional model: mv_sb moves PIM units {0}..{1}, but a "
                 "channel has {2}",
                 firstUnit, firstUnit + n - 1, units));
    return;
  }
  if (s.sbReset) { // the first mv_sb after an sfm starts a new buffer
    std::fill(s.softmax.begin(), s.softmax.end(), 0.0f);
    s.sbFill = s.sbRead = 0;
    s.sbReset = false;
  }
  if (s.sbFill + n > softmaxCapacity) {
    fail(formatv("functional model: mv_sb overflows the {0}-value softmax "
                 "buffer of channel {1}",
                 softmaxCapacity, channel));
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    s.softmax[s.sbFill++] = takeAccumulator(s, firstUnit + i, reg);
}

bool FunctionalModel::capScores(int64_t channel, int64_t length, float cap) {
  ChannelState &s = state(channel);
  if (length <= 0 || length > s.sbFill) {
    fail(formatv("functional model: sfm cap={0} length={1}, but the softmax "
                 "buffer of channel {2} holds {3} values (moved in by mv_sb)",
                 cap, length, channel, s.sbFill));
    return false;
  }
  for (float &v : MutableArrayRef<float>(s.softmax.data(), length))
    v = std::tanh(v / cap) * cap;
  return true;
}

bool FunctionalModel::biasScores(int64_t channel, const RequestOperand &op) {
  ChannelState &s = state(channel);
  if (op.length <= 0 || op.length > s.sbFill) {
    fail(formatv("functional model: sfm alibi length={0}, but the softmax "
                 "buffer of channel {1} holds {2} values (moved in by mv_sb)",
                 op.length, channel, s.sbFill));
    return false;
  }
  for (int64_t i = 0; i < op.length; ++i) {
    // The key position as bf16, the product rounded to bf16 (the bias
    // tensor transformers builds).
    float key = bf16ToFloat(floatToBf16(float(op.key0 + i)));
    float bias = bf16ToFloat(floatToBf16(op.slope * key));
    s.softmax[size_t(i)] += bias * op.alibiScale;
  }
  return true;
}

bool FunctionalModel::softmaxUnit(int64_t channel, int64_t length, Function fn,
                                  float stats[2]) {
  ChannelState &s = state(channel);
  if (length <= 0 || length > s.sbFill) {
    fail(formatv("functional model: sfm length={0}, but the softmax buffer "
                 "of channel {1} holds {2} values (moved in by mv_sb)",
                 length, channel, s.sbFill));
    return false;
  }
  float *v = s.softmax.data();
  if (fn == Function::Exp) {
    for (int64_t i = 0; i < length; ++i)
      v[i] = std::exp(v[i]);
  } else if (fn == Function::Softmax) {
    float m = v[0];
    for (int64_t i = 1; i < length; ++i)
      m = std::max(m, v[i]);
    float sum = 0.0f;
    for (int64_t i = 0; i < length; ++i) {
      v[i] = std::exp(v[i] - m);
      sum += v[i]; // in index order
    }
    for (int64_t i = 0; i < length; ++i)
      v[i] = v[i] / sum;
    stats[0] = m;
    stats[1] = sum;
  } else {
    fail(formatv("functional model: sfm does not run '{0}'", functionName(fn)));
    return false;
  }
  // Masking (1.1): values past the length are zero from here on.
  std::fill(v + length, v + s.sbFill, 0.0f);
  s.sbFill = length;
  s.sbRead = 0;
  s.gbCursor = 0;
  s.sbReset = true;
  return true;
}

void FunctionalModel::moveToGlobalBuffer(int64_t channel) {
  ChannelState &s = state(channel);
  int64_t access = tgt.org.accessBytes, n = access / 2;
  if (s.sbRead + n > softmaxCapacity) {
    fail(formatv("functional model: mv_gb reads softmax-buffer values "
                 "{0}..{1}, but the buffer holds {2}",
                 s.sbRead, s.sbRead + n - 1, softmaxCapacity));
    return;
  }
  if (s.gbCursor + access > static_cast<int64_t>(s.globalBuffer.size())) {
    fail(formatv("functional model: mv_gb writes global-buffer offset {0}, "
                 "outside the {1}-byte buffer",
                 s.gbCursor, s.globalBuffer.size()));
    return;
  }
  uint8_t *out = &s.globalBuffer[s.gbCursor];
  for (int64_t i = 0; i < n; ++i) {
    float v = s.softmax[s.sbRead + i];
    uint16_t h = bf16 ? floatToBf16(v) : floatToFp16(v);
    out[2 * i] = static_cast<uint8_t>(h);
    out[2 * i + 1] = static_cast<uint8_t>(h >> 8);
  }
  s.sbRead += n;
  s.gbCursor += access;
}

float FunctionalModel::element(const uint8_t *p) const {
  uint16_t bits = static_cast<uint16_t>(p[0] | (p[1] << 8)); // little-endian
  return bf16 ? bf16ToFloat(bits) : fp16ToFloat(bits);
}

void FunctionalModel::mac(int64_t channel, ArrayRef<int64_t> banks, int64_t row,
                          int64_t col, int64_t gbOffset, int64_t reg) {
  if (!checkRegister("mac", reg))
    return;
  ChannelState &s = state(channel);
  const Organization &org = tgt.org;
  int64_t lanes = tgt.pim.lanes;
  int64_t gbElems = tgt.pim.globalBufferBytes / 2;
  std::vector<uint8_t> w(org.accessBytes);
  std::vector<float> x(lanes), p(lanes);
  for (int64_t l = 0; l < lanes; ++l)
    x[l] = element(
        &s.globalBuffer[2 * ((gbOffset / 2 + col * lanes + l) % gbElems)]);
  for (int64_t b : banks) {
    dram.read(encodeAddress(tgt, bankAddress(org, channel, b, row, col)), w);
    for (int64_t l = 0; l < lanes; ++l)
      p[l] = element(&w[2 * l]) * x[l]; // exact in fp32 for fp16 / bf16
    float *a =
        &s.acc[((b / tgt.pim.banksPerUnit) * accumulators + reg) * lanes];
    if (treeReduction) {
      a[0] += pairwiseSum(p);
    } else {
      for (int64_t l = 0; l < lanes; ++l)
        a[l] += p[l];
    }
  }
}

void FunctionalModel::onCommand(int64_t, Command cmd, const DecodedAddress &,
                                const Request *req) {
  if (!req || !operands || req->tag >= operands->size())
    return;
  const Organization &org = tgt.org;
  const RequestOperand &op = (*operands)[req->tag];
  DecodedAddress a = decodeAddress(tgt, req->addr);
  int64_t channel = a.stack * org.channels + a.channel;
  int64_t bank =
      ((a.pseudoChannel * org.sids + a.sid) * org.bankGroups + a.bankGroup) *
          org.banks +
      a.bank;
  int64_t access = org.accessBytes;

  // Host-visible region bytes [op.offset, op.offset + n).
  auto regionRange = [&](int64_t n) -> SparseMemory * {
    if (op.region < 0 || op.region >= static_cast<int64_t>(regions.size())) {
      fail(formatv("functional model: {0} request has no data region",
                   requestTypeName(req->type)));
      return nullptr;
    }
    const Region &r = prog.regions[op.region];
    if (op.offset < 0 || op.offset + n > r.bytes) {
      fail(formatv("functional model: {0} bytes at offset {1} are outside "
                   "region '{2}' ({3} bytes)",
                   n, op.offset, r.name, r.bytes));
      return nullptr;
    }
    return &regions[op.region];
  };

  switch (cmd) {
  case Command::WRGB: {
    if (req->type != RequestType::WrGB)
      return;
    ChannelState &s = state(channel);
    if (op.gbOffset < 0 ||
        op.gbOffset + access > static_cast<int64_t>(s.globalBuffer.size())) {
      fail(formatv("functional model: global-buffer offset {0} is outside "
                   "the {1}-byte buffer",
                   op.gbOffset, s.globalBuffer.size()));
      return;
    }
    if (SparseMemory *r = regionRange(access))
      r->read(op.offset, MutableArrayRef<uint8_t>(
                             s.globalBuffer.data() + op.gbOffset, access));
    return;
  }
  case Command::MACAB:
  case Command::MACSB:
  case Command::MACPB: {
    std::vector<int64_t> banks;
    int64_t perChannel = org.banksPerChannel();
    if (cmd == Command::MACAB) {
      for (int64_t b = 0; b < perChannel; ++b)
        banks.push_back(b);
    } else if (cmd == Command::MACSB) { // every bank with bank's bank index
      for (int64_t b = 0; b < perChannel; ++b)
        if (b % org.banks == bank % org.banks)
          banks.push_back(b);
    } else { // the bank in every pseudo-channel
      int64_t perPch = perChannel / org.pseudoChannels;
      for (int64_t b = 0; b < perChannel; ++b)
        if (b % perPch == bank % perPch)
          banks.push_back(b);
    }
    mac(channel, banks, a.row, a.column, op.gbOffset, op.reg);
    return;
  }
  case Command::RDACC: {
    if (req->type != RequestType::RdAcc || !checkRegister("rd_acc", op.reg))
      return;
    ChannelState &s = state(channel);
    int64_t n = access / 4;
    if (op.gbOffset < 0 || op.gbOffset + n > units) {
      fail(formatv("functional model: rd_acc reads PIM units {0}..{1}, but "
                   "a channel has {2}",
                   op.gbOffset, op.gbOffset + n - 1, units));
      return;
    }
    std::vector<uint8_t> out(access);
    for (int64_t i = 0; i < n; ++i) {
      float v = takeAccumulator(s, op.gbOffset + i, op.reg);
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      for (int k = 0; k < 4; ++k)
        out[4 * i + k] = static_cast<uint8_t>(bits >> (8 * k));
    }
    if (SparseMemory *r = regionRange(access))
      r->write(op.offset, out);
    return;
  }
  case Command::MVSB:
    if (req->type == RequestType::MvSB)
      moveToSoftmax(channel, op.gbOffset, op.reg);
    return;
  case Command::SFM: {
    if (req->type != RequestType::Sfm)
      return;
    if (op.alibiScale != 0.0f) {
      biasScores(channel, op);
      return;
    }
    if (op.cap != 0.0f) {
      capScores(channel, op.length, op.cap);
      return;
    }
    float stats[2] = {0.0f, 0.0f};
    if (!softmaxUnit(channel, op.length, op.fn, stats) || op.region < 0)
      return;
    // Statistics (1.4): [max, sum] as two little-endian fp32 at data=.
    std::vector<uint8_t> out(8);
    for (int k = 0; k < 2; ++k) {
      uint32_t bits;
      std::memcpy(&bits, &stats[k], 4);
      for (int j = 0; j < 4; ++j)
        out[4 * k + j] = static_cast<uint8_t>(bits >> (8 * j));
    }
    if (SparseMemory *r = regionRange(8))
      r->write(op.offset, out);
    return;
  }
  case Command::MVGB:
    if (req->type == RequestType::MvGB)
      moveToGlobalBuffer(channel);
    return;
  case Command::RD: {
    if (req->type != RequestType::Read)
      return;
    if (SparseMemory *r = regionRange(access)) {
      std::vector<uint8_t> bytes(access);
      dram.read(req->addr, bytes);
      r->write(op.offset, bytes);
    }
    return;
  }
  case Command::WR: {
    if (req->type != RequestType::Write)
      return;
    if (SparseMemory *r = regionRange(access)) {
      std::vector<uint8_t> bytes(access);
      r->read(op.offset, bytes);
      dram.write(req->addr, bytes);
    }
    return;
  }
  default:
    return;
  }
}
