//===- Functional.cpp - pimsim's functional (data) model ------------------===//
#include "pimsim/Functional.h"
#include "pimsim/Simulator.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstring>

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
      bf16(target.pim.inputFormat == "bf16"),
      treeReduction(target.pim.reduction == "tree") {}

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
    s.acc.assign(units * tgt.pim.lanes, 0.0f);
  }
  return s;
}

float FunctionalModel::element(const uint8_t *p) const {
  uint16_t bits = static_cast<uint16_t>(p[0] | (p[1] << 8)); // little-endian
  return bf16 ? bf16ToFloat(bits) : fp16ToFloat(bits);
}

void FunctionalModel::mac(int64_t channel, ArrayRef<int64_t> banks, int64_t row,
                          int64_t col) {
  ChannelState &s = state(channel);
  const Organization &org = tgt.org;
  int64_t lanes = tgt.pim.lanes;
  int64_t gbElems = tgt.pim.globalBufferBytes / 2;
  std::vector<uint8_t> w(org.accessBytes);
  std::vector<float> x(lanes), p(lanes);
  for (int64_t l = 0; l < lanes; ++l)
    x[l] = element(&s.globalBuffer[2 * ((col * lanes + l) % gbElems)]);
  for (int64_t b : banks) {
    dram.read(encodeAddress(tgt, bankAddress(org, channel, b, row, col)), w);
    for (int64_t l = 0; l < lanes; ++l)
      p[l] = element(&w[2 * l]) * x[l]; // exact in fp32 for fp16 / bf16
    float *a = &s.acc[(b / tgt.pim.banksPerUnit) * lanes];
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
    mac(channel, banks, a.row, a.column);
    return;
  }
  case Command::RDACC: {
    if (req->type != RequestType::RdAcc)
      return;
    ChannelState &s = state(channel);
    int64_t n = access / 4, lanes = tgt.pim.lanes;
    if (op.gbOffset < 0 || op.gbOffset + n > units) {
      fail(formatv("functional model: rd_acc reads PIM units {0}..{1}, but "
                   "a channel has {2}",
                   op.gbOffset, op.gbOffset + n - 1, units));
      return;
    }
    std::vector<uint8_t> out(access);
    for (int64_t i = 0; i < n; ++i) {
      float *acc = &s.acc[(op.gbOffset + i) * lanes];
      float v = treeReduction ? acc[0] : pairwiseSum(ArrayRef(acc, lanes));
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      for (int k = 0; k < 4; ++k)
        out[4 * i + k] = static_cast<uint8_t>(bits >> (8 * k));
      std::fill(acc, acc + lanes, 0.0f);
    }
    if (SparseMemory *r = regionRange(access))
      r->write(op.offset, out);
    return;
  }
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
