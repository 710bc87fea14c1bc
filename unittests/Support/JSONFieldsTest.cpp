//===- JSONFieldsTest.cpp - typed JSON field reader tests -----------------===//

#include "pimc/Support/JSONFields.h"

#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace llvm;
using namespace pimc;

namespace {

/// Errors read "f.json: <path>: <what>", as in a target file.
JSONFieldStyle kindStyle() {
  JSONFieldStyle style;
  style.error = [](StringRef path, const Twine &what) {
    return createStringError("f.json: " + path + ": " + what);
  };
  return style;
}

/// The Hugging Face config's wording.
JSONFieldStyle valueStyle() {
  JSONFieldStyle style = kindStyle();
  style.nullIsAbsent = true;
  style.showValues = true;
  style.missing = "required field is missing";
  style.aboveMax = "{0} exceeds the limit {1}";
  return style;
}

json::Object parseObject(StringRef text) {
  Expected<json::Value> v = json::parse(text);
  EXPECT_TRUE(bool(v)) << toString(v.takeError());
  return std::move(*v->getAsObject());
}

/// The message of a failed read ("" if it succeeded).
template <typename T> std::string errorOf(Expected<T> read) {
  if (read)
    return "";
  return toString(read.takeError());
}
std::string errorOf(Error error) {
  return error ? toString(std::move(error)) : "";
}

/// The value of a read that must succeed.
template <typename T> T valueOf(Expected<T> read) {
  if (!read) {
    ADD_FAILURE() << toString(read.takeError());
    return T();
  }
  return std::move(*read);
}

TEST(JSONFieldsTest, IntegerForms) {
  JSONFieldStyle style = kindStyle();
  json::Object obj = parseObject(R"({"a": 3, "b": "x", "c": 1.5, "n": null})");
  JSONFields f(obj, "", style);

  EXPECT_EQ(valueOf(f.integer("a")), std::optional<int64_t>(3));
  EXPECT_EQ(valueOf(f.integer("zz")), std::nullopt);
  EXPECT_EQ(valueOf(f.integerOr("zz", 7)), 7);
  EXPECT_EQ(valueOf(f.integerOr("a", 7)), 3);
  EXPECT_EQ(valueOf(f.integer("a", required)), 3);

  EXPECT_EQ(errorOf(f.integer("zz", required)), "f.json: zz: missing");
  EXPECT_EQ(errorOf(f.integer("b")),
            "f.json: b: expected an integer, got a string");
  EXPECT_EQ(errorOf(f.integer("c")), "f.json: c: expected an integer, got 1.5");
  EXPECT_EQ(errorOf(f.integer("n")),
            "f.json: n: expected an integer, got null");
}

TEST(JSONFieldsTest, IntegerRanges) {
  JSONFieldStyle style = kindStyle();
  json::Object obj = parseObject(R"({"zero": 0, "neg": -2, "big": 100})");
  JSONFields f(obj, "org", style);

  EXPECT_EQ(errorOf(f.integer("zero", IntRange{1})),
            "f.json: org.zero: must be positive, got 0");
  EXPECT_EQ(errorOf(f.integer("neg", IntRange{0})),
            "f.json: org.neg: must be non-negative, got -2");
  EXPECT_EQ(errorOf(f.integer("neg", IntRange{-1})),
            "f.json: org.neg: must be at least -1, got -2");
  EXPECT_EQ(errorOf(f.integer("big", IntRange{1, 64})),
            "f.json: org.big: 100 is above the limit 64");
  EXPECT_EQ(errorOf(f.integer("big", IntRange{1, 100})), "");
  // A default is not range-checked: it is the caller's own value.
  EXPECT_EQ(valueOf(f.integerOr("absent", 0, IntRange{1})), 0);
}

TEST(JSONFieldsTest, NumbersBooleansStrings) {
  JSONFieldStyle style = kindStyle();
  json::Object obj = parseObject(
      R"({"x": 2.5, "i": 4, "s": "hi", "t": true, "o": {}, "a": [1]})");
  obj["inf"] = std::numeric_limits<double>::infinity();
  JSONFields f(obj, "", style);

  EXPECT_EQ(valueOf(f.number("x", required)), 2.5);
  EXPECT_EQ(valueOf(f.number("i", required)), 4.0);
  EXPECT_EQ(valueOf(f.numberOr("zz", 1e-6)), 1e-6);
  EXPECT_EQ(errorOf(f.number("s")),
            "f.json: s: expected a number, got a string");
  EXPECT_NE(errorOf(f.number("inf")).find("f.json: inf: must be finite, got "),
            std::string::npos);

  EXPECT_EQ(valueOf(f.boolean("t")).value_or(false), true);
  EXPECT_EQ(valueOf(f.booleanOr("zz", false)), false);
  EXPECT_EQ(errorOf(f.boolean("i")),
            "f.json: i: expected true or false, got a number");

  EXPECT_EQ(valueOf(f.string("s", required)), "hi");
  EXPECT_EQ(errorOf(f.string("o")),
            "f.json: o: expected a string, got an object");
  EXPECT_EQ(errorOf(f.string("a", required)),
            "f.json: a: expected a string, got an array");
}

TEST(JSONFieldsTest, ValueStyle) {
  JSONFieldStyle style = valueStyle();
  json::Object obj = parseObject(
      R"({"n": null, "s": "8", "b": "yes", "big": 9, "l": [1, 2]})");
  obj["inf"] = std::numeric_limits<double>::infinity();
  JSONFields f(obj, "", style);

  // null reads as absent.
  EXPECT_EQ(f.value("n"), nullptr);
  EXPECT_EQ(valueOf(f.integer("n")), std::nullopt);
  EXPECT_EQ(valueOf(f.booleanOr("n", true)), true);
  EXPECT_EQ(errorOf(f.integer("n", required)),
            "f.json: n: required field is missing");

  EXPECT_EQ(errorOf(f.integer("s")),
            "f.json: s: expected an integer, got \"8\"");
  EXPECT_EQ(errorOf(f.boolean("b")),
            "f.json: b: expected true or false, got \"yes\"");
  EXPECT_EQ(errorOf(f.string("l")), "f.json: l: expected a string, got [1,2]");
  EXPECT_EQ(errorOf(f.integer("big", IntRange{1, 8})),
            "f.json: big: 9 exceeds the limit 8");
  EXPECT_NE(
      errorOf(f.number("inf")).find("f.json: inf: expected a number, got "),
      std::string::npos);
}

TEST(JSONFieldsTest, NestedObjectsAndArrays) {
  JSONFieldStyle style = kindStyle();
  json::Object obj = parseObject(
      R"({"clock": {"tck_ps": 500}, "list": [{"k": 1}, 2], "s": "x",
          "dims": [4, 8, -1], "bad": [1, "2"]})");
  JSONFields root(obj, "", style);

  Expected<JSONFields> clock = root.object("clock", required);
  ASSERT_TRUE(bool(clock));
  EXPECT_EQ(clock->path(), "clock");
  EXPECT_EQ(errorOf(clock->integer("tck_ps", IntRange{1, 100})),
            "f.json: clock.tck_ps: 500 is above the limit 100");
  EXPECT_FALSE(valueOf(root.object("absent")).has_value());
  EXPECT_EQ(errorOf(root.object("s")),
            "f.json: s: expected an object, got a string");

  Expected<const json::Array *> list = root.array("list", required);
  ASSERT_TRUE(bool(list));
  Expected<JSONFields> first =
      JSONFields::of((**list)[0], jsonIndexPath("list", 0), style);
  ASSERT_TRUE(bool(first));
  EXPECT_EQ(first->pathOf("k"), "list[0].k");
  EXPECT_EQ(errorOf(JSONFields::of((**list)[1], "list[1]", style)),
            "f.json: list[1]: expected an object, got a number");
  EXPECT_EQ(valueOf(root.array("absent")), nullptr);
  EXPECT_EQ(errorOf(root.array("absent", required)), "f.json: absent: missing");
  EXPECT_EQ(errorOf(root.array("s")),
            "f.json: s: expected an array, got a string");

  Expected<std::vector<int64_t>> dims = root.integers("dims", required);
  ASSERT_TRUE(bool(dims));
  EXPECT_EQ(*dims, (std::vector<int64_t>{4, 8, -1}));
  EXPECT_EQ(errorOf(root.integers("dims", IntRange{0})),
            "f.json: dims[2]: must be non-negative, got -1");
  EXPECT_EQ(errorOf(root.integers("bad")),
            "f.json: bad[1]: expected an integer, got a string");
}

TEST(JSONFieldsTest, KeysAndErrors) {
  JSONFieldStyle style = kindStyle();
  json::Object obj = parseObject(R"({"b": 1, "zz": 2, "a": 3, "yy": null})");
  JSONFields f(obj, "host", style);

  EXPECT_EQ(f.keys(), (std::vector<StringRef>{"a", "b", "yy", "zz"}));
  EXPECT_EQ(errorOf(f.checkKeys({"a", "b", "yy", "zz"})), "");
  // The first unknown key in sorted order; the known keys in given order.
  EXPECT_EQ(errorOf(f.checkKeys({"b", "a"})),
            "f.json: host.yy: unknown key (expected one of: b, a)");
  EXPECT_EQ(errorOf(f.checkKeys({"a", "b", "zz"}, "not for this unit")),
            "f.json: host.yy: not for this unit");
  EXPECT_EQ(f.firstUnknownKey([](StringRef k) { return k.size() == 1; }),
            std::optional<StringRef>("yy"));

  EXPECT_EQ(errorOf(f.error("too large")), "f.json: host: too large");
  EXPECT_EQ(errorOf(f.fieldError("a", "odd")), "f.json: host.a: odd");
  EXPECT_EQ(jsonFieldPath("", "k"), "k");
  EXPECT_EQ(jsonFieldPath("p", "k"), "p.k");
  EXPECT_EQ(jsonIndexPath("p.k", 3), "p.k[3]");
}

} // namespace
