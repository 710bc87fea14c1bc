//===- SupportMatrix.cpp - `pimc support --matrix` ------------------------===//
//
//   pimc support --matrix <config-dir | config.json>... [--json] [-o file]
//
// The architecture-tracking table: one row per model (its config.json, read
// without weights), one column per architecture feature (ArchFeatures.h),
// each cell supported, unsupported or not applicable, and the model's own
// `pimc support` verdict. Below the table: why each unsupported cell is,
// and the missing features ranked by how many models need them.
//
//===----------------------------------------------------------------------===//
#include "SupportCommand.h"

#include "pimsim/Target.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>
#include <map>

using namespace llvm;
using namespace pimc;
using Status = ckpt::FeatureUse::Status;

namespace {

struct Row {
  std::string name;  // the config's directory
  std::string input; // the config.json read
  ModelSupport support;
};

/// `dir/config.json`, or the config.json given; the row is named by the
/// directory.
Expected<Row> rowFor(StringRef input) {
  Row row;
  if (sys::fs::is_directory(input)) {
    SmallString<256> path(input);
    sys::path::append(path, "config.json");
    row.input = path.str().str();
    StringRef dir = input;
    while (dir.size() > 1 && sys::path::is_separator(dir.back()))
      dir = dir.drop_back();
    row.name = sys::path::filename(dir).str();
  } else if (sys::path::filename(input) == "config.json") {
    row.input = input.str();
    row.name = sys::path::filename(sys::path::parent_path(input)).str();
  } else {
    return createStringError("'" + input +
                             "': expected a directory with a config.json, or "
                             "a config.json");
  }
  if (row.name.empty() || row.name == ".")
    row.name = row.input;
  if (!sys::fs::exists(row.input))
    return createStringError("'" + row.input + "': no such file");
  return row;
}

StringRef cell(Status s) {
  switch (s) {
  case Status::Supported:
    return "yes";
  case Status::Unsupported:
    return "NO";
  case Status::NotApplicable:
    return "-";
  }
  return "";
}

void printTable(ArrayRef<Row> rows, StringRef target, raw_ostream &os) {
  size_t nameWidth = 5, typeWidth = 10;
  for (const Row &r : rows) {
    nameWidth = std::max(nameWidth, r.name.size());
    typeWidth = std::max(typeWidth, r.support.modelType.size());
  }
  os << formatv("pimc support --matrix: {0} models, target '{1}' (yes: "
                "supported, NO: unsupported, -: not used)\n\n",
                rows.size(), target);
  os << left_justify("model", nameWidth) << "  "
     << left_justify("model_type", typeWidth) << "  supported";
  for (const ckpt::ArchFeature &f : ckpt::archFeatures())
    os << "  " << f.id;
  os << "\n";
  for (const Row &r : rows) {
    os << left_justify(r.name, nameWidth) << "  "
       << left_justify(r.support.modelType, typeWidth) << "  "
       << left_justify(r.support.supported ? "yes" : "NO", 9);
    for (auto [f, use] : llvm::zip(ckpt::archFeatures(), r.support.arch))
      os << "  " << left_justify(cell(use.status), f.id.size());
    os << "\n";
  }
}

void printReasons(ArrayRef<Row> rows, raw_ostream &os) {
  bool any =
      llvm::any_of(rows, [](const Row &r) { return !r.support.supported; });
  if (!any)
    return;
  os << "\nwhy not (the model's verdict, then each unsupported feature):\n";
  for (const Row &r : rows) {
    if (r.support.supported)
      continue;
    // The importer's messages start with the file; the row names it.
    StringRef why = r.support.why;
    why.consume_front(r.input + ": ");
    os << "  " << r.name << ": " << why << "\n";
    for (const ckpt::FeatureUse &u : r.support.arch)
      if (u.status == Status::Unsupported)
        os << formatv("      {0} = {1}: {2}\n", u.feature, u.value, u.reason);
  }
  // What to build next: the missing features by how many models need them.
  std::map<std::string, std::vector<std::string>> need;
  for (const Row &r : rows)
    for (const ckpt::FeatureUse &u : r.support.arch)
      if (u.status == Status::Unsupported)
        need[u.feature].push_back(r.name);
  std::vector<std::pair<std::string, std::vector<std::string>>> ranked(
      need.begin(), need.end());
  llvm::stable_sort(ranked, [](const auto &a, const auto &b) {
    return a.second.size() > b.second.size();
  });
  os << "\nmissing features, by the number of models that need them:\n";
  for (const auto &[feature, models] : ranked)
    os << formatv("  {0,-13} {1,2}  {2}\n", feature, models.size(),
                  llvm::join(models, ", "));
}

json::Value toJSON(ArrayRef<Row> rows, StringRef target) {
  json::Array features, models;
  for (const ckpt::ArchFeature &f : ckpt::archFeatures())
    features.push_back(json::Object{{"id", f.id}, {"title", f.title}});
  for (const Row &r : rows) {
    json::Object cells;
    for (const ckpt::FeatureUse &u : r.support.arch)
      cells[u.feature] = ckpt::toJSON(u);
    json::Object m{{"name", r.name},
                   {"input", r.input},
                   {"model_type", r.support.modelType},
                   {"supported", r.support.supported},
                   {"features", std::move(cells)}};
    if (!r.support.why.empty())
      m["why"] = r.support.why;
    models.push_back(std::move(m));
  }
  return json::Object{{"target", target},
                      {"features", std::move(features)},
                      {"models", std::move(models)}};
}

} // namespace

int pimcSupportMatrix(const SupportCommandOptions &opt) {
  auto fail = [](const Twine &msg) {
    WithColor::error(errs(), "pimc support") << msg << "\n";
    return 1;
  };
  auto target = pimsim::loadTarget(opt.target);
  if (!target)
    return fail(toString(target.takeError()));
  std::vector<Row> rows;
  for (const std::string &input : opt.inputs) {
    Expected<Row> row = rowFor(input);
    if (!row)
      return fail("--matrix: " + toString(row.takeError()));
    Expected<ModelSupport> support =
        analyzeModelSupport(row->input, opt.target);
    if (!support)
      return fail(toString(support.takeError()));
    row->support = std::move(*support);
    rows.push_back(std::move(*row));
  }
  std::error_code ec;
  ToolOutputFile out(opt.output, ec, sys::fs::OF_Text);
  if (ec)
    return fail("cannot write '" + opt.output + "': " + ec.message());
  if (opt.json) {
    out.os() << formatv("{0:2}", toJSON(rows, target->name)) << "\n";
  } else {
    printTable(rows, target->name, out.os());
    printReasons(rows, out.os());
  }
  out.keep();
  bool all =
      llvm::all_of(rows, [](const Row &r) { return r.support.supported; });
  return all ? 0 : 3;
}
