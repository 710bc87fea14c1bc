//===- Serialize.cpp - pim.program -> pimsim program ----------------------===//
//
// The pim dialect mirrors the program format one to one, so serialization
// builds the pimsim::Program directly: symbols become indices, #pim.index
// fields become a base plus strides, host-op dictionaries become typed host
// ops (readHostOp, PIMHostOp.h), the program's memory-plan attributes its
// MemoryPlan. The result is validated against the target.
//
//===----------------------------------------------------------------------===//
#include "pimc/Backend/Backend.h"
#include "pimc/Dialect/PIM/IR/PIMDialect.h"
#include "pimc/Dialect/PIM/IR/PIMHostOp.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pimc;

namespace {

pimsim::Range range(ArrayRef<int64_t> r) { return {r[0], r[1]}; }

llvm::Error fail(Operation *op, const Twine &message) {
  std::string where;
  llvm::raw_string_ostream os(where);
  os << op->getName() << " at " << op->getLoc();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 where + ": " + message);
}

class Serializer {
public:
  Serializer(pim::ProgramOp op, const pimsim::Target &target)
      : op(op), target(target) {}

  llvm::Expected<pimsim::Program> run();

private:
  void identity();
  llvm::Error param(pim::ParamOp p);
  llvm::Error region(pim::RegionOp r);
  llvm::Error weight(pim::WeightOp w);
  llvm::Error kernel(pim::KernelOp k);
  llvm::Error body(Block &block, std::vector<pimsim::Instruction> &out);
  llvm::Error macro(pim::MacroOp m, pimsim::Instruction &inst);
  /// Sets `field` of `inst` from an integer or #pim.index (`owner` for
  /// errors).
  llvm::Error field(Operation *owner, pimsim::Instruction &inst,
                    pimsim::Field field, Attribute value, int64_t add = 0);
  llvm::Error entry(pim::EntryOp e);
  /// (2.1) The library kernel a stream runs, from its `pim.kernel`
  /// attribute.
  llvm::Error streamKernel(pim::StreamOp s, std::string &out);
  llvm::Expected<int64_t> lookup(const llvm::StringMap<int64_t> &table,
                                 Operation *owner, StringRef what,
                                 FlatSymbolRefAttr ref);
  /// Where a #pim.data points: the region's index and the byte its offset
  /// counts from (a placed pim.buffer is bytes of act from its offset).
  struct DataBase {
    int64_t region = 0, base = 0;
  };
  llvm::Expected<DataBase> dataBase(Operation *owner, pim::DataAttr data);

  pim::ProgramOp op;
  const pimsim::Target &target;
  pimsim::Program p;
  llvm::StringMap<int64_t> regions, kernels, streams;
  llvm::StringMap<int64_t> buffers; // placed pim.buffers: offset in act
  FlatSymbolRefAttr act;            // the region they are placed in
};

llvm::Expected<pimsim::Program> Serializer::run() {
  identity();
  buffers = pim::placedBuffers(op);
  act = FlatSymbolRefAttr::get(op.getContext(), "act");
  Block &block = op.getBody().front();
  for (Operation &o : block) {
    llvm::Error err =
        llvm::TypeSwitch<Operation *, llvm::Error>(&o)
            .Case([&](pim::ParamOp x) { return param(x); })
            .Case([&](pim::RegionOp x) { return region(x); })
            .Case([&](pim::WeightOp x) { return weight(x); })
            .Case([&](pim::KernelOp x) { return kernel(x); })
            .Case([&](pim::BufferOp x) {
              return x.getOffset()
                         ? llvm::Error::success()
                         : fail(x, "buffer @" + x.getSymName() +
                                       " is not placed (run pim-plan-memory)");
            })
            .Default([](Operation *) { return llvm::Error::success(); });
    if (err)
      return err;
  }
  // Streams, then entries: an entry may name any stream or kernel.
  for (auto s : block.getOps<pim::StreamOp>()) {
    pimsim::Stream stream;
    stream.name = s.getSymName().str();
    stream.channels = {range(s.getChannels())};
    stream.info.layer = s.getLayer().value_or("").str();
    stream.info.op = s.getOp().value_or("").str();
    stream.info.part = s.getPart().value_or(-1);
    stream.info.bytes = s.getBytes().value_or(0);
    if (auto dispatch = s.getDispatchAttr())
      if (auto cls = dispatch.getAs<StringAttr>("class"))
        stream.info.workClass = cls.getValue().str();
    if (llvm::Error err = streamKernel(s, stream.info.kernel))
      return err;
    if (llvm::Error err = body(s.getBody().front(), stream.body))
      return err;
    streams[stream.name] = p.streams.size();
    p.streams.push_back(std::move(stream));
  }
  for (auto e : block.getOps<pim::EntryOp>())
    if (llvm::Error err = entry(e))
      return err;
  if (llvm::Error err = pimsim::validateProgram(p, target))
    return err;
  return std::move(p);
}

/// pim-select-kernels' choice, copied onto the stream by pim-build-program:
/// "library:<name>" records <name>; "generated" (and no attribute) records
/// nothing.
llvm::Error Serializer::streamKernel(pim::StreamOp s, std::string &out) {
  Attribute attr = s->getAttr(pim::kKernelAttrName);
  if (!attr)
    return llvm::Error::success();
  auto choice = dyn_cast<StringAttr>(attr);
  if (!choice)
    return fail(s, "pim.kernel is not a string");
  std::optional<StringRef> name = pim::libraryKernelName(choice.getValue());
  if (!name)
    return fail(s, "pim.kernel is '" + choice.getValue() +
                       "', expected \"generated\" or \"library:<name>\"");
  out = name->str();
  return llvm::Error::success();
}

void Serializer::identity() {
  p.target.name = op.getTarget().str();
  p.target.hash = op.getTargetHash().empty() ? std::string("sha256:0")
                                             : op.getTargetHash().str();
  p.target.org = target.org;
  auto i64 = [&](StringRef name) {
    auto a = op->getAttrOfType<IntegerAttr>(name);
    return a ? a.getInt() : 0;
  };
  pimsim::MemoryPlan &m = p.memory;
  m.maxContext = i64("pim.max_context");
  m.weightBytes = i64("pim.weight_bytes");
  m.kvBytes = i64("pim.kv_bytes");
  m.kvLayers = i64("pim.kv_layers");
  m.kvBytesPerPosition = i64("pim.kv_bytes_per_position");
  m.streamedWeightBytes = i64("pim.streamed_weight_bytes");
  m.actBytes = i64("pim.act_bytes");
  auto module = op->getParentOfType<ModuleOp>();
  if (!module)
    return;
  auto attr = [&](StringRef name) {
    auto s = module->getAttrOfType<StringAttr>(name);
    return s ? s.getValue().str() : std::string();
  };
  p.model.modelType = attr("llm.model_type");
  if (!p.model.modelType.empty()) {
    p.model.config = attr("llm.source_config");
    p.model.tensors = attr("llm.source_tensors");
  }
}

llvm::Expected<int64_t>
Serializer::lookup(const llvm::StringMap<int64_t> &table, Operation *owner,
                   StringRef what, FlatSymbolRefAttr ref) {
  auto it = table.find(ref.getValue());
  if (it == table.end())
    return fail(owner, "unknown " + what + " @" + ref.getValue());
  return it->second;
}

llvm::Expected<Serializer::DataBase> Serializer::dataBase(Operation *owner,
                                                          pim::DataAttr data) {
  FlatSymbolRefAttr region = data.getRegion();
  int64_t base = 0;
  if (auto it = buffers.find(region.getValue()); it != buffers.end()) {
    region = act;
    base = it->second;
  }
  llvm::Expected<int64_t> index = lookup(regions, owner, "region", region);
  if (!index)
    return index.takeError();
  return DataBase{*index, base};
}

llvm::Error Serializer::param(pim::ParamOp x) {
  pimsim::Param prm;
  prm.name = x.getSymName().str();
  prm.min = x.getMin();
  prm.max = x.getMax();
  if (auto src = x.getSrcAttr()) {
    prm.src = p.paramIndex(src.getValue());
    if (prm.src < 0)
      return fail(x,
                  "parameter @" + src.getValue() + " is not defined before it");
    prm.add = x.getAdd();
    prm.div = x.getDiv();
    prm.mod = x.getMod();
  }
  prm.device = x.getDevice();
  prm.timing = x.getTiming();
  p.params.push_back(std::move(prm));
  return llvm::Error::success();
}

llvm::Error Serializer::region(pim::RegionOp x) {
  pimsim::Region r;
  r.name = x.getSymName().str();
  std::optional<pimsim::RegionKind> kind = pimsim::parseRegionKind(x.getKind());
  if (!kind)
    return fail(x, "unknown region kind '" + x.getKind() + "'");
  r.kind = *kind;
  r.channels = range(x.getChannels());
  r.banks = range(x.getBanks());
  r.rows = range(x.getRows());
  r.bytes = x.getBytes();
  regions[r.name] = p.regions.size();
  p.regions.push_back(std::move(r));
  return llvm::Error::success();
}

llvm::Error Serializer::weight(pim::WeightOp x) {
  pimsim::WeightBinding w;
  w.tensor = x.getTensor().str();
  llvm::Expected<int64_t> region =
      lookup(regions, x, "region", x.getRegionAttr());
  if (!region)
    return region.takeError();
  w.region = *region;
  w.format = x.getFormat().str();
  w.shape.assign(x.getShape().begin(), x.getShape().end());
  w.rows = range(x.getRows());
  w.bytes = x.getBytes();
  w.layout = "gemv_rows";
  w.gemvRows = x.getLayout().toABI();
  p.weights.push_back(std::move(w));
  return llvm::Error::success();
}

llvm::Error Serializer::kernel(pim::KernelOp x) {
  pimsim::HostKernel k;
  k.name = x.getSymName().str();
  std::optional<pimsim::KernelKind> kind = pimsim::parseKernelKind(x.getKind());
  if (!kind)
    return fail(x, "unknown kernel kind '" + x.getKind() + "'");
  k.kind = *kind;
  k.flops = x.getFlops();
  k.bytes = x.getBytes();
  if (auto unit = x.getUnitAttr()) {
    k.unit = unit.getValue().str();
    k.elements = x.getElements();
  }
  for (auto h : x.getBody().front().getOps<pim::HostOp>()) {
    // A tensor read by several ops is listed once, with one shape.
    std::string clash;
    auto intern = [&](pimsim::HostTensor t) -> int64_t {
      int64_t i = p.hostTensorIndex(t.name);
      if (i < 0) {
        p.hostTensors.push_back(std::move(t));
        return int64_t(p.hostTensors.size()) - 1;
      }
      if (p.hostTensors[i].shape != t.shape)
        clash = "host tensor '" + t.name + "' is read with two shapes";
      return i;
    };
    auto param = [&](StringRef name) { return p.paramIndex(name); };
    pimsim::HostOp op;
    std::optional<std::string> why = pim::readHostOp(
        h.getName(), h.getArgs(), intern, param, pim::lookupIn(buffers), op);
    if (why || !clash.empty())
      return fail(h, why ? *why : clash);
    k.ops.push_back(std::move(op));
  }
  if (auto sets = x.getSetsAttr())
    for (Attribute a : sets) {
      auto set = cast<DictionaryAttr>(a); // shapes checked by the verifier
      auto data = set.getAs<pim::DataAttr>("data");
      pimsim::ParamSet ps;
      StringRef name = set.getAs<FlatSymbolRefAttr>("param").getValue();
      ps.param = p.paramIndex(name);
      if (ps.param < 0)
        return fail(x, "sets unknown parameter @" + name);
      llvm::Expected<DataBase> at = dataBase(x, data);
      if (!at)
        return at.takeError();
      ps.region = at->region;
      ps.offset = at->base + cast<IntegerAttr>(data.getOffset()).getInt();
      k.sets.push_back(ps);
    }
  kernels[k.name] = p.kernels.size();
  p.kernels.push_back(std::move(k));
  return llvm::Error::success();
}

llvm::Error Serializer::body(Block &block,
                             std::vector<pimsim::Instruction> &out) {
  for (Operation &o : block) {
    if (auto l = dyn_cast<pim::LoopOp>(o)) {
      pimsim::Instruction inst =
          pimsim::Instruction::make(pimsim::Opcode::Loop);
      if (llvm::Error err = field(l, inst, pimsim::Field::Count, l.getCount()))
        return err;
      if (llvm::Error err = body(l.getBody().front(), inst.body))
        return err;
      out.push_back(std::move(inst));
      continue;
    }
    auto m = dyn_cast<pim::MacroOp>(o);
    if (!m)
      return fail(&o, "is not a macro-op or loop");
    std::optional<pimsim::Opcode> opc = pimsim::parseOpcode(m.getOp());
    if (!opc)
      return fail(m, "unknown macro-op '" + m.getOp() + "'");
    pimsim::Instruction inst = pimsim::Instruction::make(*opc);
    if (llvm::Error err = macro(m, inst))
      return err;
    out.push_back(std::move(inst));
  }
  return llvm::Error::success();
}

llvm::Error Serializer::macro(pim::MacroOp m, pimsim::Instruction &inst) {
  for (NamedAttribute f : m.getFields()) {
    std::optional<pimsim::Field> key =
        pimsim::parseField(f.getName().getValue());
    if (!key)
      return fail(m, "unknown field '" + f.getName().getValue() + "'");
    if (*key == pimsim::Field::Fn) {
      auto name = dyn_cast<StringAttr>(f.getValue());
      std::optional<pimsim::Function> fn =
          name ? pimsim::parseFunction(name.getValue()) : std::nullopt;
      if (!fn)
        return fail(m, "field 'fn' must name a function");
      inst.fn = *fn;
      continue;
    }
    if (*key == pimsim::Field::Cap) {
      auto cap = dyn_cast<FloatAttr>(f.getValue());
      if (!cap)
        return fail(m, "field 'cap' must be a float");
      inst.cap = static_cast<float>(cap.getValueAsDouble());
      continue;
    }
    if (*key == pimsim::Field::AlibiScale) {
      auto scale = dyn_cast<FloatAttr>(f.getValue());
      if (!scale)
        return fail(m, "field 'alibi_scale' must be a float");
      inst.alibiScale = static_cast<float>(scale.getValueAsDouble());
      continue;
    }
    if (*key == pimsim::Field::Alibi) {
      auto slopes = dyn_cast<DenseF32ArrayAttr>(f.getValue());
      if (!slopes)
        return fail(m, "field 'alibi' must be an array<f32>");
      inst.alibi.assign(slopes.asArrayRef().begin(), slopes.asArrayRef().end());
      continue;
    }
    if (*key == pimsim::Field::Data) {
      auto data = dyn_cast<pim::DataAttr>(f.getValue());
      if (!data)
        return fail(m, "field 'data' must be a #pim.data");
      llvm::Expected<DataBase> at = dataBase(m, data);
      if (!at)
        return at.takeError();
      inst.dataRegion = at->region;
      if (llvm::Error err = field(m, inst, *key, data.getOffset(), at->base))
        return err;
      continue;
    }
    if (llvm::Error err = field(m, inst, *key, f.getValue()))
      return err;
  }
  return llvm::Error::success();
}

llvm::Error Serializer::field(Operation *owner, pimsim::Instruction &inst,
                              pimsim::Field key, Attribute value, int64_t add) {
  std::string error;
  FailureOr<pim::LinearIndex> index = pim::decomposeIndex(value, error);
  if (failed(index))
    return fail(owner, "field '" + pimsim::fieldName(key) + "' " + error);
  inst.set(key, index->base + add);
  for (const pim::IndexTerm &t : index->terms) {
    unsigned var = t.loop;
    if (t.var == pim::IndexTerm::Var::Channel)
      var = pimsim::kChannelIndex;
    if (t.var == pim::IndexTerm::Var::Param) {
      int64_t i = p.paramIndex(t.param.getValue());
      if (i < 0)
        return fail(owner, "unknown parameter @" + t.param.getValue());
      var = pimsim::kParamBase + i;
    }
    inst.addStride(key, var, t.step);
  }
  return llvm::Error::success();
}

llvm::Error Serializer::entry(pim::EntryOp x) {
  pimsim::Entry e;
  e.name = x.getSymName().str();
  for (Attribute step : x.getSteps()) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(step);
    if (!ref) {
      e.steps.push_back({pimsim::StepKind::Barrier, 0});
      continue;
    }
    if (auto it = streams.find(ref.getValue()); it != streams.end())
      e.steps.push_back({pimsim::StepKind::Stream, it->second});
    else if (auto kt = kernels.find(ref.getValue()); kt != kernels.end())
      e.steps.push_back({pimsim::StepKind::Kernel, kt->second});
    else
      return fail(x, "unknown stream or kernel @" + ref.getValue());
  }
  p.entries.push_back(std::move(e));
  return llvm::Error::success();
}

} // namespace

llvm::Expected<pimsim::Program>
pimc::backend::serialize(pim::ProgramOp program, const pimsim::Target &target) {
  return Serializer(program, target).run();
}
