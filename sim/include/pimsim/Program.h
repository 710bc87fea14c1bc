//===- Program.h - pimsim programs (compiler/hardware ABI) ------*- C++ -*-===//
//
// A program is what the compiler hands to a PIM device: the target it was
// compiled for, the memory map, where each weight tensor was placed, host
// kernels, per-channel streams of macro-ops and the entry points that
// sequence them. On disk it is a flatbuffer (sim/schema/program.fbs, file
// identifier "PIMB"); `pimsim disasm` / `pimsim asm` convert to and from a
// text form. The macro-op ISA is documented in docs/pimsim-isa.md.
//
// Plain structs: no flatbuffers types leak out of Program.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef PIMSIM_PROGRAM_H
#define PIMSIM_PROGRAM_H

#include "pimsim/HostOp.h"
#include "pimsim/Target.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pimsim {

struct ProgramVersion {
  uint16_t major = 2;
  uint16_t minor = 3;
};
/// The version this pimsim reads (any 2.x) and writes. 1.1 added runtime
/// parameters, `offset` on mac_*, masking sfm and the opaque `params` /
/// `layout` strings of kernels and weight bindings; 1.2 host kernels that
/// run on a near-memory unit (HostKernel::unit / elements); 1.3 the
/// accumulator register `reg` of mac_ab / mac_sb / mac_pb / rd_acc / mv_sb;
/// 1.4 `data=` on sfm (the softmax statistics [max, sum] to a region, for
/// the split-attention combine); 1.5 the model identity; 1.6 stream
/// metadata (StreamInfo) and the typed gemv_rows weight layout (GemvRows).
/// 2.0: typed host ops (HostKernel::ops, Program::hostTensors) instead of
/// JSON strings, and the memory plan (Program::memory); 1.x programs are
/// refused (recompile them). 2.1: the library kernel a stream runs
/// (StreamInfo::kernel). 2.2: `cap=` on sfm (Instruction::cap, the logit
/// softcap applied to each score before the softmax), ALiBi on sfm
/// (`alibi=` slopes, `head=`, `key0=`, `alibi_scale=`), and longrope
/// (RopeKind::LongRope and the rope's short_factor / long_factor lists).
/// 2.3: device parameters (Param::device, Param::timing) and the kernels
/// that set them (HostKernel::sets): addresses chosen by data computed
/// during the run, e.g. the experts a MoE router selects.
constexpr ProgramVersion kProgramVersion{2, 3};

/// Half-open [first, first + count). Printed inclusive: "0-15".
struct Range {
  int64_t first = 0;
  int64_t count = 0;
  int64_t end() const { return first + count; }
  bool contains(int64_t v) const { return v >= first && v < end(); }
  bool operator==(const Range &o) const {
    return first == o.first && count == o.count;
  }
  bool operator!=(const Range &o) const { return !(*this == o); }
};

/// A set of channels as sorted, disjoint, non-empty ranges. Channels are
/// numbered across stacks: stack * org.channels + channel.
using ChannelSet = std::vector<Range>;
bool channelSetContains(const ChannelSet &set, int64_t channel);

/// The DRAM address of (channel, flat bank, row, column). A flat bank index
/// counts banks within a channel, pseudo-channel slowest, then SID, bank
/// group, bank: flat = ((pch * sids + sid) * bankGroups + bg) * banks + bank.
DecodedAddress bankAddress(const Organization &org, int64_t channel,
                           int64_t bank, int64_t row, int64_t col);

/// What the compiler built the program for. `org` must match the target the
/// program runs on exactly; name and hash say which file that was.
struct TargetIdentity {
  std::string name;
  std::string hash; // "sha256:<hex>" of the target file's bytes
  Organization org;

  bool operator==(const TargetIdentity &o) const;
};
/// (1.5) The model a program was compiled from: model type, the config
/// fields that set its numerics (canonical JSON) and a digest of the
/// checkpoint's tensor table (ckpt::WeightStore::tableDigest). Empty: not
/// recorded (hand-written programs, programs before 1.5).
struct ModelIdentity {
  std::string modelType, config, tensors;

  bool empty() const {
    return modelType.empty() && config.empty() && tensors.empty();
  }
  bool operator==(const ModelIdentity &o) const {
    return modelType == o.modelType && config == o.config &&
           tensors == o.tensors;
  }
};

/// The hash stored in TargetIdentity::hash for a target file's contents.
std::string targetContentHash(llvm::StringRef fileBytes);

enum class RegionKind : uint8_t { Weights, KvCache, Activations, Scratch };
llvm::StringRef regionKindName(RegionKind kind); // "weights", "kv_cache", ...
std::optional<RegionKind> parseRegionKind(llvm::StringRef name);

/// A named block of device memory: the same banks and rows in each channel
/// of `channels`. Banks are flat indices within a channel (order pCH, SID,
/// bank group, bank).
struct Region {
  std::string name;
  RegionKind kind = RegionKind::Scratch;
  Range channels, banks, rows;
  int64_t bytes = 0;

  bool operator==(const Region &o) const;
};

enum class Interleave : uint8_t { Channel, Bank };
llvm::StringRef interleaveName(Interleave interleave);
std::optional<Interleave> parseInterleave(llvm::StringRef name);

/// (1.6) The `gemv_rows` weight layout (docs/backend-abi.md, "Weight
/// bindings"): rows [n0, n0 + N) of an output-row stacking are spread over
/// channels [ch0, ch0 + nch) x all banks, each output row's K range
/// [k0, k0 + kLen) in kRows DRAM rows from row0. pimsim does not read it;
/// the runtime places the checkpoint's tensor this way.
struct GemvRows {
  int64_t n0 = 0, ch0 = 0, nch = 1, row0 = 0, kRows = 1;
  int64_t k0 = 0, kLen = 1;
  /// The checkpoint tensor the runtime reads: dense, or GPTQ-packed
  /// (dequantized into the device format when placed).
  enum class Source : uint8_t { Dense, Gptq };
  Source source = Source::Dense;
  int64_t bits = 0, groupSize = 0; // Gptq: 4 or 8; -1: one group over K
  bool sym = false;                // Gptq
  std::string packing;             // Gptq: "gptq" or "gptq_v2"
  std::string scaleType;           // Gptq: "", "f16", "bf16" or "f32"

  bool operator==(const GemvRows &o) const {
    return n0 == o.n0 && ch0 == o.ch0 && nch == o.nch && row0 == o.row0 &&
           kRows == o.kRows && k0 == o.k0 && kLen == o.kLen &&
           source == o.source && bits == o.bits && groupSize == o.groupSize &&
           sym == o.sym && packing == o.packing && scaleType == o.scaleType;
  }
};

/// What is wrong with a gemv_rows layout's values on their own, one message
/// each ("bits is 3, expected 4 or 8"); empty when every value is in its
/// domain. checkProgram and the pim dialect's verifier use it.
std::vector<std::string> gemvRowsProblems(const GemvRows &g);

/// Where a weight tensor lives: the tensor is cut into tiles along `axis`,
/// one tile per (channel, bank) of the region, consecutive tiles going to
/// consecutive channels (Interleave::Channel) or banks (Interleave::Bank);
/// each bank holds its tile in `rows`.
struct WeightBinding {
  std::string tensor;
  int64_t region = 0;
  std::string format; // element format as stored: "bf16", "fp16", "int8"...
  std::vector<int64_t> shape;
  int64_t axis = 0;
  std::vector<int64_t> tile; // elements per dimension of one bank's tile
  Interleave interleave = Interleave::Channel;
  Range rows;
  int64_t offset = 0, bytes = 0; // byte extent within the region
  std::string layout; // (1.1) opaque to pimsim: the compiler's layout name
  /// (1.6) layout "gemv_rows": its parameters, typed.
  std::optional<GemvRows> gemvRows;

  bool operator==(const WeightBinding &o) const;
};

enum class KernelKind : uint8_t {
  Gemm,
  Gemv,
  Softmax,
  RmsNorm,
  LayerNorm,
  Rope,
  Activation,
  Elementwise,
  Embedding,
  Attention,
  Sampling,
  Copy,
  Reduce,
  Other
};
constexpr unsigned kNumKernelKinds = 14;
llvm::StringRef kernelKindName(KernelKind kind); // "gemm", "rmsnorm", ...
std::optional<KernelKind> parseKernelKind(llvm::StringRef name);

enum class OperandRole : uint8_t { Input, Output };

/// Bytes [offset, offset + bytes) of a region.
struct KernelOperand {
  OperandRole role = OperandRole::Input;
  int64_t region = 0;
  int64_t offset = 0, bytes = 0;

  bool operator==(const KernelOperand &o) const;
};

/// (2.3) A device parameter a kernel sets when it completes: the
/// little-endian int32 at `offset` of region `region`.
struct ParamSet {
  int64_t param = 0;
  int64_t region = 0;
  int64_t offset = 0;
  bool operator==(const ParamSet &o) const {
    return param == o.param && region == o.region && offset == o.offset;
  }
};

/// Work done off the PIM units: on the host (GEMM and the like; the host
/// model times it from flops and bytes) or, when `unit` is set (1.2), on
/// that near-memory unit of the target (timed as latency_cycles +
/// ceil(elements / elements_per_cycle) memory cycles, no launch cost).
/// What it computes is `ops` (2.0; pimsim times kernels, the runtime runs
/// the ops).
struct HostKernel {
  std::string name;
  KernelKind kind = KernelKind::Other;
  int64_t m = 0, n = 0, k = 0;
  int64_t flops = 0;
  int64_t bytes = 0; // host memory traffic
  std::vector<KernelOperand> operands;
  std::string unit;     // (1.2) empty: the host; else a near_memory unit name
  int64_t elements = 0; // (1.2) elements the unit processes (timing)
  std::vector<HostOp> ops;    // (2.0)
  std::vector<ParamSet> sets; // (2.3) device parameters it sets

  bool onNearMemory() const { return !unit.empty(); }
  bool operator==(const HostKernel &o) const;
};

/// The macro-op ISA (docs/pimsim-isa.md). Each op is one AttAcc request type
/// or one AiM ISR instruction, with an op size (`count`) so one instruction
/// covers many consecutive columns.
enum class Opcode : uint8_t {
  MacAB,
  MacSB,
  MacPB,
  WrGB,
  WrBias,
  WrAB,
  RdAcc,
  RdAf,
  CopyBkGb,
  CopyGbBk,
  MvSB,
  MvGB,
  Sfm,
  EwMul,
  EwAdd,
  Af,
  Ld,
  St,
  Barrier,
  Sync,
  SetModel,
  SetHead,
  SetCfr,
  Call,
  Loop
};
constexpr unsigned kNumOpcodes = 25;
llvm::StringRef opcodeName(Opcode op); // the mnemonic: "mac_ab", "loop", ...
std::optional<Opcode> parseOpcode(llvm::StringRef mnemonic);

/// Functions of `af` (PIM-unit lookup table) and `sfm` (near-memory unit).
enum class Function : uint8_t {
  Softmax,
  Exp,
  Relu,
  Gelu,
  Silu,
  Sigmoid,
  Tanh,
  LeakyRelu
};
constexpr unsigned kNumFunctions = 8;
llvm::StringRef functionName(Function fn); // "softmax", "leaky_relu", ...
std::optional<Function> parseFunction(llvm::StringRef name);

/// Instruction fields (the text form's keys).
enum class Field : uint8_t {
  Channels,
  Row,
  Col,
  Count,
  Bank,
  Offset,
  Src,
  Bytes,
  Length,
  Fn,
  Reg,
  Value,
  Data,
  Kernel,
  Cap,
  Alibi,
  Head,
  Key0,
  AlibiScale
};
constexpr unsigned kNumFields = 19;
llvm::StringRef fieldName(Field field); // "row", "data", ...
std::optional<Field> parseField(llvm::StringRef name);
/// Fields a loop stride may advance (Data: the data offset; Reg: 1.3).
bool isStridable(Field field);
/// Fields a parameter stride may advance: the stridable ones plus count,
/// length and bytes.
bool isParamStridable(Field field);

/// The fields an opcode takes, in print order. Every other field must keep
/// its default value.
struct OperandSpec {
  Field field;
  bool required; // the text form must give it; always printed
};
llvm::ArrayRef<OperandSpec> opcodeOperands(Opcode op);
bool opcodeHasField(Opcode op, Field field);
/// Whether `op` takes `field` and a loop (channel) stride / a parameter
/// stride may advance it there: isStridable / isParamStridable, except
/// set_cfr's `reg`, which is a fixed register number.
bool isStridable(Opcode op, Field field);
bool isParamStridable(Opcode op, Field field);

/// Stride::loop value naming the executing channel's position within its
/// stream's channel set (0, 1, ...), so each channel can address its own
/// data ("data=act+256*ch" in the text form).
constexpr unsigned kChannelIndex = 255;

/// Stride::loop values kParamBase + p (p < kMaxParams) name runtime
/// parameter p (Program::params) instead of a loop.
constexpr unsigned kParamBase = 128;
constexpr unsigned kMaxParams = 64;
inline bool isParamStride(unsigned loop) {
  return loop >= kParamBase && loop < kParamBase + kMaxParams;
}

/// A runtime parameter (1.1). `src == -1`: an input the caller supplies
/// (resolveParams), within [min, max]. Otherwise derived from parameter
/// `src` (< its own index): clamp(((value(src) + add) floordiv div) % mod
/// (the modulo only if mod > 0, and non-negative), min, max).
/// (2.3) A `device` parameter is neither: the kernels that list it in
/// HostKernel::sets write it during the run (functional mode: the int32 the
/// kernel left at its source; it must lie in [min, max]). It holds `timing`
/// until then, and always in timing-only runs, which compute no data.
struct Param {
  std::string name;
  int64_t min = 0, max = 0;
  int64_t src = -1;
  int64_t add = 0, div = 1, mod = 0;
  bool device = false; // (2.3)
  int64_t timing = 0;  // (2.3) a device parameter's value before it is set

  bool isInput() const { return src < 0 && !device; }
  bool operator==(const Param &o) const {
    return name == o.name && min == o.min && max == o.max && src == o.src &&
           add == o.add && div == o.div && mod == o.mod && device == o.device &&
           timing == o.timing;
  }
};

/// `field` advances by `step` per iteration of the enclosing loop at nesting
/// depth `loop` (0: the outermost loop of the stream), per channel when
/// `loop` is kChannelIndex, or per unit of parameter `loop - kParamBase`.
struct Stride {
  Field field = Field::Row;
  unsigned loop = 0;
  int64_t step = 0;
  bool operator==(const Stride &o) const {
    return field == o.field && loop == o.loop && step == o.step;
  }
};

/// One macro-op. A flat record: opcodeOperands(op) says which fields mean
/// something; the rest stay at their defaults.
struct Instruction {
  Opcode op = Opcode::Barrier;
  ChannelSet channels; // empty: every channel of the stream
  int64_t row = 0, col = 0;
  int64_t count = 1;  // op size: columns, bursts, or loop iterations
  int64_t bank = 0;   // flat bank index within the channel
  int64_t offset = 0; // global-buffer byte offset (mac_*: input base)
  int64_t src = 0;    // second global-buffer byte offset (ew_add)
  int64_t bytes = 0;
  int64_t length = 0; // elements (sfm)
  Function fn = Function::Softmax;
  int64_t reg = 0; // set_cfr: CFR number; mac_* / rd_acc / mv_sb (1.3):
                   // accumulator register of each PIM unit
  int64_t value = 0;
  int64_t dataRegion = -1; // host-visible data: region index, -1 none
  int64_t dataOffset = 0;  // byte offset within dataRegion
  int64_t kernel = 0;      // host kernel index (call)
  /// (2.2) sfm fn=softmax: each score s becomes cap * tanh(s / cap) before
  /// the softmax; 0: no cap. Not an integer field: get(Field::Cap) is 0.
  float cap = 0.0f;
  /// (2.2) sfm fn=softmax, ALiBi: the slopes of the stream's query heads
  /// (empty: no bias). Score i gets bf16(alibi[head] * (key0 + i)) *
  /// alibiScale added before the softmax (docs/pimsim-isa.md).
  std::vector<float> alibi;
  int64_t head = 0; // index into alibi (strided per channel and loop)
  int64_t key0 = 0; // absolute key position of score 0
  float alibiScale = 0.0f;
  std::vector<Stride> strides;   // sorted by (field, loop), steps non-zero
  std::vector<Instruction> body; // loop only

  /// The field's value before strides (Data: the data offset; Channels,
  /// Cap, Alibi and AlibiScale, which are not integers: 0).
  int64_t get(Field field) const;
  void set(Field field, int64_t value);
  /// The field's value in the iteration given by the enclosing loops'
  /// indices (outermost first), on the channel at position `channelIndex`
  /// of the stream's channel set, with parameter values `params` (one per
  /// Program::params, from resolveParams; a missing value counts as 0).
  int64_t at(Field field, llvm::ArrayRef<int64_t> loopIndices,
             int64_t channelIndex = 0,
             llvm::ArrayRef<int64_t> params = {}) const;
  /// Adds a stride, keeping `strides` sorted; steps for the same
  /// (field, loop) add up, and a zero sum removes the stride.
  Instruction &addStride(Field field, unsigned loop, int64_t step);

  static Instruction macAB(int64_t row, int64_t col, int64_t count);
  static Instruction macSB(int64_t bank, int64_t row, int64_t col,
                           int64_t count);
  static Instruction macPB(int64_t bank, int64_t row, int64_t col,
                           int64_t count);
  static Instruction wrGB(int64_t offset, int64_t bytes);
  static Instruction mvSB(int64_t bank, int64_t count);
  static Instruction mvGB(int64_t bank, int64_t count);
  static Instruction sfm(int64_t length, Function fn = Function::Softmax,
                         float cap = 0.0f);
  static Instruction rdAcc(int64_t count);
  static Instruction af(Function fn, int64_t count);
  static Instruction load(int64_t bank, int64_t row, int64_t col,
                          int64_t count);
  static Instruction store(int64_t bank, int64_t row, int64_t col,
                           int64_t count);
  static Instruction barrier();
  static Instruction call(int64_t kernel);
  static Instruction loop(int64_t count, std::vector<Instruction> body);
  static Instruction make(Opcode op); // every field at its default

  bool operator==(const Instruction &o) const;
  bool operator!=(const Instruction &o) const { return !(*this == o); }
};

/// (1.6) What a stream computes, as the compiler knew it, for reports and
/// tools (pimsim does not read it): the model layer ("L0", "head") and op
/// ("qkv", "attention") it belongs to, its part when the op is split over
/// several streams (-1: not split), the work class ("linear", "attention")
/// and the device-memory bytes it streams (weights; for attention the KV
/// cache at full context). (2.1) `kernel`: the library kernel
/// (kernels/*.pimasm) the stream's body was instantiated from, "gemv_fit";
/// empty for the generated lowering. Empty: not recorded.
struct StreamInfo {
  std::string layer, op;
  int64_t part = -1;
  std::string workClass;
  int64_t bytes = 0;
  std::string kernel; // (2.1)

  bool empty() const {
    return layer.empty() && op.empty() && part == -1 && workClass.empty() &&
           bytes == 0 && kernel.empty();
  }
  bool operator==(const StreamInfo &o) const {
    return layer == o.layer && op == o.op && part == o.part &&
           workClass == o.workClass && bytes == o.bytes && kernel == o.kernel;
  }
};

/// Instructions run by every channel of `channels`, each channel on its own.
struct Stream {
  std::string name;
  ChannelSet channels;
  std::vector<Instruction> body;
  StreamInfo info; // (1.6)

  bool operator==(const Stream &o) const;
};

enum class StepKind : uint8_t { Stream, Kernel, Barrier };
struct EntryStep {
  StepKind kind = StepKind::Barrier;
  int64_t index = 0; // into Program::streams or Program::kernels
  bool operator==(const EntryStep &o) const {
    return kind == o.kind && index == o.index;
  }
};

/// A named entry point ("prefill", "decode"): streams and kernels launched
/// in order; everything launched before a barrier step completes before
/// anything after it starts.
struct Entry {
  std::string name;
  std::vector<EntryStep> steps;

  bool operator==(const Entry &o) const;
};

/// (2.0) The compiler's memory plan, as reports need it: the bytes a token
/// must move (one copy of every weight; K and V of every position) and how
/// much of the regions is in use. Zero: not recorded.
struct MemoryPlan {
  int64_t maxContext = 0;         // positions the KV cache holds
  int64_t weightBytes = 0;        // device-resident weights, one copy
  int64_t kvBytes = 0;            // the KV cache at maxContext, one copy
  int64_t kvLayers = 0;           // attention layers with a device KV cache
  int64_t kvBytesPerPosition = 0; // K and V of one position, all layers
  int64_t actBytes = 0;           // activation slots in use
  /// (2.3) The weight bytes a token streams when fewer than weightBytes
  /// (an MoE streams its selected experts of the E resident); 0: all.
  int64_t streamedWeightBytes = 0;

  bool empty() const { return *this == MemoryPlan(); }
  /// The weight bytes one token reads.
  int64_t weightBytesPerToken() const {
    return streamedWeightBytes ? streamedWeightBytes : weightBytes;
  }
  bool operator==(const MemoryPlan &o) const {
    return maxContext == o.maxContext && weightBytes == o.weightBytes &&
           kvBytes == o.kvBytes && kvLayers == o.kvLayers &&
           kvBytesPerPosition == o.kvBytesPerPosition &&
           actBytes == o.actBytes &&
           streamedWeightBytes == o.streamedWeightBytes;
  }
};

struct Program {
  ProgramVersion version =
      kProgramVersion; // as read; writers stamp kProgramVersion
  TargetIdentity target;
  std::vector<Region> regions;
  std::vector<WeightBinding> weights;
  std::vector<HostKernel> kernels;
  std::vector<Stream> streams;
  std::vector<Entry> entries;
  std::vector<Param> params;           // (1.1) at most kMaxParams
  ModelIdentity model;                 // (1.5)
  std::vector<HostTensor> hostTensors; // (2.0) read by host ops, each once
  MemoryPlan memory;                   // (2.0)

  /// Index of the host tensor named `name`, or -1.
  int64_t hostTensorIndex(llvm::StringRef name) const;
  /// Index of the parameter named `name`, or -1.
  int64_t paramIndex(llvm::StringRef name) const;

  bool operator==(const Program &o) const;
  bool operator!=(const Program &o) const { return !(*this == o); }
};

/// The most requests and loop iterations one stream may expand to over all
/// its channels, and one run of an entry in total (docs/pimsim-isa.md):
/// bounds simulation time and memory for any input.
constexpr int64_t kMaxExpandedWork = int64_t(1) << 30;

/// Binary form. Reading verifies the flatbuffer before touching it and then
/// checks the program's structure (checkProgram); errors name `sourceName`.
llvm::Expected<Program> readProgram(llvm::StringRef path);
llvm::Expected<Program> parseProgramBuffer(llvm::ArrayRef<uint8_t> buffer,
                                           llvm::StringRef sourceName);
llvm::Expected<std::vector<uint8_t>> serializeProgram(const Program &program);
/// Writes a temporary file and renames it over `path` ("-": stdout).
llvm::Error writeProgram(const Program &program, llvm::StringRef path);

/// Target-independent structure: every index refers to something, every
/// name is unique and printable, every field is one its op takes, every
/// enum value is known, ranges are non-empty and channel sets sorted.
/// Programs that pass print and re-read exactly.
llvm::Error checkProgram(const Program &program);

/// checkProgram plus everything that needs the target: the organisation
/// matches, channels, banks, rows, columns, buffer offsets and region
/// extents are in range for every loop iteration, loop counts are positive,
/// regions do not overlap, entries are non-empty.
llvm::Error validateProgram(const Program &program, const Target &target);

/// The value of every parameter (one per Program::params, in order) from
/// the caller's input parameters (device parameters: their `timing`
/// value). Errors: an input parameter missing from `inputs` ("entry needs
/// parameter 'pos'"), a name in `inputs` that is not an input parameter, a
/// value outside [min, max].
llvm::Expected<std::vector<int64_t>>
resolveParams(const Program &program,
              const std::map<std::string, int64_t> &inputs);

/// (2.3) Recomputes the derived parameters of `values` (program order)
/// after a device parameter changed.
void updateDerivedParams(const Program &program, std::vector<int64_t> &values);

/// Text form (ProgramText.cpp). printProgram is the disassembler;
/// parseProgramText the assembler, with errors "file:line:col: message".
/// print -> parse -> print is the identity.
void printProgram(const Program &program, llvm::raw_ostream &os);
llvm::Expected<Program> parseProgramText(llvm::StringRef text,
                                         llvm::StringRef sourceName);

} // namespace pimsim

#endif // PIMSIM_PROGRAM_H
