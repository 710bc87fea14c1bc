//===- Safetensors.cpp - memory-mapped safetensors checkpoints ------------===//
//
// The whole header is validated before a TensorView is handed out, so that a
// corrupt or truncated checkpoint fails here with a message naming the file
// and tensor instead of producing garbage weights (or a crash) downstream.
//
//===----------------------------------------------------------------------===//

#include "pimc/Checkpoint/Safetensors.h"
#include "pimc/Support/JSON.h"
#include "pimc/Support/JSONFields.h"
#include "pimc/Support/Paths.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

#include <algorithm>
#include <cstring>

using namespace llvm;

namespace pimc::ckpt {

namespace {

struct DTypeInfo {
  DType dtype;
  StringLiteral name;
  unsigned size;
};

constexpr DTypeInfo dtypeTable[] = {
    {DType::Bool, "BOOL", 1},       {DType::U8, "U8", 1},
    {DType::I8, "I8", 1},           {DType::I16, "I16", 2},
    {DType::U16, "U16", 2},         {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},       {DType::I32, "I32", 4},
    {DType::U32, "U32", 4},         {DType::F32, "F32", 4},
    {DType::F64, "F64", 8},         {DType::I64, "I64", 8},
    {DType::U64, "U64", 8},         {DType::F8_E4M3, "F8_E4M3", 1},
    {DType::F8_E5M2, "F8_E5M2", 1}, {DType::F8_E8M0, "F8_E8M0", 1},
};

const DTypeInfo &infoFor(DType dtype) {
  for (const DTypeInfo &info : dtypeTable)
    if (info.dtype == dtype)
      return info;
  llvm_unreachable("DType missing from dtypeTable");
}

std::string dtypeNames() {
  std::string names;
  for (const DTypeInfo &info : dtypeTable)
    names += (names.empty() ? "" : ", ") + info.name.str();
  return names;
}

// Same limit as the reference parser: a larger header is almost certainly a
// misread length field, and parsing it would only waste memory.
constexpr uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;

Error fileError(StringRef file, const Twine &what) {
  return createStringError(Twine(file) + ": " + what);
}

std::string formatShape(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      s += ", ";
    s += std::to_string(d);
  }
  return s + "]";
}

/// llvm::json keeps the last of duplicate object keys silently, so the
/// top-level keys are re-scanned from the (already validated) header text.
/// Returns the first key that occurs twice, if any.
std::optional<std::string> findDuplicateTopLevelKey(StringRef text) {
  StringSet<> seen;
  int depth = 0;
  bool expectKey = false;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (c == '"') {
      size_t start = i++;
      while (i < e && text[i] != '"')
        i += text[i] == '\\' ? 2 : 1;
      if (depth == 1 && expectKey) {
        expectKey = false;
        // Decode escapes by parsing the literal itself as a JSON value.
        Expected<json::Value> key = json::parse(text.slice(start, i + 1));
        if (!key) {
          consumeError(key.takeError());
          continue;
        }
        std::string name = key->getAsString()->str();
        if (!seen.insert(name).second)
          return name;
      }
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
      expectKey = depth == 1 && c == '{';
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 1) {
      expectKey = true;
    }
  }
  return std::nullopt;
}

/// A header entry checked in isolation; offsets still relative to the data
/// section.
struct ParsedEntry {
  TensorView view;
  uint64_t begin = 0, end = 0;
};

/// How a header entry's fields are named in errors: "<file>: tensor
/// '<name>': shape[1]: must be non-negative, got -1".
JSONFieldStyle entryStyle(StringRef file, StringRef tensor) {
  JSONFieldStyle style;
  style.error = [file = file.str(), tensor = tensor.str()](
                    StringRef path, const Twine &what) -> Error {
    std::string where = "tensor '" + tensor + "': ";
    if (!path.empty())
      where += path.str() + ": ";
    return fileError(file, where + what);
  };
  style.showValues = true;
  return style;
}

Expected<ParsedEntry> parseEntry(StringRef file, StringRef name,
                                 const json::Value &value) {
  JSONFieldStyle style = entryStyle(file, name);
  Expected<JSONFields> obj = JSONFields::of(value, "", style);
  if (!obj)
    return obj.takeError();
  if (Error e = obj->checkKeys({"dtype", "shape", "data_offsets"}))
    return e;

  ParsedEntry entry;
  entry.view.name = name.str();
  entry.view.file = file.str();

  Expected<StringRef> dtypeStr = obj->string("dtype", required);
  if (!dtypeStr)
    return dtypeStr.takeError();
  std::optional<DType> dtype = parseDType(*dtypeStr);
  if (!dtype)
    return obj->fieldError("dtype", "unknown dtype '" + *dtypeStr +
                                        "' (expected one of: " + dtypeNames() +
                                        ")");
  entry.view.dtype = *dtype;

  Expected<std::vector<int64_t>> shape =
      obj->integers("shape", required, IntRange{0});
  if (!shape)
    return shape.takeError();
  entry.view.shape.assign(shape->begin(), shape->end());
  uint64_t numel = 1;
  bool numelOverflow = false;
  for (int64_t d : entry.view.shape) {
    bool overflow = false;
    numel = SaturatingMultiply(numel, uint64_t(d), &overflow);
    numelOverflow |= overflow;
  }
  if (numel == 0) // A zero dimension wins over an earlier overflow.
    numelOverflow = false;

  Expected<std::vector<int64_t>> offsets =
      obj->integers("data_offsets", required, IntRange{0});
  if (!offsets)
    return offsets.takeError();
  if (offsets->size() != 2)
    return obj->fieldError("data_offsets",
                           "must be two integers [begin, end], got " +
                               Twine(offsets->size()));
  uint64_t begin = (*offsets)[0], end = (*offsets)[1];
  if (begin > end)
    return obj->fieldError("data_offsets", "begin " + Twine(begin) +
                                               " is after end " + Twine(end));
  entry.begin = begin;
  entry.end = end;
  entry.view.numBytes = end - begin;

  bool overflow = false;
  uint64_t expected =
      SaturatingMultiply(numel, uint64_t(dtypeSize(*dtype)), &overflow);
  numelOverflow |= overflow;
  if (numelOverflow || expected != entry.view.numBytes)
    return obj->error("dtype " + *dtypeStr + " with shape " +
                      formatShape(entry.view.shape) + " needs " +
                      (numelOverflow ? std::string("more than 2^64")
                                     : std::to_string(expected)) +
                      " bytes but data_offsets span " +
                      Twine(entry.view.numBytes) + " bytes");
  return entry;
}

/// `__metadata__`: an object of strings.
Error parseMetadata(StringRef file, const json::Value &value,
                    StringMap<std::string> &meta) {
  JSONFieldStyle style;
  style.error = [&](StringRef path, const Twine &what) {
    return fileError(file, path + ": " + what);
  };
  style.showValues = true;
  Expected<JSONFields> obj = JSONFields::of(value, "__metadata__", style);
  if (!obj)
    return obj.takeError();
  for (StringRef key : obj->keys()) {
    Expected<StringRef> s = obj->string(key, required);
    if (!s)
      return s.takeError();
    meta[key] = s->str();
  }
  return Error::success();
}

} // namespace

StringRef dtypeName(DType dtype) { return infoFor(dtype).name; }

std::optional<DType> parseDType(StringRef name) {
  for (const DTypeInfo &info : dtypeTable)
    if (info.name == name)
      return info.dtype;
  return std::nullopt;
}

unsigned dtypeSize(DType dtype) { return infoFor(dtype).size; }

std::optional<ref::StorageType> floatStorage(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return ref::StorageType::F32;
  case DType::F16:
    return ref::StorageType::F16;
  case DType::BF16:
    return ref::StorageType::BF16;
  default:
    return std::nullopt;
  }
}

int64_t TensorView::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Expected<std::unique_ptr<SafetensorsFile>>
SafetensorsFile::open(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> mapped =
      MemoryBuffer::getFile(path, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!mapped)
    return fileError(path, "cannot open: " + mapped.getError().message());

  auto file = std::make_unique<SafetensorsFile>();
  file->filePath = path.str();
  file->buffer = std::move(*mapped);
  StringRef bytes = file->buffer->getBuffer();
  uint64_t fileSize = bytes.size();

  if (fileSize < 8)
    return fileError(path, "file is " + Twine(fileSize) +
                               " bytes, too short for the 8-byte header "
                               "length");
  uint64_t headerLen = support::endian::read64le(bytes.data());
  if (headerLen > kMaxHeaderBytes)
    return fileError(path, "header length " + Twine(headerLen) +
                               " exceeds the 100 MB limit");
  if (headerLen > fileSize - 8)
    return fileError(path, "header length " + Twine(headerLen) +
                               " exceeds the file size (" + Twine(fileSize) +
                               " bytes)");

  StringRef headerText = bytes.substr(8, headerLen);
  Expected<json::Value> header = pimc::parseJSON(headerText);
  if (!header)
    return fileError(path, "header is not valid JSON: " +
                               toString(header.takeError()));
  const json::Object *root = header->getAsObject();
  if (!root)
    return fileError(path, "header is not a JSON object");
  if (std::optional<std::string> dup = findDuplicateTopLevelKey(headerText))
    return fileError(path, "tensor '" + *dup + "' appears twice in the header");

  std::vector<ParsedEntry> entries;
  for (const auto &[key, value] : *root) {
    if (key == "__metadata__") {
      if (Error e = parseMetadata(path, value, file->meta))
        return e;
      continue;
    }
    Expected<ParsedEntry> entry = parseEntry(path, key, value);
    if (!entry)
      return entry.takeError();
    entries.push_back(std::move(*entry));
  }
  // File order makes the overlap check a single sweep and gives callers a
  // deterministic tensor order (json::Object iteration order is unspecified).
  llvm::sort(entries, [](const ParsedEntry &a, const ParsedEntry &b) {
    return std::tie(a.begin, a.end, a.view.name) <
           std::tie(b.begin, b.end, b.view.name);
  });

  const ParsedEntry *prev = nullptr; // last non-empty region
  for (const ParsedEntry &entry : entries) {
    if (entry.begin == entry.end)
      continue;
    if (prev && prev->end > entry.begin)
      return fileError(path, "tensors '" + prev->view.name + "' [" +
                                 Twine(prev->begin) + ", " + Twine(prev->end) +
                                 ") and '" + entry.view.name + "' [" +
                                 Twine(entry.begin) + ", " + Twine(entry.end) +
                                 ") overlap");
    prev = &entry;
  }

  uint64_t dataStart = 8 + headerLen;
  uint64_t dataSize = fileSize - dataStart;
  const ParsedEntry *last = nullptr; // region ending furthest
  bool contiguous = true;            // regions tile [0, maxEnd) with no holes
  uint64_t covered = 0;
  for (const ParsedEntry &entry : entries) {
    if (!last || entry.end > last->end)
      last = &entry;
    contiguous &= entry.begin == covered;
    covered = entry.end;
  }
  if (last && last->end > dataSize) {
    std::string what = "header says tensor '" + last->view.name +
                       "' ends at byte " + std::to_string(last->end) +
                       " but the data section has only " +
                       std::to_string(dataSize) + " bytes";
    // A header whose regions tile the buffer exactly is self-consistent, so
    // the bytes must have gone missing; otherwise the offsets are wrong.
    if (contiguous)
      return fileError(path, "file appears truncated: " + what +
                                 " (expected at least " +
                                 Twine(dataStart + last->end) +
                                 " bytes, found " + Twine(fileSize) + ")");
    return fileError(path, "data_offsets overrun the data section: " + what);
  }

  const uint8_t *data =
      reinterpret_cast<const uint8_t *>(bytes.data()) + dataStart;
  for (ParsedEntry &entry : entries) {
    entry.view.data = data + entry.begin;
    file->tensorList.push_back(std::move(entry.view));
  }
  return file;
}

Expected<std::unique_ptr<WeightStore>>
WeightStore::openFiles(ArrayRef<std::string> paths) {
  auto store = std::make_unique<WeightStore>();
  for (const std::string &path : paths) {
    Expected<std::unique_ptr<SafetensorsFile>> file =
        SafetensorsFile::open(path);
    if (!file)
      return file.takeError();
    for (const TensorView &t : (*file)->tensors()) {
      auto [it, inserted] = store->byName.try_emplace(t.name, &t);
      if (!inserted)
        return fileError(path, "tensor '" + t.name + "' is also in " +
                                   it->second->file);
    }
    store->files.push_back(std::move(*file));
  }
  return store;
}

Expected<std::unique_ptr<WeightStore>>
WeightStore::openDirectory(StringRef checkpointDir) {
  SmallString<256> indexPath(checkpointDir);
  sys::path::append(indexPath, "model.safetensors.index.json");
  SmallString<256> singlePath(checkpointDir);
  sys::path::append(singlePath, "model.safetensors");

  if (!sys::fs::exists(indexPath)) {
    if (!sys::fs::exists(singlePath))
      return fileError(checkpointDir,
                       "no model.safetensors or model.safetensors.index.json");
    return openFiles({std::string(singlePath)});
  }

  ErrorOr<std::unique_ptr<MemoryBuffer>> indexBuf =
      MemoryBuffer::getFile(indexPath, /*IsText=*/true);
  if (!indexBuf)
    return fileError(indexPath,
                     "cannot open: " + indexBuf.getError().message());
  Expected<json::Value> index = pimc::parseJSON((*indexBuf)->getBuffer());
  if (!index)
    return fileError(indexPath,
                     "not valid JSON: " + toString(index.takeError()));
  JSONFieldStyle style;
  style.error = [&](StringRef path, const Twine &what) {
    return fileError(indexPath, path.empty() ? what : path + ": " + what);
  };
  style.showValues = true;
  Expected<JSONFields> root = JSONFields::of(*index, "", style);
  if (!root)
    return root.takeError();
  Expected<JSONFields> weightMap = root->object("weight_map", required);
  if (!weightMap)
    return weightMap.takeError();

  // Tensor -> shard in tensor order, so that the first failure reported is
  // deterministic; distinct shards in sorted order, each opened once.
  std::vector<std::pair<std::string, std::string>> mapped;
  std::vector<std::string> shardNames;
  for (StringRef tensor : weightMap->keys()) {
    Expected<StringRef> s = weightMap->string(tensor, required);
    if (!s)
      return s.takeError();
    Expected<std::string> inside =
        resolveInside(checkpointDir, *s,
                      "weight_map entry for tensor '" + tensor.str() + "'");
    if (!inside)
      return fileError(indexPath, toString(inside.takeError()));
    mapped.emplace_back(tensor.str(), s->str());
    shardNames.push_back(s->str());
  }
  llvm::sort(shardNames);
  shardNames.erase(std::unique(shardNames.begin(), shardNames.end()),
                   shardNames.end());

  std::vector<std::string> shardPaths;
  StringMap<std::string> shardPathByName;
  for (const std::string &name : shardNames) {
    SmallString<256> p(checkpointDir);
    sys::path::append(p, name);
    shardPaths.push_back(std::string(p));
    shardPathByName[name] = std::string(p);
  }
  // openFiles rejects a tensor present in two shards.
  Expected<std::unique_ptr<WeightStore>> store = openFiles(shardPaths);
  if (!store)
    return store.takeError();

  for (const auto &[tensor, shard] : mapped) {
    // Stored tensors only: a row-view name is no tensor of a shard.
    const TensorView *view = (*store)->byName.lookup(tensor);
    const std::string &expectedPath = shardPathByName[shard];
    if (!view)
      return fileError(indexPath, "weight_map says tensor '" + tensor +
                                      "' is in shard '" + shard +
                                      "', but no shard contains it");
    if (view->file != expectedPath)
      return fileError(indexPath, "weight_map says tensor '" + tensor +
                                      "' is in shard '" + shard +
                                      "', but it is in " + view->file);
  }
  return store;
}

std::string rowSliceName(StringRef base, int64_t begin, int64_t end) {
  return formatv("{0}[{1}:{2}]", base, begin, end).str();
}

std::string indexName(StringRef base, int64_t index) {
  return formatv("{0}[{1}]", base, index).str();
}

std::string stridedRowsName(StringRef base, int64_t begin, int64_t end,
                            int64_t step) {
  if (step == 1)
    return rowSliceName(base, begin, end);
  return formatv("{0}[{1}:{2}:{3}]", base, begin, end, step).str();
}

std::string transposedName(StringRef base) { return (base + "^T").str(); }

std::string flatBlockRowsName(StringRef base, int64_t block, int64_t begin,
                              int64_t end) {
  return formatv("{0}<{1}:{2}:{3}>", base, block, begin, end).str();
}

std::string blockRowsName(StringRef base, int64_t block, int64_t begin,
                          int64_t end) {
  return formatv("{0}{{{1}:{2}:{3}}", base, block, begin, end).str();
}

namespace {

/// The last suffix of a derived name (WeightStore::lookup's grammar).
struct Suffix {
  enum Kind { Transpose, Index, Rows, Blocks, FlatBlocks } kind;
  StringRef base;
  // Index: begin is the index. Rows: begin < end, step >= 1. Blocks: rows
  // [begin, end) of each block of `step` rows, begin < end <= step.
  uint64_t begin = 0, end = 0, step = 1;

  /// How many rows a Rows suffix selects.
  uint64_t count() const { return (end - begin - 1) / step + 1; }
};

/// The suffix of `name`, parsed from the right: "^T", "[i]", "[a:b]",
/// "[a:b:s]" or "{B:a:b}" after a non-empty base; decimal integers only.
/// std::nullopt when `name` has none or a malformed one (b <= a, s == 0,
/// b > B included).
std::optional<Suffix> parseSuffix(StringRef name) {
  Suffix s;
  if (name.ends_with("^T")) {
    s.kind = Suffix::Transpose;
    s.base = name.drop_back(2);
    if (s.base.empty())
      return std::nullopt;
    return s;
  }
  bool flat = name.ends_with(">");
  bool blocks = flat || name.ends_with("}");
  if (!blocks && !name.ends_with("]"))
    return std::nullopt;
  size_t open = name.rfind(flat ? '<' : blocks ? '{' : '[');
  if (open == StringRef::npos || open == 0)
    return std::nullopt;
  s.base = name.take_front(open);
  SmallVector<StringRef, 3> fields;
  name.slice(open + 1, name.size() - 1).split(fields, ':');
  if (fields.size() > 3 || (blocks && fields.size() != 3))
    return std::nullopt;
  uint64_t values[3] = {0, 0, 1};
  for (size_t i = 0; i < fields.size(); ++i)
    // Radix 10: no "0x", no sign, no spaces; overflow fails.
    if (fields[i].getAsInteger(10, values[i]))
      return std::nullopt;
  if (blocks) {
    s.kind = flat ? Suffix::FlatBlocks : Suffix::Blocks;
    s.step = values[0];
    s.begin = values[1];
    s.end = values[2];
    if (s.begin >= s.end || s.end > s.step)
      return std::nullopt;
    return s;
  }
  s.begin = values[0];
  if (fields.size() == 1) {
    s.kind = Suffix::Index;
    return s;
  }
  s.kind = Suffix::Rows;
  s.end = values[1];
  s.step = values[2];
  if (s.step == 0 || s.begin >= s.end)
    return std::nullopt;
  return s;
}

/// out[k, j] = in[j, begin + k * step] for k < count, j < rows: rows
/// begin, begin + step, ... of the transpose of the [rows, cols] `in`, in
/// tiles so that neither side is walked a column at a time.
template <unsigned Size>
void transposedRowsOf(const uint8_t *in, uint64_t rows, uint64_t cols,
                      uint64_t begin, uint64_t step, uint64_t count,
                      uint8_t *out) {
  constexpr uint64_t tile = 64;
  for (uint64_t j0 = 0; j0 < rows; j0 += tile) {
    uint64_t j1 = std::min(rows, j0 + tile);
    for (uint64_t k0 = 0; k0 < count; k0 += tile) {
      uint64_t k1 = std::min(count, k0 + tile);
      for (uint64_t j = j0; j < j1; ++j) {
        const uint8_t *src = in + (j * cols + begin + k0 * step) * Size;
        uint8_t *dst = out + (k0 * rows + j) * Size;
        for (uint64_t k = k0; k < k1;
             ++k, src += step * Size, dst += rows * Size)
          std::memcpy(dst, src, Size);
      }
    }
  }
}

/// Rows begin, begin + step, ... (count of them) of the transpose of the
/// 2-D `t` (columns of t), copied into `bytes` in t's dtype.
void transposedRows(const TensorView &t, uint64_t begin, uint64_t step,
                    uint64_t count, std::vector<uint8_t> &bytes) {
  uint64_t rows = uint64_t(t.shape[0]), cols = uint64_t(t.shape[1]);
  unsigned size = dtypeSize(t.dtype);
  bytes.resize(count * rows * size);
  switch (size) {
  case 1:
    return transposedRowsOf<1>(t.data, rows, cols, begin, step, count,
                               bytes.data());
  case 2:
    return transposedRowsOf<2>(t.data, rows, cols, begin, step, count,
                               bytes.data());
  case 4:
    return transposedRowsOf<4>(t.data, rows, cols, begin, step, count,
                               bytes.data());
  case 8:
    return transposedRowsOf<8>(t.data, rows, cols, begin, step, count,
                               bytes.data());
  default:
    llvm_unreachable("element sizes are 1, 2, 4 or 8 bytes");
  }
}

} // namespace

const TensorView *WeightStore::built(StringRef name) const {
  std::lock_guard<std::mutex> lock(viewsMutex);
  auto it = views.find(name);
  if (it == views.end() || !it->second->ready.load(std::memory_order_acquire))
    return nullptr;
  return &it->second->view;
}

const TensorView *WeightStore::derive(
    StringRef name,
    function_ref<void(TensorView &, std::vector<uint8_t> &)> build) const {
  Derived *entry;
  {
    std::lock_guard<std::mutex> lock(viewsMutex);
    std::unique_ptr<Derived> &slot = views[name];
    if (!slot)
      slot = std::make_unique<Derived>();
    entry = slot.get();
  }
  // Built once, with no lock held: `build` already holds its base (a
  // shorter name), and a second caller waits here for the first.
  std::call_once(entry->once, [&] {
    build(entry->view, entry->bytes);
    entry->view.name = name.str();
    entry->ready.store(true, std::memory_order_release);
  });
  return &entry->view;
}

/// Derived names nest at most this many suffixes (gpt-oss's deepest has
/// three), so a hostile program's name cannot recurse, or copy, without
/// bound.
constexpr size_t kMaxSuffixes = 8;

const TensorView *WeightStore::lookup(StringRef name) const {
  if (const TensorView *stored = byName.lookup(name))
    return stored;
  if (const TensorView *done = built(name))
    return done;
  if (name.count('[') + name.count('{') + name.count("^T") > kMaxSuffixes)
    return nullptr;
  std::optional<Suffix> s = parseSuffix(name);
  if (!s)
    return nullptr;

  if (s->kind == Suffix::Transpose) {
    const TensorView *base = lookup(s->base);
    if (!base || base->shape.size() != 2)
      return nullptr;
    return derive(name, [&](TensorView &view, std::vector<uint8_t> &bytes) {
      const TensorView &t = *base;
      transposedRows(t, 0, 1, uint64_t(t.shape[1]), bytes);
      view = t;
      view.shape = {t.shape[1], t.shape[0]};
      view.data = bytes.data();
    });
  }

  // "base{B:a:b}": the 2-D [R, C] base as [R / B, b - a, C], rows [a, b)
  // of each block of B rows (MLA's kv_b_proj [nh * (dn + dv), r] holds each
  // head's k_nope rows {dn + dv:0:dn} and value rows {dn + dv:dn:dn + dv}).
  // A view when the rows are the whole block, else copied once.
  // "base<B:a:b>": the same rows kept 2-D, [R / B * (b - a), C] (Qwen3-
  // Next's in_proj_qkvz holds per key head [q | k | v | z]: all heads' q
  // rows are <W:0:dk>).
  if (s->kind == Suffix::Blocks || s->kind == Suffix::FlatBlocks) {
    const TensorView *base = lookup(s->base);
    if (!base || base->shape.size() != 2 || base->shape[0] == 0 ||
        uint64_t(base->shape[0]) % s->step != 0)
      return nullptr;
    return derive(name, [&](TensorView &view, std::vector<uint8_t> &bytes) {
      const TensorView &t = *base;
      uint64_t blocks = uint64_t(t.shape[0]) / s->step;
      uint64_t rowBytes = t.numBytes / uint64_t(t.shape[0]);
      uint64_t take = s->end - s->begin, partBytes = take * rowBytes;
      view = t;
      view.shape = {int64_t(blocks), int64_t(take), t.shape[1]};
      if (s->kind == Suffix::FlatBlocks)
        view.shape = {int64_t(blocks * take), t.shape[1]};
      if (take == s->step)
        return;
      bytes.resize(blocks * partBytes);
      for (uint64_t k = 0; k < blocks; ++k)
        std::memcpy(bytes.data() + k * partBytes,
                    t.data + (k * s->step + s->begin) * rowBytes, partBytes);
      view.data = bytes.data();
      view.numBytes = bytes.size();
    });
  }

  // An index or rows of a transpose that is not materialized: those
  // columns of the transposed tensor, copied by themselves (gpt-oss's
  // gate_up_proj[e]^T[0:2I:2] copies I of expert e's 2I columns, never
  // all experts, never the whole transpose).
  if (s->base.ends_with("^T") && !byName.count(s->base) && !built(s->base)) {
    const TensorView *inner = lookup(s->base.drop_back(2));
    if (!inner || inner->shape.size() != 2)
      return nullptr;
    uint64_t transposedRowCount = uint64_t(inner->shape[1]);
    bool index = s->kind == Suffix::Index;
    uint64_t limit = index ? s->begin + 1 : s->end;
    if (limit > transposedRowCount)
      return nullptr;
    return derive(name, [&](TensorView &view, std::vector<uint8_t> &bytes) {
      const TensorView &t = *inner;
      uint64_t count = index ? 1 : s->count();
      transposedRows(t, s->begin, s->step, count, bytes);
      view = t;
      view.shape = {int64_t(count), t.shape[0]};
      if (index)
        view.shape.erase(view.shape.begin());
      view.data = bytes.data();
      view.numBytes = bytes.size();
    });
  }

  const TensorView *base = lookup(s->base);
  if (!base || base->shape.empty())
    return nullptr;
  uint64_t rowCount = uint64_t(base->shape[0]);
  if (s->kind == Suffix::Index) {
    if (base->shape.size() < 2 || s->begin >= rowCount)
      return nullptr;
  } else if (s->end > rowCount) {
    return nullptr;
  }
  return derive(name, [&](TensorView &view, std::vector<uint8_t> &bytes) {
    const TensorView &t = *base;
    uint64_t rowBytes = t.numBytes / rowCount; // rowCount > begin >= 0
    view = t;
    if (s->kind == Suffix::Index) {
      view.shape.erase(view.shape.begin());
      view.data = t.data + s->begin * rowBytes;
      view.numBytes = rowBytes;
      return;
    }
    uint64_t count = s->count();
    view.shape[0] = int64_t(count);
    view.numBytes = count * rowBytes;
    if (s->step == 1 || count == 1) { // contiguous: a view
      view.data = t.data + s->begin * rowBytes;
      return;
    }
    bytes.resize(count * rowBytes);
    for (uint64_t k = 0; k < count; ++k)
      std::memcpy(bytes.data() + k * rowBytes,
                  t.data + (s->begin + k * s->step) * rowBytes, rowBytes);
    view.data = bytes.data();
  });
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  out.reserve(byName.size());
  for (const auto &entry : byName)
    out.push_back(entry.getKey().str());
  llvm::sort(out);
  return out;
}

std::string WeightStore::tableDigest() const {
  SHA256 hash;
  for (const std::string &name : names()) {
    const TensorView *t = lookup(name);
    std::string line = name + "\t" + dtypeName(t->dtype).str();
    for (int64_t d : t->shape)
      line += " " + std::to_string(d);
    line += "\n";
    hash.update(line);
  }
  return "sha256:" + toHex(hash.final(), /*LowerCase=*/true);
}

uint64_t WeightStore::totalBytes() const {
  uint64_t total = 0;
  for (const auto &file : files)
    for (const TensorView &t : file->tensors())
      total += t.numBytes;
  return total;
}

} // namespace pimc::ckpt
