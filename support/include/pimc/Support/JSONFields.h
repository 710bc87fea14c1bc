//===- JSONFields.h - typed, checked fields of a JSON object ----*- C++ -*-===//
//
// pimc's JSON inputs (target files, Hugging Face config.json, safetensors
// headers and shard indexes, FX graphs) are read field by field: "key `banks`
// of this object is an integer in [1, 64]". JSONFields is that reader, over
// one json::Object:
//
//  * A field is named by its path: the object's path and the key joined by
//    a dot ("organization.banks", "constraints[2].min"); the top-level
//    object's path is empty, so its fields are named by their keys.
//  * A typed read (integer, number, boolean, string, integers, object,
//    array) returns the field's value, or an error naming the field: wrong
//    type, out of range, or absent when required. Three forms:
//      read(key)            optional: std::nullopt (nullptr) when absent;
//      read(key, required)  absent is an error;
//      readOr(key, dflt)    absent reads as `dflt`.
//  * checkKeys rejects a key the caller does not know. Callers check keys
//    before reading fields, so a misspelled key is reported as such rather
//    than as the missing field it was meant to be.
//  * Each input keeps its own error prefix, error type and wording: the
//    reader words only the `what` of an error ("expected an integer, got
//    1.5") and hands it, with the field's path, to its JSONFieldStyle.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_SUPPORT_JSONFIELDS_H
#define PIMC_SUPPORT_JSONFIELDS_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace pimc {

/// How one input reports a bad field; shared by every reader of the input.
struct JSONFieldStyle {
  /// The error for the field at `path` ("" for the top-level object), e.g.
  /// "<file>: <path>: <what>".
  std::function<llvm::Error(llvm::StringRef path, const llvm::Twine &what)>
      error;
  /// `"key": null` reads as an absent key (Hugging Face configs write null
  /// for "not set") rather than as a value of the wrong type.
  bool nullIsAbsent = false;
  /// A type error shows the value as JSON ("got \"8\"") rather than its kind
  /// ("got a string"); an integer field holding a non-integral number always
  /// shows it ("got 1.5"). With showValues a non-finite number is a type
  /// error too; without, it is "must be finite, got inf".
  bool showValues = false;
  /// The `what` of a required field that is absent.
  const char *missing = "missing";
  /// The `what` of an integer above IntRange::max, a formatv string: {0} is
  /// the value, {1} the limit.
  const char *aboveMax = "{0} is above the limit {1}";
};

/// Inclusive bounds of an integer field. Below `min` reads "must be
/// positive, got N" (min 1), "must be non-negative, got N" (min 0) or "must
/// be at least M, got N"; above `max`, JSONFieldStyle::aboveMax.
struct IntRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};

/// Tag selecting the form of a read that fails on an absent field.
struct RequiredField {};
inline constexpr RequiredField required{};

/// A read of an optional field: its value, std::nullopt, or the error.
template <typename T> using OptionalField = llvm::Expected<std::optional<T>>;

/// "a string", "an object", "null", ...: how a value is named by its kind.
llvm::StringRef jsonKindName(const llvm::json::Value &value);

/// `path.key`, or `key` when `path` is empty.
std::string jsonFieldPath(llvm::StringRef path, llvm::StringRef key);

/// `path[index]`.
std::string jsonIndexPath(llvm::StringRef path, size_t index);

/// Reads the fields of one JSON object. Holds references: the object and
/// the style must outlive it (and any StringRef or pointer it returns).
class JSONFields {
public:
  JSONFields(const llvm::json::Object &object, std::string path,
             const JSONFieldStyle &style);

  /// The object `value` at `path`; else "expected an object, got ...".
  static llvm::Expected<JSONFields> of(const llvm::json::Value &value,
                                       std::string path,
                                       const JSONFieldStyle &style);

  const llvm::json::Object &json() const { return *obj; }
  llvm::StringRef path() const { return objPath; }
  std::string pathOf(llvm::StringRef key) const;
  /// Every key of the object, sorted (json::Object is unordered).
  std::vector<llvm::StringRef> keys() const;

  /// Errors about the object itself and about one of its fields.
  llvm::Error error(const llvm::Twine &what) const;
  llvm::Error fieldError(llvm::StringRef key, const llvm::Twine &what) const;

  /// The first key, in sorted order, that `isKnown` rejects.
  std::optional<llvm::StringRef>
  firstUnknownKey(llvm::function_ref<bool(llvm::StringRef)> isKnown) const;
  /// An error at the first key not in `known`: `what`, by default "unknown
  /// key (expected one of: <known>)".
  llvm::Error checkKeys(llvm::ArrayRef<llvm::StringRef> known,
                        const llvm::Twine &what = "") const;

  /// The field's value, untyped; nullptr when absent (or null, with
  /// JSONFieldStyle::nullIsAbsent).
  const llvm::json::Value *value(llvm::StringRef key) const;
  llvm::Expected<const llvm::json::Value *> value(llvm::StringRef key,
                                                  RequiredField) const;

  OptionalField<int64_t> integer(llvm::StringRef key,
                                 IntRange range = {}) const;
  llvm::Expected<int64_t> integer(llvm::StringRef key, RequiredField,
                                  IntRange range = {}) const;
  llvm::Expected<int64_t> integerOr(llvm::StringRef key, int64_t dflt,
                                    IntRange range = {}) const;

  /// A finite number.
  OptionalField<double> number(llvm::StringRef key) const;
  llvm::Expected<double> number(llvm::StringRef key, RequiredField) const;
  llvm::Expected<double> numberOr(llvm::StringRef key, double dflt) const;

  OptionalField<bool> boolean(llvm::StringRef key) const;
  llvm::Expected<bool> booleanOr(llvm::StringRef key, bool dflt) const;

  OptionalField<llvm::StringRef> string(llvm::StringRef key) const;
  llvm::Expected<llvm::StringRef> string(llvm::StringRef key,
                                         RequiredField) const;

  /// An array of integers, each in `range`; elements are named `key[i]`.
  OptionalField<std::vector<int64_t>> integers(llvm::StringRef key,
                                               IntRange range = {}) const;
  llvm::Expected<std::vector<int64_t>>
  integers(llvm::StringRef key, RequiredField, IntRange range = {}) const;

  /// An array of finite numbers; elements are named `key[i]`.
  OptionalField<std::vector<double>> numbers(llvm::StringRef key) const;
  llvm::Expected<std::vector<double>> numbers(llvm::StringRef key,
                                              RequiredField) const;

  /// A nested object, read by a JSONFields of its own.
  OptionalField<JSONFields> object(llvm::StringRef key) const;
  llvm::Expected<JSONFields> object(llvm::StringRef key, RequiredField) const;

  /// An array; nullptr when absent and optional.
  llvm::Expected<const llvm::json::Array *> array(llvm::StringRef key) const;
  llvm::Expected<const llvm::json::Array *> array(llvm::StringRef key,
                                                  RequiredField) const;

private:
  const llvm::json::Object *obj;
  std::string objPath;
  const JSONFieldStyle *style;

  /// An optional read made required, or given a default.
  template <typename T>
  llvm::Expected<T> need(llvm::StringRef key, OptionalField<T> read) const {
    if (!read)
      return read.takeError();
    if (!*read)
      return fieldError(key, style->missing);
    return std::move(**read);
  }
  template <typename T>
  static llvm::Expected<T> orDefault(OptionalField<T> read, T dflt) {
    if (!read)
      return read.takeError();
    return read->value_or(std::move(dflt));
  }
};

} // namespace pimc

/// Assigns the value of an Expected (a field read) to `dst`, or returns its
/// error from the enclosing function: keeps field-by-field readers readable.
#define PIMC_ASSIGN_OR_RETURN(dst, expr)                                       \
  do {                                                                         \
    auto pimcTmp = (expr);                                                     \
    if (!pimcTmp)                                                              \
      return pimcTmp.takeError();                                              \
    dst = std::move(*pimcTmp);                                                 \
  } while (false)

#endif // PIMC_SUPPORT_JSONFIELDS_H
