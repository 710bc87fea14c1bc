//===- Serialize.cpp - pim.program -> pimsim program ----------------------===//
//
// The pim dialect mirrors the program format, so serialization prints the
// program's assembly text (docs/pimsim-isa.md) and assembles it with
// pimsim's own assembler, then validates it against the target. Host-op
// dictionaries become the JSON `params` of their kernel.
//
//===----------------------------------------------------------------------===//
#include "pimc/Backend/Backend.h"
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace pimc;

static llvm::json::Value toJSON(Attribute a) {
  if (auto i = dyn_cast<IntegerAttr>(a)) {
    if (i.getType().isInteger(1))
      return i.getValue().getBoolValue();
    return i.getInt();
  }
  if (auto bo = dyn_cast<BoolAttr>(a))
    return bo.getValue();
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValueAsDouble();
  if (auto s = dyn_cast<StringAttr>(a))
    return s.getValue().str();
  if (auto d = dyn_cast<DictionaryAttr>(a)) {
    llvm::json::Object o;
    for (NamedAttribute n : d)
      o[n.getName().getValue()] = toJSON(n.getValue());
    return o;
  }
  if (auto arr = dyn_cast<ArrayAttr>(a)) {
    llvm::json::Array out;
    for (Attribute e : arr)
      out.push_back(toJSON(e));
    return out;
  }
  if (auto arr = dyn_cast<DenseI64ArrayAttr>(a)) {
    llvm::json::Array out;
    for (int64_t e : arr.asArrayRef())
      out.push_back(e);
    return out;
  }
  return nullptr;
}

static std::string jsonText(llvm::json::Value v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << v;
  return s;
}

static std::string quote(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

static std::string range(ArrayRef<int64_t> r) {
  if (r[1] == 1)
    return std::to_string(r[0]);
  return llvm::formatv("{0}-{1}", r[0], r[0] + r[1] - 1).str();
}

static std::string fieldText(Attribute a) {
  if (auto i = dyn_cast<IntegerAttr>(a))
    return std::to_string(i.getInt());
  return cast<StringAttr>(a).getValue().str();
}

static void printBody(Block &block, llvm::raw_ostream &os, int depth) {
  std::string indent(2 * depth, ' ');
  for (Operation &op : block) {
    if (auto l = dyn_cast<pim::LoopOp>(op)) {
      os << indent << "loop " << l.getVar() << " " << fieldText(l.getCount())
         << " {\n";
      printBody(l.getBody().front(), os, depth + 1);
      os << indent << "}\n";
      continue;
    }
    auto m = cast<pim::MacroOp>(op);
    os << indent << m.getOp();
    for (NamedAttribute f : m.getFields())
      os << " " << f.getName().getValue() << "=" << fieldText(f.getValue());
    os << "\n";
  }
}

llvm::Expected<std::string>
pimc::backend::toAssembly(pim::ProgramOp program,
                          const pimsim::Target &target) {
  std::string text;
  llvm::raw_string_ostream os(text);
  const pimsim::Organization &o = target.org;
  os << "# pimc compiled program\n.version 1.3\n";
  os << ".target " << program.getTarget() << " hash="
     << (program.getTargetHash().empty() ? StringRef("sha256:0")
                                         : program.getTargetHash())
     << "\n";
  if (auto module = program->getParentOfType<ModuleOp>()) {
    auto attr = [&](StringRef name) {
      auto s = module->getAttrOfType<StringAttr>(name);
      return s ? s.getValue() : StringRef();
    };
    StringRef type = attr("llm.model_type");
    if (!type.empty())
      os << ".model " << quote(type)
         << " config=" << quote(attr("llm.source_config"))
         << " tensors=" << quote(attr("llm.source_tensors")) << "\n";
  }
  os << llvm::formatv(".org stacks={0} channels={1} pseudo_channels={2} "
                      "sids={3} bank_groups={4} banks={5} rows={6} "
                      "columns={7} access_bytes={8}\n",
                      o.stacks, o.channels, o.pseudoChannels, o.sids,
                      o.bankGroups, o.banks, o.rows, o.columns, o.accessBytes);
  Block &body = program.getBody().front();
  for (auto p : body.getOps<pim::ParamOp>()) {
    os << ".param " << p.getSymName();
    if (auto src = p.getSrcAttr()) {
      os << " src=" << src.getValue();
      if (p.getAdd() != 0)
        os << " add=" << p.getAdd();
      if (p.getDiv() != 1)
        os << " div=" << p.getDiv();
      if (p.getMod() != 0)
        os << " mod=" << p.getMod();
    }
    os << " min=" << p.getMin() << " max=" << p.getMax() << "\n";
  }
  for (auto r : body.getOps<pim::RegionOp>())
    os << ".region " << r.getSymName() << " kind=" << r.getKind()
       << " channels=" << range(r.getChannels())
       << " banks=" << range(r.getBanks()) << " rows=" << range(r.getRows())
       << " bytes=" << r.getBytes() << "\n";
  for (auto w : body.getOps<pim::WeightOp>()) {
    auto shape = w.getShape();
    os << ".weight " << quote(w.getTensor()) << " region=" << w.getRegion()
       << " format=" << w.getFormat() << " shape=" << shape[0] << "x"
       << shape[1] << " rows=" << range(w.getRows())
       << " bytes=" << w.getBytes() << " layout=" << w.getLayout()
       << " params=" << quote(jsonText(toJSON(w.getParams()))) << "\n";
  }
  for (auto k : body.getOps<pim::KernelOp>()) {
    llvm::json::Array ops;
    for (auto h : k.getBody().front().getOps<pim::HostOp>()) {
      llvm::json::Object o;
      o["op"] = h.getName().str();
      for (NamedAttribute n : h.getArgs())
        o[n.getName().getValue()] = toJSON(n.getValue());
      ops.push_back(std::move(o));
    }
    llvm::json::Object params;
    params["ops"] = std::move(ops);
    os << ".kernel " << k.getSymName() << " kind=" << k.getKind()
       << " flops=" << k.getFlops() << " bytes=" << k.getBytes();
    if (auto unit = k.getUnitAttr())
      os << " unit=" << unit.getValue() << " elements=" << k.getElements();
    os << " params=" << quote(jsonText(std::move(params))) << "\n";
  }
  for (auto s : body.getOps<pim::StreamOp>()) {
    os << ".stream " << s.getSymName() << " channels=" << range(s.getChannels())
       << "\n";
    printBody(s.getBody().front(), os, 1);
  }
  for (auto e : body.getOps<pim::EntryOp>()) {
    os << ".entry " << e.getSymName() << " =";
    bool first = true;
    for (Attribute step : e.getSteps()) {
      os << (first ? " " : ", ");
      first = false;
      if (auto ref = dyn_cast<FlatSymbolRefAttr>(step))
        os << ref.getValue();
      else
        os << "barrier";
    }
    os << "\n";
  }
  return text;
}

llvm::Expected<pimsim::Program>
pimc::backend::serialize(pim::ProgramOp program, const pimsim::Target &target) {
  llvm::Expected<std::string> text = toAssembly(program, target);
  if (!text)
    return text.takeError();
  llvm::Expected<pimsim::Program> p =
      pimsim::parseProgramText(*text, "<pimc program>");
  if (!p)
    return p.takeError();
  if (llvm::Error e = pimsim::validateProgram(*p, target))
    return llvm::Expected<pimsim::Program>(std::move(e));
  return p;
}
