//===- ONNXModel.cpp - reading ONNX protobufs and tensor data -------------===//
//
// Everything that touches protobuf: parsing ModelProto / TensorProto files,
// decoding tensor data (typed fields, raw_data, external files) into the
// importer's plain TensorData, and the safetensors writer for lifted
// weights. Kept apart from the op table so the heavy generated headers are
// compiled in as few places as possible.
//
//===----------------------------------------------------------------------===//
#include "ONNXModel.h"
#include "pimc/Support/Paths.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <limits>

using namespace llvm;
using namespace pimc;
using namespace pimc::onnx;

std::string pimc::onnx::typeName(int32_t elemType) {
  if (!::onnx::TensorProto_DataType_IsValid(elemType))
    return "type " + std::to_string(elemType);
  return ::onnx::TensorProto_DataType_Name(
      static_cast<::onnx::TensorProto_DataType>(elemType));
}

std::optional<TensorData::Kind> pimc::onnx::kindOf(int32_t elemType) {
  using TP = ::onnx::TensorProto;
  switch (elemType) {
  case TP::FLOAT:
  case TP::DOUBLE:
  case TP::FLOAT16:
  case TP::BFLOAT16:
    return TensorData::Kind::F32;
  case TP::INT8:
  case TP::INT16:
  case TP::INT32:
  case TP::INT64:
  case TP::UINT8:
  case TP::UINT16:
  case TP::UINT32:
  case TP::UINT64:
    return TensorData::Kind::I64;
  case TP::BOOL:
    return TensorData::Kind::I1;
  default:
    return std::nullopt;
  }
}

int64_t pimc::onnx::shapeExtent(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (MulOverflow(n, std::max<int64_t>(d, 1), n))
      return std::numeric_limits<int64_t>::max();
  return n;
}

std::string pimc::onnx::shapeProblem(ArrayRef<int64_t> shape) {
  for (auto [i, d] : enumerate(shape))
    if (d < 0)
      return formatv("dimension {0} is {1}; dimensions must be non-negative", i,
                     d);
  if (int64_t(shape.size()) > kMaxRank)
    return formatv("rank {0} is above the limit of {1} dimensions",
                   shape.size(), kMaxRank);
  if (shapeExtent(shape) > kMaxTensorElements)
    return formatv("the dimensions multiply out to more than {0} (2^40) "
                   "elements, the limit of a tensor (a zero-sized dimension "
                   "counts as 1)",
                   kMaxTensorElements);
  return "";
}

static unsigned storedSize(int32_t elemType) {
  using TP = ::onnx::TensorProto;
  switch (elemType) {
  case TP::INT8:
  case TP::UINT8:
  case TP::BOOL:
    return 1;
  case TP::INT16:
  case TP::UINT16:
  case TP::FLOAT16:
  case TP::BFLOAT16:
    return 2;
  case TP::FLOAT:
  case TP::INT32:
  case TP::UINT32:
    return 4;
  case TP::DOUBLE:
  case TP::INT64:
  case TP::UINT64:
    return 8;
  default:
    return 0;
  }
}

float pimc::onnx::halfToFloat(uint16_t bits) {
  APFloat v(APFloat::IEEEhalf(), APInt(16, bits));
  bool losesInfo = false;
  v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &losesInfo);
  return v.convertToFloat();
}

float pimc::onnx::bfloat16ToFloat(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}

/// Decodes `count` elements stored little-endian in `bytes` into `out`.
static void decodeRaw(int32_t elemType, const uint8_t *bytes, int64_t count,
                      TensorData &out) {
  using TP = ::onnx::TensorProto;
  auto load = [&](auto sample, int64_t i) {
    decltype(sample) v;
    std::memcpy(&v, bytes + i * sizeof(v), sizeof(v));
    return v;
  };
  for (int64_t i = 0; i < count; ++i) {
    switch (elemType) {
    case TP::FLOAT:
      out.f32.push_back(load(float(), i));
      break;
    case TP::DOUBLE:
      out.f32.push_back(float(load(double(), i)));
      break;
    case TP::FLOAT16:
      out.f32.push_back(halfToFloat(load(uint16_t(), i)));
      break;
    case TP::BFLOAT16:
      out.f32.push_back(bfloat16ToFloat(load(uint16_t(), i)));
      break;
    case TP::INT8:
      out.i64.push_back(load(int8_t(), i));
      break;
    case TP::UINT8:
      out.i64.push_back(load(uint8_t(), i));
      break;
    case TP::BOOL:
      out.i64.push_back(load(uint8_t(), i) != 0);
      break;
    case TP::INT16:
      out.i64.push_back(load(int16_t(), i));
      break;
    case TP::UINT16:
      out.i64.push_back(load(uint16_t(), i));
      break;
    case TP::INT32:
      out.i64.push_back(load(int32_t(), i));
      break;
    case TP::UINT32:
      out.i64.push_back(load(uint32_t(), i));
      break;
    case TP::INT64:
      out.i64.push_back(load(int64_t(), i));
      break;
    case TP::UINT64:
      out.i64.push_back(int64_t(load(uint64_t(), i)));
      break;
    default:
      break;
    }
  }
}

Expected<DecodedTensor> pimc::onnx::decodeTensor(const ::onnx::TensorProto &t,
                                                 StringRef baseDir,
                                                 StringRef file, StringRef what,
                                                 ExternalFiles *files,
                                                 bool bytesOnly) {
  std::string label = (file + ": " + what + " '" + t.name() + "'").str();
  auto err = [&](const Twine &msg) {
    return createStringError(inconvertibleErrorCode(), label + ": " + msg);
  };
  DecodedTensor d;
  d.data.name = t.name();
  d.elemType = t.data_type();
  d.data.onnxType = typeName(t.data_type());
  std::optional<TensorData::Kind> kind = kindOf(t.data_type());
  if (!kind)
    return err("element type " + d.data.onnxType + " is not supported");
  d.data.kind = *kind;
  d.data.shape.assign(t.dims().begin(), t.dims().end());
  std::string problem = shapeProblem(d.data.shape);
  if (!problem.empty())
    return err("dims: " + problem);
  // Within the extent limit: no overflow in the count or the byte size.
  int64_t count = 1;
  for (int64_t dim : d.data.shape)
    count *= dim;
  if (t.has_segment())
    return err("segmented tensors are not supported");
  unsigned elemSize = storedSize(t.data_type());
  uint64_t expectBytes = uint64_t(count) * elemSize;
  using TP = ::onnx::TensorProto;
  bool keepBytesOnly = bytesOnly && (t.data_type() == TP::FLOAT ||
                                     t.data_type() == TP::FLOAT16 ||
                                     t.data_type() == TP::BFLOAT16);

  if (t.data_location() == ::onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto &kv : t.external_data()) {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset" || kv.key() == "length") {
        int64_t v;
        if (!to_integer(kv.value(), v, 10) || v < 0)
          return err("external data " + kv.key() + " '" + kv.value() +
                     "' is not a non-negative integer");
        (kv.key() == "offset" ? offset : length) = v;
      }
    }
    if (location.empty())
      return err("external data has no location");
    Expected<std::string> resolved =
        resolveInside(baseDir, location, "external data location");
    if (!resolved)
      return err(toString(resolved.takeError()));
    SmallString<256> path(*resolved);
    ExternalFiles local;
    if (!files)
      files = &local;
    auto &slot = (*files)[path];
    if (!slot) {
      auto buf = MemoryBuffer::getFile(path, /*IsText=*/false,
                                       /*RequiresNullTerminator=*/false);
      if (!buf) {
        files->erase(path);
        return err("cannot open external data file '" + path +
                   "': " + buf.getError().message());
      }
      slot = std::move(*buf);
    }
    const MemoryBuffer *mapped = slot.get();
    uint64_t fileSize = mapped->getBufferSize();
    if (length < 0)
      length = int64_t(expectBytes);
    if (uint64_t(length) != expectBytes)
      return err(formatv("external data length {0} does not match {1} "
                         "elements of {2} ({3} bytes)",
                         length, count, d.data.onnxType, expectBytes));
    if (uint64_t(offset) > fileSize || uint64_t(length) > fileSize - offset)
      return err(formatv("external data [{0}, {1}) is outside '{2}' ({3} "
                         "bytes)",
                         offset, uint64_t(offset) + uint64_t(length), path,
                         fileSize));
    const uint8_t *bytes =
        reinterpret_cast<const uint8_t *>(mapped->getBufferStart()) + offset;
    d.raw.assign(bytes, bytes + length);
    if (!keepBytesOnly)
      decodeRaw(t.data_type(), d.raw.data(), count, d.data);
    return d;
  }

  if (t.has_raw_data()) {
    if (t.raw_data().size() != expectBytes)
      return err(formatv("raw_data has {0} bytes, expected {1} ({2} elements "
                         "of {3})",
                         t.raw_data().size(), expectBytes, count,
                         d.data.onnxType));
    const auto *bytes = reinterpret_cast<const uint8_t *>(t.raw_data().data());
    d.raw.assign(bytes, bytes + expectBytes);
    if (!keepBytesOnly)
      decodeRaw(t.data_type(), bytes, count, d.data);
    return d;
  }

  // Typed fields: ONNX stores narrow types widened to int32 (half types as
  // their bit patterns) and unsigned 32/64-bit types in uint64_data.
  int64_t have = 0;
  auto countError = [&](int64_t n) {
    return err(formatv("has {0} values, its shape needs {1}", n, count));
  };
  switch (t.data_type()) {
  case TP::FLOAT:
    have = t.float_data_size();
    if (have != count)
      return countError(have);
    d.data.f32.assign(t.float_data().begin(), t.float_data().end());
    d.raw.resize(count * 4);
    if (count)
      std::memcpy(d.raw.data(), d.data.f32.data(), count * 4);
    break;
  case TP::DOUBLE:
    have = t.double_data_size();
    if (have != count)
      return countError(have);
    for (double v : t.double_data())
      d.data.f32.push_back(float(v));
    break;
  case TP::INT64:
    have = t.int64_data_size();
    if (have != count)
      return countError(have);
    d.data.i64.assign(t.int64_data().begin(), t.int64_data().end());
    break;
  case TP::UINT32:
  case TP::UINT64:
    have = t.uint64_data_size();
    if (have != count)
      return countError(have);
    for (uint64_t v : t.uint64_data())
      d.data.i64.push_back(int64_t(v));
    break;
  case TP::FLOAT16:
  case TP::BFLOAT16:
    have = t.int32_data_size();
    if (have != count)
      return countError(have);
    for (int32_t v : t.int32_data()) {
      uint16_t bits = uint16_t(v);
      d.data.f32.push_back(t.data_type() == TP::FLOAT16
                               ? halfToFloat(bits)
                               : bfloat16ToFloat(bits));
      d.raw.push_back(uint8_t(bits));
      d.raw.push_back(uint8_t(bits >> 8));
    }
    break;
  default: // INT8/16/32, UINT8/16, BOOL
    have = t.int32_data_size();
    if (have != count)
      return countError(have);
    for (int32_t v : t.int32_data())
      d.data.i64.push_back(t.data_type() == TP::BOOL ? (v != 0) : v);
    break;
  }
  return d;
}

Expected<std::unique_ptr<::onnx::ModelProto>>
pimc::onnx::parseModelFile(StringRef path) {
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!buf)
    return createStringError(inconvertibleErrorCode(),
                             path +
                                 ": cannot open: " + buf.getError().message());
  auto model = std::make_unique<::onnx::ModelProto>();
  if ((*buf)->getBufferSize() > size_t(std::numeric_limits<int>::max()) ||
      !model->ParseFromArray((*buf)->getBufferStart(),
                             int((*buf)->getBufferSize())))
    return createStringError(
        inconvertibleErrorCode(),
        path + ": not a valid ONNX model (protobuf parse failed; the file "
               "is corrupt or truncated)");
  if (!model->has_graph())
    return createStringError(inconvertibleErrorCode(),
                             path + ": the model has no graph");
  return model;
}

Expected<TensorData> pimc::onnx::readTensorFile(StringRef path,
                                                int32_t valueType) {
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!buf)
    return createStringError(inconvertibleErrorCode(),
                             path +
                                 ": cannot open: " + buf.getError().message());
  ::onnx::TensorProto t;
  if ((*buf)->getBufferSize() > size_t(std::numeric_limits<int>::max()) ||
      !t.ParseFromArray((*buf)->getBufferStart(), int((*buf)->getBufferSize())))
    return createStringError(inconvertibleErrorCode(),
                             path + ": not a valid TensorProto");
  if (valueType == ::onnx::TensorProto::BFLOAT16 &&
      t.data_type() == ::onnx::TensorProto::UINT16)
    t.set_data_type(::onnx::TensorProto::BFLOAT16);
  auto d = decodeTensor(t, sys::path::parent_path(path), path, "tensor");
  if (!d)
    return d.takeError();
  return std::move(d->data);
}

Expected<ModelSummary> pimc::onnx::summarizeModelFile(StringRef path) {
  auto model = parseModelFile(path);
  if (!model)
    return model.takeError();
  ModelSummary s;
  for (const auto &op : (*model)->opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx")
      s.opset = op.version();
  const auto &g = (*model)->graph();
  for (const auto &node : g.node())
    s.opTypes.push_back(node.op_type());
  StringSet<> inits;
  for (const auto &t : g.initializer())
    inits.insert(t.name());
  auto typeOf = [](const ::onnx::ValueInfoProto &v) {
    return v.type().has_tensor_type() ? v.type().tensor_type().elem_type() : 0;
  };
  for (const auto &in : g.input())
    if (!inits.contains(in.name())) {
      s.inputs.push_back(in.name());
      s.inputTypes.push_back(typeOf(in));
      std::optional<SmallVector<int64_t>> dims;
      if (in.type().has_tensor_type() && in.type().tensor_type().has_shape()) {
        dims.emplace();
        for (const auto &d : in.type().tensor_type().shape().dim())
          dims->push_back(d.has_dim_value() ? d.dim_value() : -1);
      }
      s.inputDims.push_back(std::move(dims));
    }
  for (const auto &out : g.output()) {
    s.outputs.push_back(out.name());
    s.outputTypes.push_back(typeOf(out));
  }
  return s;
}

Error pimc::onnx::writeWeights(StringRef path, ArrayRef<WeightTensor> weights) {
  json::Object header;
  uint64_t offset = 0;
  for (const WeightTensor &w : weights) {
    json::Array shape;
    for (int64_t d : w.shape)
      shape.push_back(d);
    header[w.name] = json::Object{
        {"dtype", ckpt::dtypeName(w.dtype)},
        {"shape", std::move(shape)},
        {"data_offsets", json::Array{offset, offset + w.bytes.size()}}};
    offset += w.bytes.size();
  }
  std::string text;
  raw_string_ostream(text) << json::Value(std::move(header));
  // Pad the header so tensor data starts 8-byte aligned.
  while ((8 + text.size()) % 8)
    text.push_back(' ');
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_None);
  if (ec)
    return createStringError(ec,
                             "cannot write '" + path + "': " + ec.message());
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i)
    os << char((n >> (8 * i)) & 0xff);
  os << text;
  for (const WeightTensor &w : weights)
    os.write(reinterpret_cast<const char *>(w.bytes.data()), w.bytes.size());
  os.close();
  if (os.has_error())
    return createStringError(os.error(), "cannot write '" + path +
                                             "': " + os.error().message());
  return Error::success();
}
