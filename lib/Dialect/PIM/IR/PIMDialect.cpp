//===- PIMDialect.cpp - the pim dialect: ops and verifiers ----------------===//
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "pimsim/Program.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pimc::pim;

#include "pimc/Dialect/PIM/IR/PIMDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "pimc/Dialect/PIM/IR/PIMAttrs.cpp.inc"

void PIMDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "pimc/Dialect/PIM/IR/PIMAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "pimc/Dialect/PIM/IR/PIMOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "pimc/Dialect/PIM/IR/PIMOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

static LogicalResult checkRange(Operation *op, StringRef what,
                                ArrayRef<int64_t> r) {
  if (r.size() != 2 || r[0] < 0 || r[1] < 1)
    return op->emitOpError() << "'" << what
                             << "' must be [first, count] with first >= 0 "
                                "and count >= 1";
  return success();
}

LogicalResult ProgramOp::verify() {
  if (getTarget().empty())
    return emitOpError("needs a target name");
  return success();
}

LogicalResult ParamOp::verify() {
  if (getMin() > getMax())
    return emitOpError() << "min " << getMin() << " > max " << getMax();
  if (getDiv() < 1)
    return emitOpError("div must be >= 1");
  if (getMod() < 0)
    return emitOpError("mod must be >= 0");
  if (auto src = getSrcAttr()) {
    // The source must be a parameter defined earlier in the program.
    bool found = false;
    for (Operation *p = getOperation()->getPrevNode(); p; p = p->getPrevNode())
      if (auto param = dyn_cast<ParamOp>(p))
        if (param.getSymName() == src.getValue())
          found = true;
    if (!found)
      return emitOpError() << "source parameter '" << src.getValue()
                           << "' is not defined before it";
  }
  return success();
}

LogicalResult RegionOp::verify() {
  if (!pimsim::parseRegionKind(getKind()))
    return emitOpError() << "unknown region kind '" << getKind()
                         << "' (weights, kv_cache, activations, scratch)";
  if (failed(checkRange(*this, "channels", getChannels())) ||
      failed(checkRange(*this, "banks", getBanks())) ||
      failed(checkRange(*this, "rows", getRows())))
    return failure();
  if (getBytes() < 1)
    return emitOpError("bytes must be positive");
  return success();
}

LogicalResult WeightOp::verify() {
  auto program = (*this)->getParentOfType<ProgramOp>();
  auto region = dyn_cast_or_null<RegionOp>(
      SymbolTable::lookupSymbolIn(program, getRegionAttr()));
  if (!region)
    return emitOpError() << "region '" << getRegion() << "' is not defined";
  if (getShape().size() != 2 || getShape()[0] < 1 || getShape()[1] < 1)
    return emitOpError("shape must be [N, K] with positive sizes");
  // The layout's K range lies in the tensor's rows.
  GemvRowsAttr layout = getLayout();
  if (layout.getK0() >= getShape()[1] ||
      layout.getKLen() > getShape()[1] - layout.getK0())
    return emitOpError() << "layout elements [" << layout.getK0() << ", "
                         << layout.getK0() << " + " << layout.getKLen()
                         << ") are outside the rows' K = " << getShape()[1];
  if (failed(checkRange(*this, "rows", getRows())))
    return failure();
  return success();
}

LogicalResult KernelOp::verify() {
  if (!pimsim::parseKernelKind(getKind()))
    return emitOpError() << "unknown kernel kind '" << getKind() << "'";
  if (getFlops() < 0 || getBytes() < 0)
    return emitOpError("flops and bytes must be >= 0");
  if (getBody().front().empty())
    return emitOpError("has no host ops");
  for (Operation &op : getBody().front())
    if (!isa<HostOp>(op))
      return op.emitOpError("is not allowed in a host kernel");
  return success();
}

namespace {
struct HostOpSpec {
  StringRef name;
  std::vector<StringRef> required;
};
} // namespace

static const std::vector<HostOpSpec> &hostOpSpecs() {
  static const std::vector<HostOpSpec> specs = {
      {"embedding", {"table", "out"}},
      {"rms_norm", {"in", "out", "weight", "eps"}},
      {"add", {"a", "b", "out"}},
      {"rope", {"in", "out", "heads", "head_dim", "rope"}},
      {"gated_act", {"gate", "up", "out", "act"}},
      {"pack", {"in", "out", "blocks", "block", "in_stride", "out_stride"}},
      {"v_stage", {"in", "out", "heads", "head_dim", "lanes", "param"}},
      {"logits", {"in"}},
      {"sum", {"in", "out", "parts", "stride"}},
      {"linear", {"in", "out", "weight"}},
      {"attn_combine",
       {"in", "stats", "out", "parts", "stride", "heads", "block", "param",
        "part_keys"}},
      {"call", {"source", "mlir", "args", "results", "weight_bytes", "flops"}},
  };
  return specs;
}

static LogicalResult checkBuffer(Operation *op, StringRef key, Attribute attr) {
  auto d = dyn_cast<DictionaryAttr>(attr);
  if (!d)
    return op->emitOpError() << "'" << key << "' must be a dictionary";
  if (d.get("tensor"))
    return success();
  auto off = d.getAs<IntegerAttr>("off");
  auto n = d.getAs<IntegerAttr>("n");
  auto fmt = d.getAs<StringAttr>("fmt");
  if (!off || !n || !fmt || off.getInt() < 0 || n.getInt() < 1)
    return op->emitOpError()
           << "buffer '" << key
           << "' needs off >= 0, n >= 1 and fmt (or a tensor)";
  if (fmt.getValue() != "f32" && fmt.getValue() != "fp16" &&
      fmt.getValue() != "bf16")
    return op->emitOpError() << "buffer '" << key << "' has unknown format '"
                             << fmt.getValue() << "' (f32, fp16, bf16)";
  return success();
}

LogicalResult HostOp::verify() {
  const HostOpSpec *spec = nullptr;
  for (const HostOpSpec &s : hostOpSpecs())
    if (s.name == getName())
      spec = &s;
  if (!spec) {
    std::string known;
    for (const HostOpSpec &s : hostOpSpecs())
      known += (known.empty() ? "" : ", ") + s.name.str();
    return emitOpError() << "unknown host op '" << getName()
                         << "' (known: " << known << ")";
  }
  for (StringRef key : spec->required)
    if (!getArgs().get(key))
      return emitOpError() << "host op '" << getName() << "' needs '" << key
                           << "'";
  for (StringRef key : {"in", "out", "a", "b", "gate", "up"})
    if (Attribute a = getArgs().get(key))
      if (failed(checkBuffer(*this, key, a)))
        return failure();
  // A host call's arguments are buffers or the `pos` / `token` parameter,
  // its results buffers (HostFallback.h).
  for (StringRef key : {"args", "results"}) {
    auto list = getArgs().getAs<ArrayAttr>(key);
    if (!list && getArgs().get(key))
      return emitOpError() << "'" << key << "' must be an array";
    for (Attribute a : list ? list.getValue() : ArrayRef<Attribute>()) {
      auto d = dyn_cast<DictionaryAttr>(a);
      if (!d)
        return emitOpError() << "'" << key << "' entries must be dictionaries";
      if (Attribute buf = d.get("buffer")) {
        if (failed(checkBuffer(*this, key, buf)))
          return failure();
      } else if (auto p = d.getAs<StringAttr>("param");
                 !p || key == "results" ||
                 (p.getValue() != "pos" && p.getValue() != "token")) {
        return emitOpError() << "'" << key
                             << "' entries need a buffer (or, for args, "
                                "param = \"pos\" or \"token\")";
      }
    }
  }
  return success();
}

LogicalResult StreamOp::verify() {
  return checkRange(*this, "channels", getChannels());
}

/// A field value inside `op`: an integer, or a #pim.index whose dims are
/// `ch` and loops around `op` (the loop itself excluded for its count) and
/// whose parameters are pim.params of the program.
static LogicalResult checkIndexField(Operation *op, StringRef key,
                                     Attribute value, unsigned depth) {
  std::string error;
  if (failed(decomposeIndex(value, error)))
    return op->emitOpError() << "field '" << key << "' " << error;
  auto index = dyn_cast<IndexAttr>(value);
  if (!index)
    return success();
  if (index.getMap().getNumDims() > depth + 1)
    return op->emitOpError()
           << "field '" << key << "' uses d" << index.getMap().getNumDims() - 1
           << ", but only " << depth << " loops enclose it (d0 is 'ch')";
  auto program = op->getParentOfType<ProgramOp>();
  for (Attribute p : index.getParams()) {
    auto ref = cast<FlatSymbolRefAttr>(p);
    if (!program || !isa_and_nonnull<ParamOp>(
                        SymbolTable::lookupSymbolIn(program, ref.getAttr())))
      return op->emitOpError() << "field '" << key << "' uses " << ref
                               << ", which is not a pim.param";
  }
  return success();
}

LogicalResult LoopOp::verify() {
  if (auto c = dyn_cast<IntegerAttr>(getCount()); c && c.getInt() < 1)
    return emitOpError("count must be >= 1");
  if (getBody().front().empty())
    return emitOpError("has an empty body");
  for (Operation &op : getBody().front())
    if (!isa<MacroOp, LoopOp>(op))
      return op.emitOpError("is not allowed in a loop");
  return checkIndexField(*this, "count", getCount(), loopDepth(*this));
}

LogicalResult MacroOp::verify() {
  std::optional<pimsim::Opcode> opc = pimsim::parseOpcode(getOp());
  if (!opc || *opc == pimsim::Opcode::Loop || *opc == pimsim::Opcode::Call)
    return emitOpError() << "unknown macro-op '" << getOp() << "'";
  if (!(*this)->getParentOfType<StreamOp>())
    return emitOpError("must be inside a pim.stream");
  for (const pimsim::OperandSpec &spec : pimsim::opcodeOperands(*opc))
    if (spec.required && spec.field != pimsim::Field::Channels &&
        !getFields().get(pimsim::fieldName(spec.field)))
      return emitOpError() << "'" << getOp() << "' needs field '"
                           << pimsim::fieldName(spec.field) << "'";
  unsigned depth = loopDepth(*this);
  for (NamedAttribute f : getFields()) {
    StringRef key = f.getName().getValue();
    std::optional<pimsim::Field> field = pimsim::parseField(key);
    if (!field || !pimsim::opcodeHasField(*opc, *field) ||
        *field == pimsim::Field::Channels)
      return emitOpError() << "'" << getOp() << "' has no field '" << key
                           << "'";
    if (*field == pimsim::Field::Fn) {
      auto s = dyn_cast<StringAttr>(f.getValue());
      if (!s || !pimsim::parseFunction(s.getValue()))
        return emitOpError() << "field 'fn' must name a function";
      continue;
    }
    if (*field == pimsim::Field::Data) {
      auto data = dyn_cast<DataAttr>(f.getValue());
      if (!data)
        return emitOpError("field 'data' must be a #pim.data");
      auto program = (*this)->getParentOfType<ProgramOp>();
      if (!program || !isa_and_nonnull<RegionOp>(SymbolTable::lookupSymbolIn(
                          program, data.getRegion().getAttr())))
        return emitOpError()
               << "field 'data' names unknown region " << data.getRegion();
      if (failed(checkIndexField(*this, "data", data.getOffset(), depth)))
        return failure();
      continue;
    }
    if (failed(checkIndexField(*this, key, f.getValue(), depth)))
      return failure();
  }
  return success();
}

LogicalResult EntryOp::verify() {
  if (getSteps().empty())
    return emitOpError("has no steps");
  auto program = (*this)->getParentOfType<ProgramOp>();
  for (Attribute step : getSteps()) {
    if (auto s = dyn_cast<StringAttr>(step)) {
      if (s.getValue() != "barrier")
        return emitOpError() << "step \"" << s.getValue()
                             << "\" is not a symbol or \"barrier\"";
      continue;
    }
    auto ref = dyn_cast<FlatSymbolRefAttr>(step);
    if (!ref)
      return emitOpError("steps are symbols or \"barrier\"");
    Operation *target = SymbolTable::lookupSymbolIn(program, ref.getAttr());
    if (!isa_and_nonnull<StreamOp, KernelOp>(target))
      return emitOpError() << "step @" << ref.getValue()
                           << " is not a stream or kernel";
  }
  return success();
}
