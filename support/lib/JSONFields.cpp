//===- JSONFields.cpp - typed, checked fields of a JSON object ------------===//
#include "pimc/Support/JSONFields.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace llvm;
using namespace pimc;

StringRef pimc::jsonKindName(const json::Value &value) {
  switch (value.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return "a boolean";
  case json::Value::Number:
    return "a number";
  case json::Value::String:
    return "a string";
  case json::Value::Array:
    return "an array";
  case json::Value::Object:
    return "an object";
  }
  return "a value";
}

std::string pimc::jsonFieldPath(StringRef path, StringRef key) {
  return path.empty() ? key.str() : (path + "." + key).str();
}

std::string pimc::jsonIndexPath(StringRef path, size_t index) {
  return (path + "[" + Twine(index) + "]").str();
}

/// The `got ...` of a type error.
static std::string describe(const JSONFieldStyle &style,
                            const json::Value &value) {
  if (style.showValues)
    return formatv("{0}", value).str();
  return jsonKindName(value).str();
}

static Error typeError(const JSONFieldStyle &style, StringRef path,
                       StringRef expected, const json::Value &value) {
  return style.error(path, "expected " + expected + ", got " +
                               describe(style, value));
}

static Error checkRange(const JSONFieldStyle &style, StringRef path, int64_t n,
                        IntRange range) {
  if (n < range.min) {
    if (range.min == 1)
      return style.error(path, formatv("must be positive, got {0}", n));
    if (range.min == 0)
      return style.error(path, formatv("must be non-negative, got {0}", n));
    return style.error(path,
                       formatv("must be at least {0}, got {1}", range.min, n));
  }
  if (n > range.max)
    return style.error(path, formatv(style.aboveMax, n, range.max));
  return Error::success();
}

static Expected<int64_t> integerAt(const JSONFieldStyle &style, StringRef path,
                                   const json::Value &value, IntRange range) {
  std::optional<int64_t> n = value.getAsInteger();
  if (!n) {
    // A number that is not an integer is shown whatever the style: "got a
    // number" would not say what is wrong with it.
    if (value.kind() == json::Value::Number)
      return style.error(path, formatv("expected an integer, got {0}", value));
    return typeError(style, path, "an integer", value);
  }
  if (Error e = checkRange(style, path, *n, range))
    return e;
  return *n;
}

//===----------------------------------------------------------------------===//
// The object, its keys, its errors
//===----------------------------------------------------------------------===//

JSONFields::JSONFields(const json::Object &object, std::string path,
                       const JSONFieldStyle &style)
    : obj(&object), objPath(std::move(path)), style(&style) {}

Expected<JSONFields> JSONFields::of(const json::Value &value, std::string path,
                                    const JSONFieldStyle &style) {
  if (const json::Object *o = value.getAsObject())
    return JSONFields(*o, std::move(path), style);
  return typeError(style, path, "an object", value);
}

std::string JSONFields::pathOf(StringRef key) const {
  return jsonFieldPath(objPath, key);
}

std::vector<StringRef> JSONFields::keys() const {
  std::vector<StringRef> out;
  for (const auto &kv : *obj)
    out.push_back(kv.first);
  llvm::sort(out);
  return out;
}

Error JSONFields::error(const Twine &what) const {
  return style->error(objPath, what);
}

Error JSONFields::fieldError(StringRef key, const Twine &what) const {
  return style->error(pathOf(key), what);
}

std::optional<StringRef>
JSONFields::firstUnknownKey(function_ref<bool(StringRef)> isKnown) const {
  for (StringRef key : keys())
    if (!isKnown(key))
      return key;
  return std::nullopt;
}

Error JSONFields::checkKeys(ArrayRef<StringRef> known,
                            const Twine &what) const {
  std::optional<StringRef> unknown = firstUnknownKey(
      [&](StringRef key) { return llvm::is_contained(known, key); });
  if (!unknown)
    return Error::success();
  if (!what.isTriviallyEmpty())
    return fieldError(*unknown, what);
  return fieldError(*unknown, "unknown key (expected one of: " +
                                  llvm::join(known, ", ") + ")");
}

//===----------------------------------------------------------------------===//
// Typed reads
//===----------------------------------------------------------------------===//

const json::Value *JSONFields::value(StringRef key) const {
  const json::Value *v = obj->get(key);
  if (v && style->nullIsAbsent && v->kind() == json::Value::Null)
    return nullptr;
  return v;
}

Expected<const json::Value *> JSONFields::value(StringRef key,
                                                RequiredField) const {
  if (const json::Value *v = value(key))
    return v;
  return fieldError(key, style->missing);
}

OptionalField<int64_t> JSONFields::integer(StringRef key,
                                           IntRange range) const {
  const json::Value *v = value(key);
  if (!v)
    return std::nullopt;
  Expected<int64_t> n = integerAt(*style, pathOf(key), *v, range);
  if (!n)
    return n.takeError();
  return *n;
}

Expected<int64_t> JSONFields::integer(StringRef key, RequiredField,
                                      IntRange range) const {
  return need(key, integer(key, range));
}

Expected<int64_t> JSONFields::integerOr(StringRef key, int64_t dflt,
                                        IntRange range) const {
  return orDefault(integer(key, range), dflt);
}

OptionalField<double> JSONFields::number(StringRef key) const {
  const json::Value *v = value(key);
  if (!v)
    return std::nullopt;
  std::optional<double> d = v->getAsNumber();
  if (!d || (!std::isfinite(*d) && style->showValues))
    return typeError(*style, pathOf(key), "a number", *v);
  if (!std::isfinite(*d))
    return fieldError(key, formatv("must be finite, got {0}", *d));
  return d;
}

Expected<double> JSONFields::number(StringRef key, RequiredField) const {
  return need(key, number(key));
}

Expected<double> JSONFields::numberOr(StringRef key, double dflt) const {
  return orDefault(number(key), dflt);
}

OptionalField<bool> JSONFields::boolean(StringRef key) const {
  const json::Value *v = value(key);
  if (!v)
    return std::nullopt;
  std::optional<bool> b = v->getAsBoolean();
  if (!b)
    return typeError(*style, pathOf(key), "true or false", *v);
  return b;
}

Expected<bool> JSONFields::booleanOr(StringRef key, bool dflt) const {
  return orDefault(boolean(key), dflt);
}

OptionalField<StringRef> JSONFields::string(StringRef key) const {
  const json::Value *v = value(key);
  if (!v)
    return std::nullopt;
  std::optional<StringRef> s = v->getAsString();
  if (!s)
    return typeError(*style, pathOf(key), "a string", *v);
  return s;
}

Expected<StringRef> JSONFields::string(StringRef key, RequiredField) const {
  return need(key, string(key));
}

OptionalField<std::vector<int64_t>> JSONFields::integers(StringRef key,
                                                         IntRange range) const {
  Expected<const json::Array *> arr = array(key);
  if (!arr)
    return arr.takeError();
  if (!*arr)
    return std::nullopt;
  std::vector<int64_t> out;
  for (auto [i, element] : llvm::enumerate(**arr)) {
    Expected<int64_t> n =
        integerAt(*style, jsonIndexPath(pathOf(key), i), element, range);
    if (!n)
      return n.takeError();
    out.push_back(*n);
  }
  return out;
}

Expected<std::vector<int64_t>>
JSONFields::integers(StringRef key, RequiredField, IntRange range) const {
  return need(key, integers(key, range));
}

OptionalField<std::vector<double>> JSONFields::numbers(StringRef key) const {
  Expected<const json::Array *> arr = array(key);
  if (!arr)
    return arr.takeError();
  if (!*arr)
    return std::nullopt;
  std::vector<double> out;
  for (auto [i, element] : llvm::enumerate(**arr)) {
    std::optional<double> d = element.getAsNumber();
    std::string path = jsonIndexPath(pathOf(key), i);
    if (!d)
      return typeError(*style, path, "a number", element);
    if (!std::isfinite(*d))
      return style->error(path, formatv("must be finite, got {0}", *d));
    out.push_back(*d);
  }
  return out;
}

Expected<std::vector<double>> JSONFields::numbers(StringRef key,
                                                  RequiredField) const {
  return need(key, numbers(key));
}

OptionalField<JSONFields> JSONFields::object(StringRef key) const {
  const json::Value *v = value(key);
  if (!v)
    return std::nullopt;
  Expected<JSONFields> nested = of(*v, pathOf(key), *style);
  if (!nested)
    return nested.takeError();
  return std::move(*nested);
}

Expected<JSONFields> JSONFields::object(StringRef key, RequiredField) const {
  return need(key, object(key));
}

Expected<const json::Array *> JSONFields::array(StringRef key) const {
  const json::Value *v = value(key);
  if (!v)
    return nullptr;
  if (const json::Array *a = v->getAsArray())
    return a;
  return typeError(*style, pathOf(key), "an array", *v);
}

Expected<const json::Array *> JSONFields::array(StringRef key,
                                                RequiredField) const {
  if (!value(key))
    return fieldError(key, style->missing);
  return array(key);
}
