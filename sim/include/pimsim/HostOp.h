//===- HostOp.h - typed host ops of host kernels (ABI) ----------*- C++ -*-===//
//
// A host kernel of a compiled model runs a list of host ops, in order, on
// the program's `act` region (docs/backend-abi.md, "Host kernels"): the
// embedding lookup, norms, rope, the gated activation, the packing of PIM
// inputs, the V staging of a KV append, partial sums, the split-attention
// merge, host GEMVs, the logits mark and calls of outlined host functions.
//
// Program format 2.0 stores them as typed flatbuffers tables (HostOp in
// sim/schema/program.fbs): the compiler builds them, the runtime executes
// them, nobody parses JSON. Like Instruction, a HostOp is a flat record:
// hostOpFields(kind) lists the fields a kind takes, with their keys (the
// text form's and the pim dialect's); every other field keeps its default.
// hostOpProblems checks each value against its domain and the program
// (buffers inside `act`, tensors and parameters that exist, lengths that
// agree). Checkpoint tensors the ops read on the host (embedding tables,
// norm weights, biases) are listed once in Program::hostTensors.
//
//===----------------------------------------------------------------------===//
#ifndef PIMSIM_HOSTOP_H
#define PIMSIM_HOSTOP_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pimsim {

struct Program;

/// Element formats of act-region buffers.
/// I32 (2.3): integers, e.g. the experts moe_route selects.
enum class ElemFormat : uint8_t { F32, FP16, BF16, I32 };
constexpr unsigned kNumElemFormats = 4;
llvm::StringRef
elemFormatName(ElemFormat format); // "f32", "fp16", "bf16", "i32"
std::optional<ElemFormat> parseElemFormat(llvm::StringRef name);
unsigned elemFormatBytes(ElemFormat format);

/// `elements` values of `format` at byte `offset` of the act region.
struct ActBuffer {
  int64_t offset = 0, elements = 0;
  ElemFormat format = ElemFormat::F32;
  int64_t bytes() const { return elements * elemFormatBytes(format); }
  bool operator==(const ActBuffer &o) const {
    return offset == o.offset && elements == o.elements && format == o.format;
  }
  bool operator!=(const ActBuffer &o) const { return !(*this == o); }
};

/// A checkpoint tensor host ops read as f32, with the shape the program was
/// compiled for.
struct HostTensor {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elements() const; // saturates at INT64_MAX
  bool operator==(const HostTensor &o) const {
    return name == o.name && shape == o.shape;
  }
};

enum class HostOpKind : uint8_t {
  Embedding,
  RmsNorm,
  Add,
  Rope,
  GatedAct,
  Pack,
  VStage,
  Sum,
  Linear,
  Logits,
  AttnCombine,
  Call,
  LayerNorm,
  MoeRoute // (2.3)
};
constexpr unsigned kNumHostOpKinds = 14;
llvm::StringRef hostOpKindName(HostOpKind kind); // "embedding", "rms_norm"..
std::optional<HostOpKind> parseHostOpKind(llvm::StringRef name);

/// ClampedSwiglu (2.3, gpt-oss): (clamp(up, -L, L) + 1) * g * sigmoid(a g)
/// with g = min(gate, L), L the op's `limit`, a its `alpha`.
enum class GatedActFn : uint8_t { Silu, Gelu, GeluTanh, ClampedSwiglu };
constexpr unsigned kNumGatedActFns = 4;
/// "silu", "gelu", "gelu_tanh", "clamped_swiglu"
llvm::StringRef gatedActName(GatedActFn fn);
std::optional<GatedActFn> parseGatedAct(llvm::StringRef name);

enum class RopeKind : uint8_t {
  Default,
  Linear,
  Dynamic,
  Yarn,
  Llama3,
  LongRope
};
constexpr unsigned kNumRopeKinds = 6;
llvm::StringRef ropeKindName(RopeKind kind); // "default", "yarn", ...
std::optional<RopeKind> parseRopeKind(llvm::StringRef name);

/// A rotary embedding: the fields of the reference's RopeParams
/// (pimc/Numerics/Kernels.h), with its defaults.
struct RopeSpec {
  RopeKind kind = RopeKind::Default;
  bool interleaved = false;
  int64_t rotaryDim = 0;
  double theta = 10000.0, factor = 1.0;
  int64_t originalMaxPositionEmbeddings = 0, maxPositionEmbeddings = 0;
  double lowFreqFactor = 1.0, highFreqFactor = 4.0;
  double betaFast = 32.0, betaSlow = 1.0;
  std::optional<double> attentionFactor, mscale, mscaleAllDim;
  bool truncate = true;
  std::vector<double> shortFactor, longFactor; // longrope: rotary_dim / 2
  bool operator==(const RopeSpec &o) const;
};

/// An argument or result of a `call`: a buffer with the function's shape
/// for it, or (arguments only) the `pos` / `token` parameter.
struct CallValue {
  enum class Kind : uint8_t { Buffer, Position, Token };
  Kind kind = Kind::Buffer;
  ActBuffer buffer; // Kind::Buffer
  std::vector<int64_t> shape;
  bool operator==(const CallValue &o) const {
    return kind == o.kind && buffer == o.buffer && shape == o.shape;
  }
};

/// The fields of a host op; which ones a kind takes: hostOpFields.
enum class HostField : uint8_t {
  In,
  Out,
  A,
  B,
  Tensor,
  BOrTensor, // add: `b` is a buffer or a host tensor
  Eps,
  Groups,
  Gemma,
  Clear,
  Heads,
  HeadDim,
  Replicas,
  Rope,
  Act,
  Blocks,
  Block,
  InStride,
  OutStride,
  Replicate,
  Scale,
  Lanes,
  Param,
  Parts,
  PartKeys,
  Source,
  Mlir,
  Args,
  Results,
  WeightBytes,
  Flops,
  Experts, // (2.3) moe_route: a written buffer
  TopK,
  Sigmoid,
  TopkFirst,
  Renormalize
};

/// What a field's value is.
enum class HostFieldType : uint8_t {
  Buffer,
  Tensor,
  BufferOrTensor,
  Int,
  Float,
  Bool,
  Rope, // a RopeSpec
  Act,  // a GatedActFn
  Param,
  String,
  CallValues
};
HostFieldType hostFieldType(HostField field);

/// One field a kind takes: its key, whether it must be given (an optional
/// field defaults to the HostOp member's initial value), and for integers
/// the smallest valid value.
struct HostFieldSpec {
  llvm::StringRef key;
  HostField field;
  bool required = true;
  int64_t min = 0;
};
llvm::ArrayRef<HostFieldSpec> hostOpFields(HostOpKind kind);
/// The spec of the field `key` of `kind`, or null.
const HostFieldSpec *findHostField(HostOpKind kind, llvm::StringRef key);

/// One host op. A flat record: hostOpFields(kind) says which fields mean
/// something (the comments give each kind's keys); the rest stay at their
/// defaults.
struct HostOp {
  HostOpKind kind = HostOpKind::Logits;
  ActBuffer in, out;
  ActBuffer a, b;      // add a, b; gated_act gate, up; attn_combine stats (b);
                       // sum weights (b, 2.3)
  int64_t tensor = -1; // Program::hostTensors: embedding table, norm and
                       // linear weight, add b
  float eps = 0;       // rms_norm, layer_norm
  int64_t groups = 1;  // norms: vectors; v_stage: staging column groups
  bool gemma = false;  // rms_norm: (1 + w)
  bool clear = true;   // v_stage: zero the staging when a column starts
  int64_t heads = 0, headDim = 0; // rope, v_stage; attn_combine (`block`)
  int64_t replicas = 1;           // v_stage: device copies of a KV head
  RopeSpec rope;
  GatedActFn act = GatedActFn::Silu;
  int64_t blocks = 0, block = 0; // pack
  int64_t inStride = 0;          // pack in_stride; sum, attn_combine `stride`
  int64_t outStride = 0;         // pack out_stride; attn_combine `stats_stride`
  int64_t replicate = 1;         // pack
  float scale = 1;               // pack
  int64_t lanes = 0;             // v_stage
  int64_t param = -1;   // Program::params: v_stage slot, attn_combine pos
  int64_t parts = 0;    // sum, attn_combine
  int64_t partKeys = 0; // attn_combine
  std::string source;   // call: the llm op names, joined by '+'
  std::string mlir;     // call: `module { func.func @host ... }`
  std::vector<CallValue> args, results; // call
  int64_t weightBytes = 0, flops = 0;   // call: for the host time
  // (2.3) moe_route: the router's logits `in` [E] give the top_k selected
  // experts (ascending index, i32) in `experts` and their weights in `out`,
  // as ref::routeToken computes them (`scale`: routed_scaling_factor).
  ActBuffer experts;
  int64_t topK = 0;
  bool sigmoid = false, topkFirst = false, renormalize = false;

  bool operator==(const HostOp &o) const;
  bool operator!=(const HostOp &o) const { return !(*this == o); }
};

/// Whether `field` of `op` holds its default value.
bool hostFieldIsDefault(const HostOp &op, HostField field);

/// The member behind `field`, for readers that fill an op field by field
/// (the text form, the pim dialect); null when `field` has another type.
/// B is the buffer of BOrTensor, Tensor its tensor.
ActBuffer *hostBufferField(HostOp &op, HostField field);
int64_t *hostIntField(HostOp &op, HostField field);
float *hostFloatField(HostOp &op, HostField field);
bool *hostBoolField(HostOp &op, HostField field);
std::string *hostStringField(HostOp &op, HostField field);
std::vector<CallValue> *hostCallValuesField(HostOp &op, HostField field);
const ActBuffer *hostBufferField(const HostOp &op, HostField field);
const int64_t *hostIntField(const HostOp &op, HostField field);
const float *hostFloatField(const HostOp &op, HostField field);
const bool *hostBoolField(const HostOp &op, HostField field);
const std::string *hostStringField(const HostOp &op, HostField field);
const std::vector<CallValue> *hostCallValuesField(const HostOp &op,
                                                  HostField field);

/// Calls `fn` with each act buffer of `op` (the fields its kind takes, a
/// call's buffer arguments and results) and whether the op writes it (`out`
/// and a call's results: every element) or only reads it, in the order the
/// op touches them. An op that keeps the elements of `out` it does not
/// write (read-modify-write: `v_stage`, and a `pack` that leaves gaps) has
/// its `out` visited as read, then as written. Empty buffers and host tensors
/// are not visited. A schedule orders kernels by these (pim-schedule), and a
/// memory plan finds which buffers hold a value from an earlier run
/// (pim-plan-memory).
void forEachHostBuffer(
    const HostOp &op,
    llvm::function_ref<void(const ActBuffer &buffer, bool written)> fn);

/// The fields of a RopeSpec by key ("kind", "interleaved", "rotary_dim",
/// "theta", ..., as in Hugging Face's rope_scaling), each with its member:
/// exactly one pointer is set. kind is required, and rotary_dim; every
/// other key defaults to RopeSpec's value (an optional double: absent).
struct RopeField {
  llvm::StringRef key;
  bool required = false;
  int64_t RopeSpec::*integer = nullptr;
  double RopeSpec::*number = nullptr;
  std::optional<double> RopeSpec::*optional = nullptr;
  bool RopeSpec::*boolean = nullptr;
  std::vector<double> RopeSpec::*list = nullptr; // empty: absent
  bool isKind() const {
    return !integer && !number && !optional && !boolean && !list;
  }
};
llvm::ArrayRef<RopeField> ropeFields();

/// What is wrong with op `op` of a kernel of `program`, one message each
/// ("'out' has 4096 elements, the table's H is 2048"); empty when nothing
/// is. Checks fields the kind does not take keep their defaults, integer
/// minimums, formats, lengths, that buffers lie inside region `act`,
/// tensor and parameter indices, and the shapes of tensors and call
/// values. checkProgram reports them with the kernel and the op.
std::vector<std::string> hostOpProblems(const HostOp &op,
                                        const Program &program);

} // namespace pimsim

#endif // PIMSIM_HOSTOP_H
