//===- PIMDialect.cpp - the pim dialect: ops and verifiers ----------------===//
#include "pimc/Dialect/PIM/IR/PIMDialect.h"
#include "pimc/Dialect/PIM/IR/PIMHostOp.h"

#include "pimsim/Program.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

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
  // Each host op, field by field, as serialization reads it (PIMHostOp.h),
  // here rather than in pim.host_op's own verifier so that the parameters it
  // names are looked up in one set (a symbol lookup per host op would make
  // verification quadratic). The checks that need the whole program (buffers
  // inside act, lengths) run when the program is serialized
  // (pimsim::hostOpProblems).
  llvm::StringSet<> params, buffers;
  for (auto p : getBody().front().getOps<ParamOp>())
    params.insert(p.getSymName());
  for (auto b : getBody().front().getOps<BufferOp>())
    buffers.insert(b.getSymName());
  llvm::StringSet<> regions;
  for (auto r : getBody().front().getOps<RegionOp>())
    regions.insert(r.getSymName());
  WalkResult data = walk([&](MacroOp m) {
    auto d = m.getFields().getAs<DataAttr>("data");
    if (!d || regions.contains(d.getRegion().getValue()) ||
        buffers.contains(d.getRegion().getValue()))
      return WalkResult::advance();
    m.emitOpError() << "field 'data' names unknown region or buffer "
                    << d.getRegion();
    return WalkResult::interrupt();
  });
  if (data.wasInterrupted())
    return failure();
  for (auto k : getBody().front().getOps<KernelOp>())
    for (auto h : k.getBody().front().getOps<HostOp>()) {
      pimsim::HostOp op;
      std::optional<std::string> why = readHostOp(
          h.getName(), h.getArgs(), [](pimsim::HostTensor) { return 0; },
          [&](StringRef name) -> int64_t {
            return params.contains(name) ? 0 : -1;
          },
          [&](StringRef name) -> std::optional<int64_t> {
            if (buffers.contains(name))
              return 0;
            return std::nullopt;
          },
          op);
      if (why)
        return h.emitOpError() << *why;
    }
  return success();
}

LogicalResult ParamOp::verify() {
  if (getMin() > getMax())
    return emitOpError() << "min " << getMin() << " > max " << getMax();
  if (getDiv() < 1)
    return emitOpError("div must be >= 1");
  if (getMod() < 0)
    return emitOpError("mod must be >= 0");
  if (getDevice() &&
      (getSrcAttr() || getAdd() != 0 || getDiv() != 1 || getMod() != 0))
    return emitOpError("a device parameter is not derived (no src, add, div "
                       "or mod)");
  if (getDevice() && (getTiming() < getMin() || getTiming() > getMax()))
    return emitOpError() << "timing " << getTiming() << " is outside ["
                         << getMin() << ", " << getMax() << "]";
  if (!getDevice() && getTiming() != 0)
    return emitOpError("only a device parameter has a timing value");
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

LogicalResult BufferOp::verify() {
  if (getBytes() < 1)
    return emitOpError("bytes must be positive");
  if (getOffset() && *getOffset() < 0)
    return emitOpError("offset must be >= 0");
  return success();
}

llvm::StringMap<int64_t> pimc::pim::placedBuffers(ProgramOp program) {
  llvm::StringMap<int64_t> placed;
  for (auto b : program.getBody().front().getOps<BufferOp>())
    if (std::optional<int64_t> off = b.getOffset())
      placed[b.getSymName()] = *off;
  return placed;
}

std::optional<StringRef> pimc::pim::libraryKernelName(StringRef choice) {
  if (choice == "generated")
    return StringRef();
  if (!choice.consume_front("library:") || choice.empty())
    return std::nullopt;
  return choice;
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
  for (Attribute a :
       getSetsAttr() ? getSetsAttr().getValue() : ArrayRef<Attribute>()) {
    auto set = dyn_cast<DictionaryAttr>(a);
    auto param = set ? set.getAs<FlatSymbolRefAttr>("param") : nullptr;
    auto data = set ? set.getAs<DataAttr>("data") : nullptr;
    auto offset = data ? dyn_cast<IntegerAttr>(data.getOffset()) : nullptr;
    if (!param || !data || set.size() != 2)
      return emitOpError("each of 'sets' is {param = @p, data = "
                         "#pim.data<@buffer, offset>}");
    if (!offset || offset.getInt() < 0 || offset.getInt() % 4 != 0)
      return emitOpError() << "sets @" << param.getValue()
                           << " from an offset that is not a non-negative "
                              "multiple of 4";
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
    if (*field == pimsim::Field::Cap) {
      auto cap = dyn_cast<FloatAttr>(f.getValue());
      if (!cap || !(cap.getValueAsDouble() > 0) ||
          !std::isfinite(cap.getValueAsDouble()))
        return emitOpError("field 'cap' must be a positive finite float");
      continue;
    }
    if (*field == pimsim::Field::AlibiScale) {
      auto scale = dyn_cast<FloatAttr>(f.getValue());
      if (!scale || !(scale.getValueAsDouble() > 0) ||
          !std::isfinite(scale.getValueAsDouble()))
        return emitOpError(
            "field 'alibi_scale' must be a positive finite float");
      continue;
    }
    if (*field == pimsim::Field::Alibi) {
      auto slopes = dyn_cast<DenseF32ArrayAttr>(f.getValue());
      if (!slopes || slopes.empty() ||
          !llvm::all_of(slopes.asArrayRef(),
                        [](float m) { return std::isfinite(m); }))
        return emitOpError("field 'alibi' must be a non-empty array<f32> of "
                           "finite slopes");
      continue;
    }
    if (*field == pimsim::Field::Data) {
      // The region or buffer it names: ProgramOp::verify, with one set of
      // names (buffers are spread over the program: a lookup per macro op
      // would make verification quadratic).
      auto data = dyn_cast<DataAttr>(f.getValue());
      if (!data)
        return emitOpError("field 'data' must be a #pim.data");
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
  // The launchable symbols, once (a lookup per step would scan the whole
  // program for each of its thousands of steps).
  llvm::StringSet<> launchable;
  if (auto program = (*this)->getParentOfType<ProgramOp>())
    for (Operation &op : program.getBody().front())
      if (isa<StreamOp, KernelOp>(op))
        launchable.insert(SymbolTable::getSymbolName(&op).getValue());
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
    if (!launchable.contains(ref.getValue()))
      return emitOpError() << "step @" << ref.getValue()
                           << " is not a stream or kernel";
  }
  return success();
}
