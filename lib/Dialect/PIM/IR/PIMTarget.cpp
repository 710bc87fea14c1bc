//===- PIMTarget.cpp - #pim.target: the device in the IR ------------------===//
//
// A target file becomes an attribute (JSON objects -> dictionaries, arrays
// -> arrays, integers -> i64, other numbers -> f64, strings, booleans), and
// the attribute becomes a pimsim::Target again through the same reader
// that checks target files, so the IR can never carry a target that pimsim
// would refuse.
//
//===----------------------------------------------------------------------===//
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "pimc/Support/JSON.h"
#include "pimsim/Program.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace pimc::pim;

namespace {

Attribute attrOfJSON(MLIRContext *ctx, const llvm::json::Value &v) {
  Builder b(ctx);
  switch (v.kind()) {
  case llvm::json::Value::Null:
    return UnitAttr::get(ctx);
  case llvm::json::Value::Boolean:
    return b.getBoolAttr(*v.getAsBoolean());
  case llvm::json::Value::Number:
    if (std::optional<int64_t> i = v.getAsInteger())
      return b.getI64IntegerAttr(*i);
    return b.getF64FloatAttr(*v.getAsNumber());
  case llvm::json::Value::String:
    return b.getStringAttr(*v.getAsString());
  case llvm::json::Value::Array: {
    SmallVector<Attribute> elems;
    for (const llvm::json::Value &e : *v.getAsArray())
      elems.push_back(attrOfJSON(ctx, e));
    return b.getArrayAttr(elems);
  }
  case llvm::json::Value::Object: {
    SmallVector<NamedAttribute> fields;
    for (const auto &[key, value] : *v.getAsObject())
      fields.push_back(b.getNamedAttr(key.str(), attrOfJSON(ctx, value)));
    return b.getDictionaryAttr(fields);
  }
  }
  llvm_unreachable("unknown JSON kind");
}

/// The JSON form of a spec attribute; fails (naming the key) on attributes
/// that have none.
FailureOr<llvm::json::Value> jsonOfAttr(Attribute a, std::string &path) {
  if (isa<UnitAttr>(a))
    return llvm::json::Value(nullptr);
  if (auto bl = dyn_cast<BoolAttr>(a))
    return llvm::json::Value(bl.getValue());
  if (auto i = dyn_cast<IntegerAttr>(a))
    return llvm::json::Value(i.getValue().getSExtValue());
  if (auto f = dyn_cast<FloatAttr>(a))
    return llvm::json::Value(f.getValueAsDouble());
  if (auto s = dyn_cast<StringAttr>(a))
    return llvm::json::Value(s.getValue().str());
  if (auto arr = dyn_cast<ArrayAttr>(a)) {
    llvm::json::Array out;
    for (auto [i, e] : llvm::enumerate(arr)) {
      std::string at = path + "[" + std::to_string(i) + "]";
      FailureOr<llvm::json::Value> v = jsonOfAttr(e, at);
      if (failed(v)) {
        path = at;
        return failure();
      }
      out.push_back(std::move(*v));
    }
    return llvm::json::Value(std::move(out));
  }
  if (auto dict = dyn_cast<DictionaryAttr>(a)) {
    llvm::json::Object out;
    for (NamedAttribute f : dict) {
      std::string at = (path.empty() ? "" : path + ".") + f.getName().str();
      FailureOr<llvm::json::Value> v = jsonOfAttr(f.getValue(), at);
      if (failed(v)) {
        path = at;
        return failure();
      }
      out[f.getName().str()] = std::move(*v);
    }
    return llvm::json::Value(std::move(out));
  }
  return failure();
}

/// The spec as target-file text, or why it cannot be one.
llvm::Expected<std::string> specText(DictionaryAttr spec) {
  std::string path;
  FailureOr<llvm::json::Value> v = jsonOfAttr(spec, path);
  if (failed(v))
    return llvm::createStringError(
        "spec." + path +
        ": not a JSON value (expected a dictionary, array, integer, float, "
        "string or boolean attribute)");
  return llvm::formatv("{0}", *v).str();
}

llvm::Expected<pimsim::Target> targetOf(StringRef name, DictionaryAttr spec) {
  llvm::Expected<std::string> text = specText(spec);
  if (!text)
    return text.takeError();
  return pimsim::parseTarget(*text, ("#pim.target '" + name + "'").str());
}

} // namespace

LogicalResult TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringRef name, StringRef hash,
                                 DictionaryAttr spec) {
  llvm::Expected<pimsim::Target> t = targetOf(name, spec);
  if (!t)
    return emitError() << llvm::toString(t.takeError());
  if (t->name != name)
    return emitError() << "#pim.target name '" << name
                       << "' differs from its spec's name '" << t->name << "'";
  return success();
}

llvm::Expected<pimsim::Target> TargetAttr::getTarget() const {
  return targetOf(getName(), getSpec());
}

llvm::Expected<TargetAttr> TargetAttr::fromFile(MLIRContext *context,
                                                StringRef fileBytes,
                                                StringRef source) {
  llvm::Expected<pimsim::Target> t = pimsim::parseTarget(fileBytes, source);
  if (!t)
    return t.takeError();
  llvm::Expected<llvm::json::Value> json = pimc::parseJSON(fileBytes);
  if (!json)
    return json.takeError(); // parseTarget accepted it; kept for safety
  auto spec = dyn_cast<DictionaryAttr>(attrOfJSON(context, *json));
  if (!spec)
    return llvm::createStringError(source + ": not a JSON object");
  return TargetAttr::get(context, t->name, pimsim::targetContentHash(fileBytes),
                         spec);
}

FailureOr<pimsim::Target> TargetAttr::lookup(ModuleOp module) {
  auto attr = module->getAttrOfType<TargetAttr>(kModuleAttrName);
  if (!attr)
    return module.emitError() << "the module has no '" << kModuleAttrName
                              << "' attribute: run pim-register-target first";
  llvm::Expected<pimsim::Target> t = attr.getTarget();
  if (!t)
    return module.emitError() << llvm::toString(t.takeError());
  return std::move(*t);
}
