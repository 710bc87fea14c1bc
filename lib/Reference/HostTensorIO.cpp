//===- HostTensorIO.cpp - graph inputs/outputs as safetensors -------------===//
#include "pimc/Reference/HostTensorIO.h"

#include "pimc/Checkpoint/Safetensors.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <map>

using namespace llvm;
using namespace pimc;
using namespace pimc::ref;

static Error fileError(StringRef path, const Twine &msg) {
  return createStringError(formatv("{0}: {1}", path, msg.str()));
}

Expected<std::vector<HostTensor>> pimc::ref::readHostTensors(StringRef path,
                                                             StringRef prefix) {
  auto file = ckpt::SafetensorsFile::open(path);
  if (!file)
    return file.takeError();
  std::map<int64_t, const ckpt::TensorView *> byIndex;
  for (const ckpt::TensorView &t : (*file)->tensors()) {
    StringRef name = t.name;
    int64_t index;
    if (!name.consume_front(prefix) || name.empty() ||
        name.getAsInteger(10, index) || index < 0 ||
        std::to_string(index) != name)
      return fileError(path, formatv("unexpected tensor '{0}' (expected "
                                     "{1}0, {1}1, ...)",
                                     t.name, prefix));
    byIndex[index] = &t;
  }
  std::vector<HostTensor> result;
  for (auto [index, view] : byIndex) {
    if (index != static_cast<int64_t>(result.size()))
      return fileError(
          path, formatv("has no tensor '{0}{1}'", prefix, result.size()));
    HostTensor h;
    h.shape.assign(view->shape.begin(), view->shape.end());
    int64_t n = view->numElements();
    switch (view->dtype) {
    case ckpt::DType::F32:
      h.dtype = HostTensor::DType::F32;
      h.f32.resize(n);
      std::memcpy(h.f32.data(), view->data, n * sizeof(float));
      break;
    case ckpt::DType::I64:
      h.dtype = HostTensor::DType::I64;
      h.i64.resize(n);
      std::memcpy(h.i64.data(), view->data, n * sizeof(int64_t));
      break;
    case ckpt::DType::I32:
      h.dtype = HostTensor::DType::I64;
      for (int64_t i = 0; i < n; ++i) {
        int32_t v;
        std::memcpy(&v, view->data + 4 * i, sizeof(v));
        h.i64.push_back(v);
      }
      break;
    case ckpt::DType::Bool:
      h.dtype = HostTensor::DType::Bool;
      for (int64_t i = 0; i < n; ++i)
        h.i64.push_back(view->data[i] != 0);
      break;
    default:
      return fileError(path, formatv("tensor '{0}' has dtype {1}; inputs and "
                                     "outputs are F32, I64, I32 or BOOL",
                                     view->name, ckpt::dtypeName(view->dtype)));
    }
    result.push_back(std::move(h));
  }
  return result;
}

Error pimc::ref::writeHostTensors(StringRef path, StringRef prefix,
                                  ArrayRef<HostTensor> tensors) {
  json::Object header;
  std::string data;
  for (auto [i, t] : llvm::enumerate(tensors)) {
    size_t begin = data.size();
    StringRef dtype;
    switch (t.dtype) {
    case HostTensor::DType::F32:
      dtype = "F32";
      data.append(reinterpret_cast<const char *>(t.f32.data()),
                  t.f32.size() * sizeof(float));
      break;
    case HostTensor::DType::I64:
      dtype = "I64";
      data.append(reinterpret_cast<const char *>(t.i64.data()),
                  t.i64.size() * sizeof(int64_t));
      break;
    case HostTensor::DType::Bool:
      dtype = "BOOL";
      for (int64_t v : t.i64)
        data.push_back(v ? 1 : 0);
      break;
    }
    header[(prefix + Twine(i)).str()] = json::Object{
        {"dtype", dtype},
        {"shape", json::Array(t.shape)},
        {"data_offsets", json::Array{static_cast<int64_t>(begin),
                                     static_cast<int64_t>(data.size())}}};
  }
  std::string text;
  raw_string_ostream(text) << json::Value(std::move(header));
  // Pad with spaces so the data starts 8-byte aligned, as the reference
  // writer does.
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t len = text.size();
  char lenBytes[8];
  for (int b = 0; b < 8; ++b)
    lenBytes[b] = static_cast<char>((len >> (8 * b)) & 0xff);
  // A temporary file renamed on success: a failed write leaves nothing.
  Error err = writeToOutput(path, [&](raw_ostream &os) -> Error {
    os.write(lenBytes, 8);
    os << text << data;
    return Error::success();
  });
  if (err)
    return fileError(path, "cannot write: " + toString(std::move(err)));
  return Error::success();
}

std::string pimc::ref::positionString(ArrayRef<int64_t> shape, int64_t index) {
  SmallVector<int64_t, 4> pos(shape.size());
  for (int64_t i = shape.size() - 1; i >= 0; --i) {
    pos[i] = shape[i] ? index % shape[i] : 0;
    index = shape[i] ? index / shape[i] : 0;
  }
  std::string s = "[";
  for (auto [i, p] : llvm::enumerate(pos))
    s += (i ? ", " : "") + std::to_string(p);
  return s + "]";
}

Expected<TensorComparison>
pimc::ref::compareHostTensors(const HostTensor &got, const HostTensor &expected,
                              double atol, double rtol) {
  if (got.dtype != expected.dtype)
    return createStringError(formatv("dtype {0}, expected {1}", got.dtypeName(),
                                     expected.dtypeName()));
  if (got.shape != expected.shape) {
    auto str = [](ArrayRef<int64_t> s) {
      return "[" +
             join(map_range(s, [](int64_t d) { return std::to_string(d); }),
                  ", ") +
             "]";
    };
    return createStringError(formatv("shape {0}, expected {1}", str(got.shape),
                                     str(expected.shape)));
  }
  TensorComparison c;
  double worstExcess = -1;
  int64_t n = got.numElements();
  for (int64_t i = 0; i < n; ++i) {
    double g, e;
    bool match;
    if (got.isInteger()) {
      g = got.i64[i];
      e = expected.i64[i];
      match = got.i64[i] == expected.i64[i];
    } else {
      g = got.f32[i];
      e = expected.f32[i];
      if (std::isnan(g) || std::isnan(e))
        match = std::isnan(g) && std::isnan(e);
      else if (std::isinf(g) || std::isinf(e))
        match = g == e;
      else
        match = std::fabs(g - e) <= atol + rtol * std::fabs(e);
    }
    double diff = std::isnan(g) && std::isnan(e) ? 0.0 : std::fabs(g - e);
    if (!std::isnan(diff) && diff != INFINITY)
      c.maxAbsDiff = std::max(c.maxAbsDiff, diff);
    if (match)
      continue;
    ++c.mismatches;
    // NaN against a number, or an infinity mismatch, is the worst kind.
    double excess =
        std::isfinite(diff) ? diff - (atol + rtol * std::fabs(e)) : INFINITY;
    if (excess > worstExcess || c.worstIndex < 0) {
      worstExcess = excess;
      c.worstIndex = i;
      c.worstGot = g;
      c.worstExpected = e;
    }
  }
  return c;
}
