//===- FuzzKernelFile.cpp - the kernel library's file reader --------------===//
//
// The input is a kernel file (kernels/*.pimasm, docs/kernel-library.md),
// optionally followed by a NUL byte and argument values, one `name=value`
// per line. A file that reads is bound to those values (the missing ones
// default to 1), its applicability and cost are evaluated and its body is
// instantiated with pimsim's parser; every step may fail with an error,
// none may crash. An instantiated body re-instantiates to the same
// instructions (instantiation is a function of the file and the values).
//
//===----------------------------------------------------------------------===//
#include "FuzzInput.h"
#include "pimc/Conversion/LLMToPIM/KernelLibrary.h"

#include <cstdlib>
#include <map>

using namespace pimc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto [text, rest] = fuzz::asText(data, size).split('\0');
  auto kernel = kernels::parseKernelFile(text, "kernel.pimasm");
  if (!kernel) {
    fuzz::ignore(kernel);
    return 0;
  }
  std::map<std::string, int64_t> args;
  for (const std::string &a : kernel->args)
    args[a] = 1;
  while (!rest.empty()) {
    auto [line, next] = rest.split('\n');
    rest = next;
    auto [name, value] = line.split('=');
    int64_t v;
    if (!value.trim().getAsInteger(10, v))
      args[name.trim().str()] = v;
  }
  auto bound = kernels::Bindings::bind(*kernel, args);
  if (!bound) {
    fuzz::ignore(bound);
    return 0;
  }
  auto why = kernels::whyNot(*bound);
  fuzz::ignore(why);
  auto cost = bound->eval(kernel->cost);
  if (cost)
    fuzz::sink(uint64_t(*cost));
  fuzz::ignore(cost);
  auto body = kernels::instantiate(*bound);
  if (!body) {
    fuzz::ignore(body);
    return 0;
  }
  auto again = kernels::instantiate(*bound);
  if (!again || *again != *body)
    std::abort();
  fuzz::sink(body->size());
  return 0;
}
