//===- KernelExpr.cpp - integer expressions of kernel files ---------------===//
//
// A recursive-descent evaluator over the grammar
//   or   := and ('||' and)*        and := cmp ('&&' cmp)*
//   cmp  := sum (('=='|'!='|'<='|'<'|'>='|'>') sum)?
//   sum  := prod (('+'|'-') prod)*  prod := unary (('*'|'/'|'%') unary)*
//   unary := ('-'|'!') unary | INT | NAME | NAME '(' or (',' or)* ')' | '(' or
//   ')'
// evaluated as it parses, with checked arithmetic (KernelExpr.h).
//
//===----------------------------------------------------------------------===//
#include "KernelExpr.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

#include <optional>

using namespace llvm;
using namespace pimc::kernels;

bool pimc::kernels::isIdentifier(StringRef name) {
  if (name.empty() || !(isAlpha(name[0]) || name[0] == '_'))
    return false;
  return llvm::all_of(name, [](char c) { return isAlnum(c) || c == '_'; });
}

namespace {

/// The evaluator: `s` is the rest of the text.
class Evaluator {
public:
  Evaluator(StringRef text, NameLookup lookup)
      : all(text), s(text), lookup(lookup) {}

  Expected<int64_t> run() {
    Expected<int64_t> v = orExpr();
    if (!v)
      return v.takeError();
    skip();
    if (!s.empty())
      return fail("unexpected '" + s.take_front(8) + "'");
    return *v;
  }

private:
  StringRef all, s;
  NameLookup lookup;
  unsigned depth = 0; // nesting, bounded so a hostile file cannot overflow

  Error fail(const Twine &msg) {
    return createStringError(inconvertibleErrorCode(),
                             (msg + " in '" + all + "'").str());
  }
  void skip() { s = s.ltrim(" \t"); }
  bool eat(StringRef tok) {
    skip();
    return s.consume_front(tok);
  }
  Expected<int64_t> checked(std::optional<int64_t> v, const char *what) {
    if (!v)
      return fail(Twine("integer overflow in ") + what);
    return *v;
  }

  Expected<int64_t> orExpr() {
    Expected<int64_t> l = andExpr();
    while (l && eat("||")) {
      Expected<int64_t> r = andExpr();
      if (!r)
        return r;
      *l = (*l != 0 || *r != 0);
    }
    return l;
  }
  Expected<int64_t> andExpr() {
    Expected<int64_t> l = cmpExpr();
    while (l && eat("&&")) {
      Expected<int64_t> r = cmpExpr();
      if (!r)
        return r;
      *l = (*l != 0 && *r != 0);
    }
    return l;
  }
  Expected<int64_t> cmpExpr() {
    Expected<int64_t> l = sum();
    if (!l)
      return l;
    for (StringRef op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (!eat(op))
        continue;
      Expected<int64_t> r = sum();
      if (!r)
        return r;
      int64_t a = *l, b = *r;
      return int64_t(op == "=="   ? a == b
                     : op == "!=" ? a != b
                     : op == "<=" ? a <= b
                     : op == ">=" ? a >= b
                     : op == "<"  ? a < b
                                  : a > b);
    }
    return l;
  }
  Expected<int64_t> sum() {
    Expected<int64_t> l = prod();
    while (l) {
      bool plus = eat("+");
      if (!plus && !eat("-"))
        break;
      Expected<int64_t> r = prod();
      if (!r)
        return r;
      int64_t out;
      bool ovf = plus ? AddOverflow(*l, *r, out) : SubOverflow(*l, *r, out);
      l = checked(ovf ? std::nullopt : std::optional(out), "+ or -");
    }
    return l;
  }
  Expected<int64_t> divide(int64_t a, int64_t b, char op) {
    if (b == 0)
      return fail("division by zero");
    if (a == INT64_MIN && b == -1)
      return fail("integer overflow in /");
    if (op == '%') {
      if (b < 0)
        return fail("'%' needs a positive divisor");
      int64_t r = a % b;
      return r < 0 ? r + b : r;
    }
    return divideFloorSigned(a, b);
  }
  Expected<int64_t> prod() {
    Expected<int64_t> l = unary();
    while (l) {
      skip();
      if (s.empty() || (s[0] != '*' && s[0] != '/' && s[0] != '%'))
        break;
      char op = s[0];
      s = s.drop_front();
      Expected<int64_t> r = unary();
      if (!r)
        return r;
      if (op == '*') {
        int64_t out;
        l = checked(
            MulOverflow(*l, *r, out) ? std::nullopt : std::optional(out), "*");
      } else {
        l = divide(*l, *r, op);
      }
    }
    return l;
  }
  Expected<int64_t> unary() {
    if (++depth > 64)
      return fail("expression nests too deeply");
    Expected<int64_t> v = unaryInner();
    --depth;
    return v;
  }
  Expected<int64_t> unaryInner() {
    if (eat("-")) {
      Expected<int64_t> v = unary();
      if (v && *v == INT64_MIN)
        return fail("integer overflow in -");
      if (v)
        *v = -*v;
      return v;
    }
    if (eat("!")) {
      Expected<int64_t> v = unary();
      if (v)
        *v = *v == 0;
      return v;
    }
    if (eat("(")) {
      Expected<int64_t> v = orExpr();
      if (v && !eat(")"))
        return fail("missing ')'");
      return v;
    }
    skip();
    if (!s.empty() && isDigit(s[0])) {
      size_t n = s.find_if_not(isDigit);
      StringRef digits = s.take_front(n);
      s = s.drop_front(digits.size());
      int64_t v;
      if (digits.getAsInteger(10, v))
        return fail("integer " + digits + " is too large");
      return v;
    }
    size_t n = s.find_if_not([](char c) { return isAlnum(c) || c == '_'; });
    StringRef name = s.take_front(n);
    if (!isIdentifier(name))
      return fail(s.empty() ? Twine("missing a value")
                            : "unexpected '" + s.take_front(8) + "'");
    s = s.drop_front(name.size());
    if (eat("("))
      return call(name);
    return lookup(name); // its errors name the name
  }
  Expected<int64_t> call(StringRef fn) {
    if (fn != "min" && fn != "max" && fn != "cdiv")
      return fail("unknown function '" + fn + "' (min, max, cdiv)");
    Expected<int64_t> a = orExpr();
    if (!a)
      return a;
    if (!eat(","))
      return fail(fn + " takes two arguments");
    Expected<int64_t> b = orExpr();
    if (!b)
      return b;
    if (!eat(")"))
      return fail("missing ')'");
    if (fn == "min")
      return std::min(*a, *b);
    if (fn == "max")
      return std::max(*a, *b);
    if (*b <= 0)
      return fail("cdiv needs a positive divisor");
    int64_t out;
    if (AddOverflow(*a, *b - 1, out))
      return fail("integer overflow in cdiv");
    return divideFloorSigned(out, *b);
  }
};

} // namespace

Expected<int64_t> pimc::kernels::evalExpr(StringRef text, NameLookup lookup) {
  return Evaluator(text, lookup).run();
}
