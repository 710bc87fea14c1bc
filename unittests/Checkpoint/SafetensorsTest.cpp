//===- SafetensorsTest.cpp - safetensors reader tests ---------------------===//

#include "pimc/Checkpoint/Safetensors.h"
#include "pimc/Checkpoint/GPTQ.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

using namespace llvm;
using namespace pimc::ckpt;

namespace {

/// One header entry; offsets are written exactly as given so tests can lie.
struct Entry {
  std::string name, dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

std::string headerJson(const std::vector<Entry> &entries,
                       const std::string &metadata = "") {
  std::string s = "{";
  if (!metadata.empty())
    s += "\"__metadata__\":" + metadata;
  for (const Entry &e : entries) {
    if (s.size() > 1)
      s += ",";
    s += "\"" + e.name + "\":{\"dtype\":\"" + e.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < e.shape.size(); ++i)
      s += (i ? "," : "") + std::to_string(e.shape[i]);
    s += formatv("],\"data_offsets\":[{0},{1}]}", e.begin, e.end).str();
  }
  return s + "}";
}

/// The file image: u64 LE header length, header padded to 8 bytes as the
/// reference writer does, then data.
std::string fileBytes(const std::string &header, const std::string &data,
                      std::optional<uint64_t> lengthField = std::nullopt) {
  std::string h = header;
  while (h.size() % 8)
    h += ' ';
  char len[8];
  support::endian::write64le(len, lengthField ? *lengthField : h.size());
  return std::string(len, 8) + h + data;
}

std::string bytesOf(const void *p, size_t n) {
  return std::string(static_cast<const char *>(p), n);
}

class SafetensorsTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(sys::fs::createUniqueDirectory("pimc-safetensors", dir));
  }
  void TearDown() override { sys::fs::remove_directories(dir); }

  std::string write(StringRef name, const std::string &contents) {
    SmallString<256> p(dir);
    sys::path::append(p, name);
    std::error_code ec;
    raw_fd_ostream os(p, ec);
    EXPECT_FALSE(ec) << ec.message();
    os << contents;
    return std::string(p);
  }

  /// Opens `contents` and returns the error message ("" on success).
  std::string openError(const std::string &contents) {
    std::string path = write("t.safetensors", contents);
    auto file = SafetensorsFile::open(path);
    if (file)
      return "";
    std::string msg = toString(file.takeError());
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    return msg;
  }

  SmallString<128> dir;
};

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "'" << (haystack) << "' does not contain '" << (needle) << "'"

TEST(DTypeTest, NamesSizesRoundTrip) {
  for (DType d :
       {DType::Bool, DType::U8, DType::I8, DType::I16, DType::U16, DType::F16,
        DType::BF16, DType::I32, DType::U32, DType::F32, DType::F64, DType::I64,
        DType::U64, DType::F8_E4M3, DType::F8_E5M2, DType::F8_E8M0}) {
    std::optional<DType> back = parseDType(dtypeName(d));
    ASSERT_TRUE(back) << dtypeName(d).str();
    EXPECT_EQ(*back, d);
  }
  EXPECT_EQ(dtypeName(DType::BF16), "BF16");
  EXPECT_EQ(dtypeName(DType::F8_E4M3), "F8_E4M3");
  EXPECT_EQ(dtypeSize(DType::Bool), 1u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_EQ(dtypeSize(DType::F8_E5M2), 1u);
  EXPECT_EQ(dtypeSize(DType::F8_E8M0), 1u);
  EXPECT_FALSE(parseDType("F4"));
  EXPECT_FALSE(parseDType("f32"));
}

TEST_F(SafetensorsTest, ValidFileWithMetadata) {
  float f32[6] = {1, 2, 3, 4, 5, 6};
  uint16_t bf16[2] = {0x3f80, 0xc000}; // 1.0, -2.0
  uint16_t f16[4] = {0x3c00, 0x4000, 0x4200, 0x4400};
  std::string data = bytesOf(f32, 24) + bytesOf(bf16, 4) + bytesOf(f16, 8);
  std::string header = headerJson({{"w.f32", "F32", {2, 3}, 0, 24},
                                   {"b.bf16", "BF16", {2}, 24, 28},
                                   {"h.f16", "F16", {1, 2, 2}, 28, 36},
                                   {"scalar.empty", "F32", {0}, 36, 36}},
                                  R"({"format":"pt","note":"x"})");
  std::string path = write("ok.safetensors", fileBytes(header, data));

  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(bool(file)) << toString(file.takeError());
  EXPECT_EQ((*file)->path(), path);
  EXPECT_EQ((*file)->metadata().lookup("format"), "pt");
  EXPECT_EQ((*file)->metadata().lookup("note"), "x");
  ASSERT_EQ((*file)->tensors().size(), 4u);

  // Tensors come back in file order.
  const TensorView &w = (*file)->tensors()[0];
  EXPECT_EQ(w.name, "w.f32");
  EXPECT_EQ(w.dtype, DType::F32);
  EXPECT_EQ(ArrayRef<int64_t>(w.shape), ArrayRef<int64_t>({2, 3}));
  EXPECT_EQ(w.numElements(), 6);
  EXPECT_EQ(w.numBytes, 24u);
  EXPECT_EQ(w.file, path);
  float got[6];
  std::memcpy(got, w.data, 24);
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[5], 6.0f);

  const TensorView &b = (*file)->tensors()[1];
  EXPECT_EQ(b.name, "b.bf16");
  EXPECT_EQ(b.dtype, DType::BF16);
  uint16_t bits;
  std::memcpy(&bits, b.data + 2, 2);
  EXPECT_EQ(bits, 0xc000);

  const TensorView &h = (*file)->tensors()[2];
  EXPECT_EQ(h.dtype, DType::F16);
  EXPECT_EQ(h.numElements(), 4);
  EXPECT_EQ(h.data, w.data + 28);

  EXPECT_EQ((*file)->tensors()[3].numElements(), 0);

  auto store = WeightStore::openFiles({path});
  ASSERT_TRUE(bool(store)) << toString(store.takeError());
  EXPECT_EQ((*store)->totalBytes(), 36u);
  EXPECT_EQ(
      (*store)->names(),
      (std::vector<std::string>{"b.bf16", "h.f16", "scalar.empty", "w.f32"}));
  ASSERT_NE((*store)->lookup("h.f16"), nullptr);
  EXPECT_EQ((*store)->lookup("h.f16")->numBytes, 8u);
  EXPECT_EQ((*store)->lookup("nope"), nullptr);
}

// A fused projection's part: rows [begin, end) of a stored tensor, a view
// into the same bytes; anything else with brackets is no tensor.
TEST_F(SafetensorsTest, RowViews) {
  float f32[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  uint16_t bf16[2] = {0x3f80, 0xc000};
  std::string data = bytesOf(f32, 48) + bytesOf(bf16, 4);
  std::string header = headerJson({{"w", "F32", {4, 3}, 0, 48},
                                   {"b", "BF16", {2}, 48, 52},
                                   {"x[0:1]", "BF16", {0}, 52, 52}});
  std::string path = write("rows.safetensors", fileBytes(header, data));
  auto store = WeightStore::openFiles({path});
  ASSERT_TRUE(bool(store)) << toString(store.takeError());

  EXPECT_EQ(rowSliceName("w", 1, 3), "w[1:3]");
  const TensorView *v = (*store)->lookup("w[1:3]");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->name, "w[1:3]");
  EXPECT_EQ(v->dtype, DType::F32);
  EXPECT_EQ(ArrayRef<int64_t>(v->shape), ArrayRef<int64_t>({2, 3}));
  EXPECT_EQ(v->numBytes, 24u);
  EXPECT_EQ(v->data, (*store)->lookup("w")->data + 12);
  EXPECT_EQ(v->file, path);
  // The same view each time; a one-dimensional tensor's elements are rows.
  EXPECT_EQ((*store)->lookup("w[1:3]"), v);
  const TensorView *b1 = (*store)->lookup("b[1:2]");
  ASSERT_NE(b1, nullptr);
  EXPECT_EQ(ArrayRef<int64_t>(b1->shape), ArrayRef<int64_t>({1}));
  EXPECT_EQ(b1->numBytes, 2u);
  // A stored name wins over the view syntax.
  ASSERT_NE((*store)->lookup("x[0:1]"), nullptr);
  EXPECT_EQ((*store)->lookup("x[0:1]")->numBytes, 0u);

  // Row views nest: rows of a view are a view into the same bytes.
  const TensorView *nested = (*store)->lookup("w[1:4][1:3]");
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(ArrayRef<int64_t>(nested->shape), ArrayRef<int64_t>({2, 3}));
  EXPECT_EQ(nested->data, (*store)->lookup("w")->data + 24);
  EXPECT_EQ(nested->numBytes, 24u);
  ASSERT_NE((*store)->lookup("w[0:2][0:1]"), nullptr);
  EXPECT_EQ((*store)->lookup("w[0:2][0:1]")->data, (*store)->lookup("w")->data);

  for (const char *bad :
       {"w[3:3]", "w[2:1]", "w[0:5]", "w[-1:2]", "w[0:2", "w0:2]", "w[a:2]",
        "w[0:2]x", "w[0:2][1:3]", "w[ 0:2]", "nope[0:1]",
        "w[0:99999999999999999999]", "w[]", "w[:]", "[0:1]"})
    EXPECT_EQ((*store)->lookup(bad), nullptr) << bad;
  // Views are not tensors of the checkpoint: its table is unchanged.
  EXPECT_EQ((*store)->names(), (std::vector<std::string>{"b", "w", "x[0:1]"}));
  EXPECT_EQ((*store)->totalBytes(), 52u);
}

// A Conv1D weight (stored [in, out]) read as its transpose: one copy in the
// stored dtype, shape [out, in]; row views of the transpose are columns of
// the stored tensor.
TEST_F(SafetensorsTest, TransposedViews) {
  float f32[6] = {0, 1, 2, 3, 4, 5}; // [[0 1 2] [3 4 5]]
  uint16_t bf16[6] = {0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0, 0x40c0};
  std::string data = bytesOf(f32, 24) + bytesOf(bf16, 12);
  std::string header = headerJson({{"c", "F32", {2, 3}, 0, 24},
                                   {"h", "BF16", {3, 2}, 24, 36},
                                   {"b", "F32", {0}, 36, 36}});
  std::string path = write("conv1d.safetensors", fileBytes(header, data));
  auto store = WeightStore::openFiles({path});
  ASSERT_TRUE(bool(store)) << toString(store.takeError());

  EXPECT_EQ(transposedName("c"), "c^T");
  const TensorView *t = (*store)->lookup("c^T");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->name, "c^T");
  EXPECT_EQ(t->dtype, DType::F32);
  EXPECT_EQ(ArrayRef<int64_t>(t->shape), ArrayRef<int64_t>({3, 2}));
  EXPECT_EQ(t->numBytes, 24u);
  EXPECT_EQ(t->file, path);
  float got[6];
  std::memcpy(got, t->data, 24);
  EXPECT_EQ(ArrayRef<float>(got), ArrayRef<float>({0, 3, 1, 4, 2, 5}));
  // Materialized once: the same view (and bytes) each time.
  EXPECT_EQ((*store)->lookup("c^T"), t);
  EXPECT_NE(t->data, (*store)->lookup("c")->data);

  // Rows of the transpose: columns 1..2 of the stored tensor, a view into
  // the transpose's bytes.
  const TensorView *cols = (*store)->lookup(rowSliceName("c^T", 1, 3));
  ASSERT_NE(cols, nullptr);
  EXPECT_EQ(ArrayRef<int64_t>(cols->shape), ArrayRef<int64_t>({2, 2}));
  EXPECT_EQ(cols->data, t->data + 8);
  EXPECT_EQ(cols->numBytes, 16u);

  // Two-byte elements move whole.
  const TensorView *h = (*store)->lookup("h^T");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->dtype, DType::BF16);
  EXPECT_EQ(ArrayRef<int64_t>(h->shape), ArrayRef<int64_t>({2, 3}));
  uint16_t hg[6];
  std::memcpy(hg, h->data, 12);
  EXPECT_EQ(
      ArrayRef<uint16_t>(hg),
      ArrayRef<uint16_t>({0x3f80, 0x4040, 0x40a0, 0x4000, 0x4080, 0x40c0}));

  // Any two-dimensional tensor has a transpose, a view's or a transpose's
  // included.
  const TensorView *row = (*store)->lookup("c[1:2]^T");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(ArrayRef<int64_t>(row->shape), ArrayRef<int64_t>({3, 1}));
  std::memcpy(got, row->data, 12);
  EXPECT_EQ(ArrayRef<float>(got, 3), ArrayRef<float>({3, 4, 5}));
  const TensorView *back = (*store)->lookup("c^T^T");
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(ArrayRef<int64_t>(back->shape), ArrayRef<int64_t>({2, 3}));
  std::memcpy(got, back->data, 24);
  EXPECT_EQ(ArrayRef<float>(got), ArrayRef<float>({0, 1, 2, 3, 4, 5}));

  for (const char *bad : {"b^T", "nope^T", "c^t", "c^T[2:2]", "c^T[0:4]", "^T",
                          "c[0]^T", "c^T^T[0:3]"})
    EXPECT_EQ((*store)->lookup(bad), nullptr) << bad;
  // The checkpoint's table is unchanged.
  EXPECT_EQ((*store)->names(), (std::vector<std::string>{"b", "c", "h"}));
  EXPECT_EQ((*store)->totalBytes(), 36u);
}

/// gpt-oss's fused experts (transformers GptOssExperts), E = 2, H = 3,
/// I = 2: gate_up_proj [E, H, 2I] (x @ W; gate = columns 0::2, up =
/// columns 1::2), its bias [E, 2I], down_proj [E, I, H].
class ExpertTensorsTest : public SafetensorsTest {
protected:
  static constexpr int64_t E = 2, H = 3, I = 2;
  /// gate_up_proj[e][h][c] = 100 e + 10 h + c.
  static float gateUp(int64_t e, int64_t h, int64_t c) {
    return float(100 * e + 10 * h + c);
  }
  /// The bias's bf16 bits: a distinct pattern per element.
  static uint16_t bias(int64_t e, int64_t c) {
    return uint16_t(0x3f00 + 16 * e + c);
  }
  /// down_proj[e][i][h] = 1000 + 100 e + 10 i + h, bf16 bits.
  static uint16_t down(int64_t e, int64_t i, int64_t h) {
    return uint16_t(1000 + 100 * e + 10 * i + h);
  }

  void SetUp() override {
    SafetensorsTest::SetUp();
    std::vector<float> gu;
    std::vector<uint16_t> b, d;
    for (int64_t e = 0; e < E; ++e) {
      for (int64_t h = 0; h < H; ++h)
        for (int64_t c = 0; c < 2 * I; ++c)
          gu.push_back(gateUp(e, h, c));
      for (int64_t c = 0; c < 2 * I; ++c)
        b.push_back(bias(e, c));
      for (int64_t i = 0; i < I; ++i)
        for (int64_t h = 0; h < H; ++h)
          d.push_back(down(e, i, h));
    }
    uint64_t guBytes = gu.size() * 4, bBytes = b.size() * 2,
             dBytes = d.size() * 2;
    std::string data = bytesOf(gu.data(), guBytes) + bytesOf(b.data(), bBytes) +
                       bytesOf(d.data(), dBytes);
    uint64_t bEnd = guBytes + bBytes, dEnd = bEnd + dBytes;
    std::string header = headerJson({{"gu", "F32", {E, H, 2 * I}, 0, guBytes},
                                     {"b", "BF16", {E, 2 * I}, guBytes, bEnd},
                                     {"d", "BF16", {E, I, H}, bEnd, dEnd}});
    path = write("experts.safetensors", fileBytes(header, data));
    auto opened = WeightStore::openFiles({path});
    ASSERT_TRUE(bool(opened)) << toString(opened.takeError());
    store = std::move(*opened);
  }

  /// The floats of `name`, which must be F32 of shape `shape`.
  std::vector<float> floats(StringRef name, ArrayRef<int64_t> shape) {
    const TensorView *t = store->lookup(name);
    EXPECT_NE(t, nullptr) << name.str();
    if (!t)
      return {};
    EXPECT_EQ(t->dtype, DType::F32) << name.str();
    EXPECT_EQ(ArrayRef<int64_t>(t->shape), shape) << name.str();
    EXPECT_EQ(t->numBytes, uint64_t(t->numElements()) * 4) << name.str();
    std::vector<float> out(t->numBytes / 4);
    std::memcpy(out.data(), t->data, t->numBytes);
    return out;
  }
  /// The bf16 bits of `name`, which must be BF16 of shape `shape`.
  std::vector<uint16_t> halves(StringRef name, ArrayRef<int64_t> shape) {
    const TensorView *t = store->lookup(name);
    EXPECT_NE(t, nullptr) << name.str();
    if (!t)
      return {};
    EXPECT_EQ(t->dtype, DType::BF16) << name.str();
    EXPECT_EQ(ArrayRef<int64_t>(t->shape), shape) << name.str();
    EXPECT_EQ(t->numBytes, uint64_t(t->numElements()) * 2) << name.str();
    std::vector<uint16_t> out(t->numBytes / 2);
    std::memcpy(out.data(), t->data, t->numBytes);
    return out;
  }
  /// Whether `t`'s bytes lie inside `outer`'s.
  static bool inside(const TensorView *t, const TensorView *outer) {
    return t->data >= outer->data &&
           t->data + t->numBytes <= outer->data + outer->numBytes;
  }

  std::string path;
  std::unique_ptr<WeightStore> store;
};

// One expert's matrix: a view of the mapped tensor, no copy.
TEST_F(ExpertTensorsTest, IndexViews) {
  EXPECT_EQ(indexName("gu", 1), "gu[1]");
  const TensorView *gu = store->lookup("gu");
  ASSERT_NE(gu, nullptr);
  const TensorView *e1 = store->lookup(indexName("gu", 1));
  ASSERT_NE(e1, nullptr);
  EXPECT_EQ(e1->name, "gu[1]");
  EXPECT_EQ(e1->dtype, DType::F32);
  EXPECT_EQ(ArrayRef<int64_t>(e1->shape), ArrayRef<int64_t>({H, 2 * I}));
  EXPECT_EQ(e1->numBytes, uint64_t(H * 2 * I * 4));
  EXPECT_EQ(e1->data, gu->data + H * 2 * I * 4);
  EXPECT_TRUE(inside(e1, gu));
  EXPECT_EQ(e1->file, path);
  EXPECT_EQ(store->lookup("gu[1]"), e1);
  std::vector<float> want;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t c = 0; c < 2 * I; ++c)
      want.push_back(gateUp(1, h, c));
  EXPECT_EQ(floats("gu[1]", {H, 2 * I}), want);

  // An index of an index, and of a 2-D tensor (one row, dim dropped).
  const TensorView *row = store->lookup("gu[1][2]");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(ArrayRef<int64_t>(row->shape), ArrayRef<int64_t>({2 * I}));
  EXPECT_EQ(row->data, e1->data + 2 * 2 * I * 4);
  const TensorView *b0 = store->lookup("b[0]");
  ASSERT_NE(b0, nullptr);
  EXPECT_EQ(ArrayRef<int64_t>(b0->shape), ArrayRef<int64_t>({2 * I}));
  EXPECT_TRUE(inside(b0, store->lookup("b")));
  // Rows of an index are a view too (nested).
  const TensorView *rows = store->lookup(rowSliceName("gu[1]", 1, 3));
  ASSERT_NE(rows, nullptr);
  EXPECT_EQ(ArrayRef<int64_t>(rows->shape), ArrayRef<int64_t>({2, 2 * I}));
  EXPECT_EQ(rows->data, e1->data + 2 * I * 4);
  EXPECT_EQ(rows->numBytes, uint64_t(2 * 2 * I * 4));
  const TensorView *some = store->lookup("gu[0:2][1]");
  ASSERT_NE(some, nullptr);
  EXPECT_EQ(some->data, e1->data);
}

// The importer's names for expert e: gate and up in nn.Linear's [I, H],
// down [H, I], each checked against the hand-computed layout.
TEST_F(ExpertTensorsTest, GateUpDownOfOneExpert) {
  for (int64_t e = 0; e < E; ++e) {
    std::string ge = indexName("gu", e);
    // The whole transpose of expert e: [2I, H], out[c][h] = gu[e][h][c].
    std::string t = transposedName(ge);
    std::vector<float> want;
    for (int64_t c = 0; c < 2 * I; ++c)
      for (int64_t h = 0; h < H; ++h)
        want.push_back(gateUp(e, h, c));
    EXPECT_EQ(floats(t, {2 * I, H}), want) << t;

    for (int64_t half = 0; half < 2; ++half) { // gate, up
      // Looked up in a fresh store, so the whole transpose is not there to
      // be viewed: the rows are computed from gu[e] directly.
      auto fresh = WeightStore::openFiles({path});
      ASSERT_TRUE(bool(fresh)) << toString(fresh.takeError());
      std::string name = stridedRowsName(t, half, 2 * I, 2);
      EXPECT_EQ(name, formatv("gu[{0}]^T[{1}:4:2]", e, half).str());
      const TensorView *part = (*fresh)->lookup(name);
      ASSERT_NE(part, nullptr) << name;
      EXPECT_EQ(part->name, name);
      EXPECT_EQ(part->dtype, DType::F32);
      EXPECT_EQ(ArrayRef<int64_t>(part->shape), ArrayRef<int64_t>({I, H}));
      EXPECT_EQ(part->numBytes, uint64_t(I * H * 4));
      EXPECT_FALSE(inside(part, (*fresh)->lookup("gu"))) << "a copy";
      std::vector<float> got(I * H);
      std::memcpy(got.data(), part->data, part->numBytes);
      std::vector<float> wantPart;
      for (int64_t i = 0; i < I; ++i)
        for (int64_t h = 0; h < H; ++h)
          wantPart.push_back(gateUp(e, h, 2 * i + half));
      EXPECT_EQ(got, wantPart) << name;
      EXPECT_EQ((*fresh)->lookup(name), part);
      // In `store` the whole transpose was looked up above, so there the
      // rows are gathered from it: the same values.
      EXPECT_EQ(floats(name, {I, H}), wantPart) << name;
      const TensorView *whole = (*fresh)->lookup(t);
      ASSERT_NE(whole, nullptr);
      EXPECT_FALSE(inside(part, whole));

      // Gate / up bias: [I], every other element of b[e].
      std::string bname = stridedRowsName(indexName("b", e), half, 2 * I, 2);
      EXPECT_EQ(bname, formatv("b[{0}][{1}:4:2]", e, half).str());
      std::vector<uint16_t> wantBias;
      for (int64_t i = 0; i < I; ++i)
        wantBias.push_back(bias(e, 2 * i + half));
      EXPECT_EQ(halves(bname, {I}), wantBias) << bname;
    }

    // Down: [H, I], out[h][i] = d[e][i][h], in bf16.
    std::vector<uint16_t> wantDown;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < I; ++i)
        wantDown.push_back(down(e, i, h));
    EXPECT_EQ(halves(transposedName(indexName("d", e)), {H, I}), wantDown);
  }

  // One row of a transpose is a column of the stored matrix; step 1 is a
  // plain row range; a step past the end selects one row.
  std::vector<float> col;
  for (int64_t h = 0; h < H; ++h)
    col.push_back(gateUp(1, h, 3));
  EXPECT_EQ(floats("gu[1]^T[3]", {H}), col);
  EXPECT_EQ(floats("gu[1]^T[3:4:7]", {1, H}), col);
  EXPECT_EQ(stridedRowsName("x", 1, 3, 1), "x[1:3]");
  EXPECT_EQ(floats("gu[0]^T[1:3:1]", {2, H}), floats("gu[0]^T[1:3]", {2, H}));
  const TensorView *b1 = store->lookup("b[1]");
  const TensorView *one = store->lookup("b[1][1:2:5]");
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->data, b1->data + 2) << "one row is contiguous: a view";
  const TensorView *same = store->lookup("b[1][1:3:1]");
  ASSERT_NE(same, nullptr);
  EXPECT_EQ(same->data, b1->data + 2);
  // Strided rows of a stored 3-D tensor keep the dimension ([0:2:2] is
  // expert 0 alone).
  EXPECT_EQ(ArrayRef<int64_t>(store->lookup("gu[0:2:2]")->shape),
            ArrayRef<int64_t>({1, H, 2 * I}));

  // Derived tensors are not tensors of the checkpoint.
  EXPECT_EQ(store->names(), (std::vector<std::string>{"b", "d", "gu"}));
}

// Head-blocked rows (MLA's kv_b_proj per head): rows [a, b) of each block of
// B rows as a 3-D tensor; whole blocks are a view.
TEST_F(ExpertTensorsTest, BlockRows) {
  std::string name = blockRowsName("gu[1]^T", 2, 1, 2);
  EXPECT_EQ(name, "gu[1]^T{2:1:2}");
  // gu[1]^T is [2I, H]; its rows 1 and 3 are columns 1 and 3 of gu[1].
  std::vector<float> want;
  for (int64_t c : {1, 3})
    for (int64_t h = 0; h < H; ++h)
      want.push_back(gateUp(1, h, c));
  EXPECT_EQ(floats(name, {2, 1, H}), want);
  // Two rows of each block of three rows of the [H, 2I] gu[0] (one block).
  std::vector<float> firstTwo;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t c = 0; c < 2 * I; ++c)
      firstTwo.push_back(gateUp(0, h, c));
  EXPECT_EQ(floats("gu[0]{3:0:2}", {1, 2, 2 * I}), firstTwo);
  const TensorView *whole = store->lookup("b{1:0:1}");
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(whole->data, store->lookup("b")->data) << "whole blocks: a view";
  EXPECT_EQ(ArrayRef<int64_t>(whole->shape), ArrayRef<int64_t>({E, 1, 2 * I}));
  // Blocks that do not divide the rows, empty or out-of-block rows, a
  // missing field, a 3-D base.
  for (const char *bad :
       {"gu[0]{2:0:1}", "gu[0]{3:1:1}", "gu[0]{3:0:4}", "gu[0]{3:0}",
        "gu[0]{0:0:0}", "gu{1:0:1}", "gu[0]{3:-1:2}", "gu[0]{3:0:2"})
    EXPECT_EQ(store->lookup(bad), nullptr) << bad;
}

TEST_F(ExpertTensorsTest, MalformedNames) {
  // Not the grammar: decimal integers only, one to three of them.
  for (const char *bad :
       {"gu[-1]", "gu[+1]", "gu[0x1]", "gu[ 1]", "gu[1 ]", "gu[1.0]", "gu[]",
        "gu[1:2:3:4]", "gu[1:]", "gu[:2]", "gu[0:2:]", "gu[1]]", "gu[[1]",
        "[0]", "gu[1]^t", "gu[1]T", "gu[1]^T^", "gu[99999999999999999999]"})
    EXPECT_EQ(store->lookup(bad), nullptr) << bad;
  // Empty or backwards rows, a zero step, rows or an index past the end.
  for (const char *bad :
       {"gu[2]", "gu[0:2:0]", "gu[1:1:1]", "gu[2:1:1]", "gu[0:3:1]",
        "gu[0][3:4]", "gu[1]^T[0:5:2]", "gu[1]^T[4]", "gu[1]^T[2:2]",
        "gu[1]^T[0:4:0]", "b[0][0:99999999999999999999:2]"})
    EXPECT_EQ(store->lookup(bad), nullptr) << bad;
  // An unknown base; an index of a 1-D tensor; a transpose of a 1-D or 3-D
  // one.
  for (const char *bad :
       {"nope[0]", "nope[0]^T", "b[0][0]", "b[0][1]^T", "gu[1]^T[3][0]",
        "b[1]^T^T", "gu^T", "gu[0:1]^T", "gu[0:2:2]^T"})
    EXPECT_EQ(store->lookup(bad), nullptr) << bad;
  // At most 8 suffixes: a hostile name cannot recurse or copy without bound
  // (8 transposes of gu[1] resolve, 10 do not).
  std::string deep = "gu[1]";
  for (int i = 0; i < 7; ++i)
    deep += "^T";
  EXPECT_NE(store->lookup(deep), nullptr);
  EXPECT_EQ(store->lookup(deep + "^T^T"), nullptr);
  EXPECT_EQ(store->names(), (std::vector<std::string>{"b", "d", "gu"}));
}

// Many threads resolving the same names get the same tensors.
TEST_F(ExpertTensorsTest, ConcurrentLookups) {
  std::vector<std::string> names = {
      "gu[1]^T[0:4:2]", "gu[1]^T[1:4:2]", "gu[1]^T",   "gu[0]^T[1:3]",
      "d[1]^T",         "b[1][0:4:2]",    "gu[1][1:3]"};
  constexpr int threads = 8;
  std::vector<std::vector<const TensorView *>> seen(
      threads, std::vector<const TensorView *>(names.size()));
  std::vector<std::thread> pool;
  for (int k = 0; k < threads; ++k)
    pool.emplace_back([&, k] {
      // Each thread starts at a different name.
      for (size_t j = 0; j < names.size(); ++j) {
        size_t i = (j + size_t(k)) % names.size();
        seen[k][i] = store->lookup(names[i]);
      }
    });
  for (std::thread &t : pool)
    t.join();
  for (int k = 0; k < threads; ++k)
    for (size_t i = 0; i < names.size(); ++i) {
      ASSERT_NE(seen[k][i], nullptr) << names[i];
      EXPECT_EQ(seen[k][i], store->lookup(names[i])) << names[i];
    }
  std::vector<float> want;
  for (int64_t i = 0; i < I; ++i)
    for (int64_t h = 0; h < H; ++h)
      want.push_back(gateUp(1, h, 2 * i + 1));
  EXPECT_EQ(floats("gu[1]^T[1:4:2]", {I, H}), want);
}

// Transposes copy in tiles: sizes past one tile, with ragged edges, and
// strided rows of a transpose, against the element-by-element definition.
TEST_F(SafetensorsTest, TransposeTiles) {
  const int64_t rows = 70, cols = 131;
  std::vector<uint16_t> x(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      x[r * cols + c] = uint16_t(r * 1000 + c);
  std::string path =
      write("tiles.safetensors",
            fileBytes(headerJson({{"x", "U16", {rows, cols}, 0, 2 * x.size()}}),
                      bytesOf(x.data(), 2 * x.size())));
  auto store = WeightStore::openFiles({path});
  ASSERT_TRUE(bool(store)) << toString(store.takeError());
  struct Case {
    int64_t begin, end, step;
  };
  for (Case c : {Case{3, 131, 5}, Case{0, 131, 2}, Case{1, 131, 2},
                 Case{64, 129, 1}, Case{0, 131, 1}}) {
    std::string name = stridedRowsName("x^T", c.begin, c.end, c.step);
    const TensorView *t = (*store)->lookup(name);
    ASSERT_NE(t, nullptr) << name;
    int64_t count = (c.end - c.begin + c.step - 1) / c.step;
    EXPECT_EQ(ArrayRef<int64_t>(t->shape), ArrayRef<int64_t>({count, rows}));
    ASSERT_EQ(t->numBytes, uint64_t(count * rows * 2)) << name;
    std::vector<uint16_t> got(count * rows);
    std::memcpy(got.data(), t->data, t->numBytes);
    for (int64_t k = 0; k < count; ++k)
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(got[k * rows + r], x[r * cols + c.begin + k * c.step])
            << name << " row " << k << " col " << r;
  }
  const TensorView *whole = (*store)->lookup("x^T");
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(ArrayRef<int64_t>(whole->shape), ArrayRef<int64_t>({cols, rows}));
  std::vector<uint16_t> got(rows * cols);
  std::memcpy(got.data(), whole->data, whole->numBytes);
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < rows; ++r)
      ASSERT_EQ(got[c * rows + r], x[r * cols + c]) << c << ", " << r;
}

TEST_F(SafetensorsTest, ZeroTensorsAndScalars) {
  EXPECT_EQ(openError(fileBytes("{}", "")), "");
  EXPECT_EQ(openError(fileBytes(R"({"__metadata__":{"format":"pt"}})", "")),
            "");
  // A 0-d tensor has one element.
  EXPECT_EQ(openError(fileBytes(headerJson({{"s", "I64", {}, 0, 8}}),
                                std::string(8, '\0'))),
            "");
}

TEST_F(SafetensorsTest, TooShortForLength) {
  EXPECT_CONTAINS(openError("abc"), "too short");
}

TEST_F(SafetensorsTest, HeaderLengthTooBig) {
  std::string header = headerJson({{"x", "F32", {1}, 0, 4}});
  EXPECT_CONTAINS(openError(fileBytes(header, "abcd", 1000)),
                  "exceeds the file size");
  EXPECT_CONTAINS(openError(fileBytes(header, "abcd", 200ull * 1000 * 1000)),
                  "100 MB");
}

TEST_F(SafetensorsTest, BadJson) {
  EXPECT_CONTAINS(openError(fileBytes("{\"x\": [1, 2", "")),
                  "header is not valid JSON");
  EXPECT_CONTAINS(openError(fileBytes("[1, 2]", "")), "not a JSON object");
}

TEST_F(SafetensorsTest, UnknownDType) {
  std::string msg =
      openError(fileBytes(headerJson({{"layer.w", "F4", {8}, 0, 4}}), "abcd"));
  EXPECT_CONTAINS(msg, "layer.w");
  EXPECT_CONTAINS(msg, "unknown dtype 'F4'");
}

TEST_F(SafetensorsTest, BadShapeAndOffsets) {
  EXPECT_CONTAINS(
      openError(fileBytes(headerJson({{"neg", "U8", {-1}, 0, 0}}), "")),
      "tensor 'neg': shape[0]: must be non-negative, got -1");
  EXPECT_CONTAINS(
      openError(fileBytes(
          R"({"t":{"dtype":"U8","shape":[2],"data_offsets":[0]}})", "ab")),
      "tensor 't': data_offsets: must be two integers [begin, end], got 1");
  std::string msg =
      openError(fileBytes(headerJson({{"rev", "U8", {0}, 4, 2}}), "abcd"));
  EXPECT_CONTAINS(msg, "rev");
  EXPECT_CONTAINS(msg, "is after end");
  EXPECT_CONTAINS(
      openError(fileBytes(R"({"m":{"dtype":"U8","shape":[1]}})", "a")),
      "tensor 'm': data_offsets: missing");
}

TEST_F(SafetensorsTest, EntryFieldsAreTyped) {
  // One field reader (pimc/Support/JSONFields.h) words every header error:
  // the tensor, the field's path, what is wrong with it.
  EXPECT_CONTAINS(
      openError(fileBytes(
          R"({"t":{"dtype":"U8","shape":[2,"3"],"data_offsets":[0,6]}})",
          "abcdef")),
      "tensor 't': shape[1]: expected an integer, got \"3\"");
  EXPECT_CONTAINS(
      openError(fileBytes(
          R"({"t":{"dtype":8,"shape":[2],"data_offsets":[0,2]}})", "ab")),
      "tensor 't': dtype: expected a string, got 8");
  EXPECT_CONTAINS(
      openError(fileBytes(
          R"({"t":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"crc":1}})",
          "ab")),
      "tensor 't': crc: unknown key (expected one of: dtype, shape, "
      "data_offsets)");
  EXPECT_CONTAINS(openError(fileBytes(R"({"t":[1]})", "")),
                  "tensor 't': expected an object, got [1]");
  EXPECT_CONTAINS(openError(fileBytes(R"({"__metadata__":{"format":1}})", "")),
                  "__metadata__.format: expected a string, got 1");
}

TEST_F(SafetensorsTest, SizeMismatch) {
  std::string msg =
      openError(fileBytes(headerJson({{"proj.weight", "BF16", {2, 3}, 0, 8}}),
                          std::string(8, '\0')));
  EXPECT_CONTAINS(msg, "tensor 'proj.weight'");
  EXPECT_CONTAINS(msg, "BF16");
  EXPECT_CONTAINS(msg, "[2, 3]");
  EXPECT_CONTAINS(msg, "needs 12 bytes");
  EXPECT_CONTAINS(msg, "span 8 bytes");
}

TEST_F(SafetensorsTest, TruncatedFile) {
  std::string header =
      headerJson({{"a", "F32", {4}, 0, 16}, {"b", "F32", {4}, 16, 32}});
  std::string full = fileBytes(header, std::string(32, '\1'));
  ASSERT_EQ(openError(full), "");
  std::string msg = openError(full.substr(0, full.size() - 5));
  EXPECT_CONTAINS(msg, "file appears truncated");
  EXPECT_CONTAINS(msg, "tensor 'b' ends at byte 32");
  EXPECT_CONTAINS(msg, "only 27 bytes");
  EXPECT_CONTAINS(msg, formatv("expected at least {0} bytes, found {1}",
                               full.size(), full.size() - 5)
                           .str());
}

TEST_F(SafetensorsTest, OffsetsOverrun) {
  // The region starts past a hole, so the header (not the file) is wrong.
  std::string msg = openError(fileBytes(
      headerJson({{"a", "F32", {2}, 0, 8}, {"far", "F32", {2}, 100, 108}}),
      std::string(16, '\0')));
  EXPECT_CONTAINS(msg, "overrun");
  EXPECT_CONTAINS(msg, "header says tensor 'far' ends at byte 108 but the "
                       "data section has only 16 bytes");
  EXPECT_EQ(msg.find("truncated"), std::string::npos) << msg;
}

TEST_F(SafetensorsTest, Overlap) {
  std::string msg = openError(fileBytes(
      headerJson({{"a", "F32", {4}, 0, 16}, {"b", "F32", {2}, 8, 16}}),
      std::string(16, '\0')));
  EXPECT_CONTAINS(msg, "'a'");
  EXPECT_CONTAINS(msg, "'b'");
  EXPECT_CONTAINS(msg, "overlap");
}

TEST_F(SafetensorsTest, DuplicateName) {
  std::string msg = openError(
      fileBytes(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                "ab"));
  EXPECT_CONTAINS(msg, "tensor 'w' appears twice");
}

TEST_F(SafetensorsTest, DuplicateAcrossFiles) {
  std::string a = write("a.safetensors",
                        fileBytes(headerJson({{"x", "U8", {1}, 0, 1}}), "a"));
  std::string b = write("b.safetensors",
                        fileBytes(headerJson({{"x", "U8", {1}, 0, 1}}), "b"));
  auto store = WeightStore::openFiles({a, b});
  ASSERT_FALSE(bool(store));
  std::string msg = toString(store.takeError());
  EXPECT_CONTAINS(msg, "tensor 'x'");
  EXPECT_CONTAINS(msg, a);
  EXPECT_CONTAINS(msg, b);
}

TEST_F(SafetensorsTest, SingleFileDirectory) {
  write("model.safetensors",
        fileBytes(headerJson({{"embed", "F16", {2, 2}, 0, 8}}),
                  std::string(8, '\0')));
  auto store = WeightStore::openDirectory(dir);
  ASSERT_TRUE(bool(store)) << toString(store.takeError());
  EXPECT_EQ((*store)->names(), std::vector<std::string>{"embed"});
  EXPECT_EQ((*store)->totalBytes(), 8u);
}

TEST_F(SafetensorsTest, EmptyDirectory) {
  auto store = WeightStore::openDirectory(dir);
  ASSERT_FALSE(bool(store));
  std::string msg = toString(store.takeError());
  EXPECT_CONTAINS(msg, std::string(dir));
  EXPECT_CONTAINS(msg, "no model.safetensors or model.safetensors.index.json");
}

class ShardedTest : public SafetensorsTest {
protected:
  void SetUp() override {
    SafetensorsTest::SetUp();
    write("model-00001-of-00002.safetensors",
          fileBytes(headerJson({{"layers.0.w", "F32", {2}, 0, 8},
                                {"embed", "BF16", {4}, 8, 16}}),
                    std::string(16, '\0')));
    write("model-00002-of-00002.safetensors",
          fileBytes(headerJson({{"layers.1.w", "F32", {3}, 0, 12}}),
                    std::string(12, '\0')));
  }
  void writeIndex(const std::string &weightMap) {
    write("model.safetensors.index.json",
          R"({"metadata":{"total_size":28},"weight_map":)" + weightMap + "}");
  }
};

TEST_F(ShardedTest, TwoShards) {
  writeIndex(R"({"layers.0.w":"model-00001-of-00002.safetensors",
                 "embed":"model-00001-of-00002.safetensors",
                 "layers.1.w":"model-00002-of-00002.safetensors"})");
  auto store = WeightStore::openDirectory(dir);
  ASSERT_TRUE(bool(store)) << toString(store.takeError());
  EXPECT_EQ((*store)->names(),
            (std::vector<std::string>{"embed", "layers.0.w", "layers.1.w"}));
  EXPECT_EQ((*store)->totalBytes(), 28u);
  const TensorView *t = (*store)->lookup("layers.1.w");
  ASSERT_NE(t, nullptr);
  EXPECT_CONTAINS(t->file, "model-00002-of-00002.safetensors");
  EXPECT_EQ(t->numElements(), 3);
}

// A row-view name resolves for lookups, but the index must name stored
// tensors.
TEST_F(ShardedTest, WeightMapNamesAView) {
  writeIndex(R"({"layers.0.w":"model-00001-of-00002.safetensors",
                 "embed":"model-00001-of-00002.safetensors",
                 "layers.1.w":"model-00002-of-00002.safetensors",
                 "layers.1.w[0:1]":"model-00002-of-00002.safetensors"})");
  auto store = WeightStore::openDirectory(dir);
  ASSERT_FALSE(bool(store));
  EXPECT_CONTAINS(toString(store.takeError()),
                  "weight_map says tensor 'layers.1.w[0:1]' is in shard "
                  "'model-00002-of-00002.safetensors', but no shard contains "
                  "it");
}

TEST_F(ShardedTest, WeightMapNamesMissingTensor) {
  writeIndex(R"({"layers.0.w":"model-00001-of-00002.safetensors",
                 "embed":"model-00001-of-00002.safetensors",
                 "layers.1.w":"model-00002-of-00002.safetensors",
                 "lm_head.weight":"model-00002-of-00002.safetensors"})");
  auto store = WeightStore::openDirectory(dir);
  ASSERT_FALSE(bool(store));
  std::string msg = toString(store.takeError());
  EXPECT_CONTAINS(msg, "model.safetensors.index.json");
  EXPECT_CONTAINS(msg, "tensor 'lm_head.weight'");
  EXPECT_CONTAINS(msg, "model-00002-of-00002.safetensors");
}

TEST_F(ShardedTest, WeightMapNamesWrongShard) {
  writeIndex(R"({"layers.0.w":"model-00002-of-00002.safetensors",
                 "embed":"model-00001-of-00002.safetensors",
                 "layers.1.w":"model-00002-of-00002.safetensors"})");
  auto store = WeightStore::openDirectory(dir);
  ASSERT_FALSE(bool(store));
  std::string msg = toString(store.takeError());
  EXPECT_CONTAINS(msg, "tensor 'layers.0.w' is in shard "
                       "'model-00002-of-00002.safetensors'");
  EXPECT_CONTAINS(msg, "but it is in");
}

TEST_F(ShardedTest, TensorInTwoShards) {
  write("model-00002-of-00002.safetensors",
        fileBytes(headerJson({{"layers.1.w", "F32", {3}, 0, 12},
                              {"embed", "BF16", {4}, 12, 20}}),
                  std::string(20, '\0')));
  writeIndex(R"({"layers.0.w":"model-00001-of-00002.safetensors",
                 "embed":"model-00001-of-00002.safetensors",
                 "layers.1.w":"model-00002-of-00002.safetensors"})");
  auto store = WeightStore::openDirectory(dir);
  ASSERT_FALSE(bool(store));
  EXPECT_CONTAINS(toString(store.takeError()), "tensor 'embed' is also in");
}

TEST_F(ShardedTest, MissingShardFileAndBadIndex) {
  writeIndex(R"({"x":"model-00003-of-00003.safetensors"})");
  auto store = WeightStore::openDirectory(dir);
  ASSERT_FALSE(bool(store));
  EXPECT_CONTAINS(toString(store.takeError()),
                  "model-00003-of-00003.safetensors: cannot open");

  write("model.safetensors.index.json", R"({"metadata":{}})");
  store = WeightStore::openDirectory(dir);
  ASSERT_FALSE(bool(store));
  EXPECT_CONTAINS(toString(store.takeError()), "weight_map: missing");

  write("model.safetensors.index.json", R"({"weight_map":{"x":3}})");
  store = WeightStore::openDirectory(dir);
  ASSERT_FALSE(bool(store));
  EXPECT_CONTAINS(toString(store.takeError()),
                  "model.safetensors.index.json: weight_map.x: expected a "
                  "string, got 3");
}

} // namespace

//===----------------------------------------------------------------------===//
// GPTQ components (GPTQ.h)
//===----------------------------------------------------------------------===//

namespace {

struct Blob {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

std::string fileOf(const std::vector<Blob> &blobs) {
  std::vector<Entry> entries;
  std::string data;
  for (const Blob &b : blobs) {
    entries.push_back(
        {b.name, b.dtype, b.shape, data.size(), data.size() + b.bytes.size()});
    data += b.bytes;
  }
  return fileBytes(headerJson(entries), data);
}

template <typename T> std::string le(const std::vector<T> &v) {
  return bytesOf(v.data(), v.size() * sizeof(T));
}

/// A 4-bit [N = 8, K = 8] weight, one group: code (k, n) = (k + n) % 16,
/// zero 3 (stored as 2, "gptq"), scale 0.5 + n.
std::vector<Blob> gptqBlobs(std::vector<int32_t> gIdx) {
  std::vector<int32_t> qweight(8), qzeros(1, 0);
  std::vector<float> scales(8);
  for (int n = 0; n < 8; ++n) {
    uint32_t word = 0;
    for (int k = 0; k < 8; ++k)
      word |= uint32_t((k + n) % 16) << (4 * k);
    qweight[n] = int32_t(word);
    qzeros[0] |= 2 << (4 * n);
    scales[n] = 0.5f + n;
  }
  std::vector<Blob> blobs = {{"p.qweight", "I32", {1, 8}, le(qweight)},
                             {"p.qzeros", "I32", {1, 1}, le(qzeros)},
                             {"p.scales", "F32", {1, 8}, le(scales)}};
  if (!gIdx.empty())
    blobs.push_back({"p.g_idx", "I32", {8}, le(gIdx)});
  return blobs;
}

} // namespace

TEST_F(SafetensorsTest, GptqComponentsFoundCheckedAndUnpacked) {
  write("model.safetensors", fileOf(gptqBlobs(std::vector<int32_t>(8, 0))));
  auto store = WeightStore::openDirectory(dir);
  ASSERT_TRUE(bool(store)) << toString(store.takeError());
  GptqScheme scheme;
  scheme.bits = 4;
  scheme.groupSize = 8;
  scheme.symmetric = false;
  EXPECT_EQ(gptqTensorName("p.weight", "qzeros"), "p.qzeros");
  auto parts = findGptqTensors(**store, "p.weight", 8, 8, scheme);
  ASSERT_TRUE(bool(parts)) << toString(parts.takeError());
  auto q = unpackGptq(*parts, 8, 8, scheme);
  ASSERT_TRUE(bool(q)) << toString(q.takeError());
  for (int n = 0; n < 8; ++n) {
    EXPECT_EQ(q->zeros[n], 3);
    EXPECT_EQ(q->scales[n], 0.5f + n);
    for (int k = 0; k < 8; ++k)
      EXPECT_EQ(q->codes[n * 8 + k], (k + n) % 16);
  }
  // Symmetric: the zero is the midpoint whatever qzeros holds.
  scheme.symmetric = true;
  auto sym = unpackGptq(*parts, 8, 8, scheme);
  ASSERT_TRUE(bool(sym));
  EXPECT_EQ(sym->zeros[0], 8);
  // The scales' dtype the program was built for must match.
  scheme.scaleDType = DType::F16;
  EXPECT_CONTAINS(
      toString(findGptqTensors(**store, "p", 8, 8, scheme).takeError()),
      "tensor 'p.scales' has dtype F32, expected F16");
}

TEST_F(SafetensorsTest, GptqProblemsNameTheTensor) {
  GptqScheme scheme;
  scheme.bits = 4;
  scheme.groupSize = 8;
  // Act-order (a permuted g_idx) is refused, not silently read in order.
  std::vector<int32_t> gIdx(8, 0);
  gIdx[3] = 1;
  write("model.safetensors", fileOf(gptqBlobs(gIdx)));
  {
    auto store = WeightStore::openDirectory(dir);
    ASSERT_TRUE(bool(store)) << toString(store.takeError());
    std::string msg =
        toString(findGptqTensors(**store, "p", 8, 8, scheme).takeError());
    EXPECT_CONTAINS(msg, "tensor 'p.g_idx': input 3 is in group 1, not 0");
    EXPECT_CONTAINS(msg, "act-order");
    // Every problem at once: the shape the program expects and a group size
    // that does not divide K.
    std::string shape =
        toString(findGptqTensors(**store, "p", 16, 8, scheme).takeError());
    EXPECT_CONTAINS(shape, "tensor 'p.qweight' has shape [1, 8], expected "
                           "[1, 16]");
    EXPECT_CONTAINS(shape, "tensor 'p.scales' has shape [1, 8], expected "
                           "[1, 16]");
    scheme.groupSize = 3;
    EXPECT_CONTAINS(
        toString(findGptqTensors(**store, "p", 8, 8, scheme).takeError()),
        "'p': GPTQ needs group_size (3) to divide in_features (8)");
  }
  std::vector<Blob> blobs = gptqBlobs({});
  blobs.erase(blobs.begin() + 1); // no qzeros
  write("model.safetensors", fileOf(blobs));
  auto store = WeightStore::openDirectory(dir);
  ASSERT_TRUE(bool(store)) << toString(store.takeError());
  scheme.groupSize = 8;
  EXPECT_CONTAINS(
      toString(findGptqTensors(**store, "p", 8, 8, scheme).takeError()),
      "missing tensor 'p.qzeros' (expected shape [1, 1])");
}

// The same head-blocked rows kept 2-D (Qwen3-Next's per-key-head
// [q | k | v | z] projection read as one weight per part).
TEST_F(ExpertTensorsTest, FlatBlockRows) {
  std::string name = flatBlockRowsName("gu[1]^T", 2, 1, 2);
  EXPECT_EQ(name, "gu[1]^T<2:1:2>");
  std::vector<float> want;
  for (int64_t c = 1; c < 2 * I; c += 2)
    for (int64_t h = 0; h < H; ++h)
      want.push_back(gateUp(1, h, c));
  EXPECT_EQ(floats(name, {I, H}), want);
  for (const char *bad : {"gu[0]<2:0:1>", "gu[0]<3:1:1>", "gu<1:0:1>",
                          "gu[0]<3:0:2", "gu[0]<3:0>"})
    EXPECT_EQ(store->lookup(bad), nullptr) << bad;
}
