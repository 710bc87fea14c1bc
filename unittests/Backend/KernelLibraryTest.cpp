//===- KernelLibraryTest.cpp - the kernel library's reader ----------------===//
//
// Kernel files (docs/kernel-library.md): the header, the expressions, the
// bindings, and instantiation through pimsim's assembler, with the errors a
// malformed file or bad arguments give; and the embedded library itself.
//
//===----------------------------------------------------------------------===//
#include "pimc/Conversion/LLMToPIM/KernelLibrary.h"

#include <gtest/gtest.h>

using namespace pimc::kernels;

namespace {

std::string errorOf(llvm::Error e) { return llvm::toString(std::move(e)); }

template <typename T> std::string errorOf(llvm::Expected<T> v) {
  return v ? std::string("no error") : llvm::toString(v.takeError());
}

constexpr const char *kGood = R"(# a test kernel
.kernel k op=gemv
.arg n rows     # two arguments
.runtime kv_len
.data in out
.let half = n / 2
.applies n % 2 == 0 && rows >= 1
.cost rows * cdiv(n, 3) + max(1, half)
.body
loop i ${half} {
  mac_ab row=${rows * 10}+i col=0 count=${min(n, 32)} reg=i
}
sfm length=kv_len
rd_acc count=8 data=out+${rows * 64}+256*ch
)";

TEST(KernelLibraryTest, ReadsBindsAndInstantiates) {
  auto k = parseKernelFile(kGood, "k.pimasm");
  ASSERT_TRUE(bool(k)) << errorOf(k.takeError());
  EXPECT_EQ(k->name, "k");
  EXPECT_EQ(k->op, "gemv");
  EXPECT_EQ(k->args, (std::vector<std::string>{"n", "rows"}));
  EXPECT_EQ(k->runtime, (std::vector<std::string>{"kv_len"}));
  EXPECT_EQ(k->data, (std::vector<std::string>{"in", "out"}));
  EXPECT_EQ(k->bodyLine, 10);
  auto b = Bindings::bind(*k, {{"n", 4}, {"rows", 3}, {"other", 7}});
  ASSERT_TRUE(bool(b)) << errorOf(b.takeError());
  EXPECT_EQ(*whyNot(*b), "");
  EXPECT_EQ(*b->eval(k->cost), 3 * 2 + 2);
  auto body = instantiate(*b);
  ASSERT_TRUE(bool(body)) << errorOf(body.takeError());
  ASSERT_EQ(body->size(), 3u);
  const pimsim::Instruction &loop = (*body)[0];
  EXPECT_EQ(loop.op, pimsim::Opcode::Loop);
  EXPECT_EQ(loop.count, 2);
  ASSERT_EQ(loop.body.size(), 1u);
  EXPECT_EQ(loop.body[0].row, 30);
  EXPECT_EQ(loop.body[0].count, 4);
  // sfm's length is parameter 0, which names kernel.runtime[0].
  const pimsim::Instruction &sfm = (*body)[1];
  ASSERT_EQ(sfm.strides.size(), 1u);
  EXPECT_EQ(sfm.strides[0].loop, pimsim::kParamBase + 0);
  // data= on region i names kernel.data[i]: `out`, offset from its start.
  EXPECT_EQ((*body)[2].dataRegion, 1);
  EXPECT_EQ((*body)[2].dataOffset, 192);

  auto odd = Bindings::bind(*k, {{"n", 3}, {"rows", 3}});
  ASSERT_TRUE(bool(odd));
  EXPECT_EQ(*whyNot(*odd), "n % 2 == 0 && rows >= 1");
}

TEST(KernelLibraryTest, BadArguments) {
  auto k = parseKernelFile(kGood, "k.pimasm");
  ASSERT_TRUE(bool(k));
  EXPECT_EQ(errorOf(Bindings::bind(*k, {{"n", 4}})),
            "k.pimasm:1: kernel k: argument 'rows' is not one the compiler "
            "passes for a gemv op");
  // Selection binds before placement: a missing argument fails only the
  // expressions that use it.
  auto partial = Bindings::bind(*k, {{"n", 4}}, /*partial=*/true);
  ASSERT_TRUE(bool(partial));
  EXPECT_EQ(errorOf(partial->eval(k->cost)),
            "k.pimasm:8: 'rows' is not known before placement");
  auto zero = Bindings::bind(*k, {{"n", 0}, {"rows", 1}});
  ASSERT_TRUE(bool(zero));
  EXPECT_EQ(errorOf(instantiate(*zero)),
            "k.pimasm:10: instruction 0 (loop) has count 0: the arguments are "
            "outside the kernel's shape class");
}

TEST(KernelLibraryTest, MalformedFiles) {
  auto err = [](const std::string &text) {
    return errorOf(parseKernelFile(text, "m.pimasm"));
  };
  EXPECT_EQ(err(".arg n\n.cost 1\n.body\n"), "m.pimasm:1: no .kernel line");
  EXPECT_EQ(err(".kernel k op=gemm\n"),
            "m.pimasm:1: unknown op 'gemm' (gemv or attention)");
  EXPECT_EQ(err(".kernel k op=gemv\n.arg n n\n"),
            "m.pimasm:2: 'n' is declared twice");
  EXPECT_EQ(err(".kernel k op=gemv\n.arg ch\n"),
            "m.pimasm:2: 'ch' is the channel index, not a name");
  EXPECT_EQ(err(".kernel k op=gemv\n.cost 1\n"), "m.pimasm:2: no .body");
  EXPECT_EQ(err(".kernel k op=gemv\n.body\nbarrier\n"),
            "m.pimasm:2: no .cost (estimated cycles)");
  EXPECT_EQ(err(".kernel k op=gemv\n.cost 1\n.body\nbarrier\n"
                ".stream s channels=0\n"),
            "m.pimasm:5: a kernel body holds instructions only, not "
            "directives");
  EXPECT_EQ(err(".kernel k op=gemv\n.frobnicate\n"),
            "m.pimasm:2: unknown directive '.frobnicate' (.kernel .arg "
            ".runtime .data .param .let .applies .cost .body)");
  EXPECT_EQ(err(".kernel k op=gemv\nmac_ab row=0\n"),
            "m.pimasm:2: expected a directive before .body, found 'mac_ab'");

  // Errors at instantiation name the kernel file's line.
  auto inst = [](const std::string &text) {
    auto k = parseKernelFile(text, "m.pimasm");
    EXPECT_TRUE(bool(k));
    auto b = Bindings::bind(*k, {{"n", 2}});
    EXPECT_TRUE(bool(b));
    return errorOf(instantiate(*b));
  };
  std::string head = ".kernel k op=gemv\n.arg n\n.cost n\n.body\n";
  EXPECT_EQ(inst(head + "barrier\n  mac_ab row=0 col=0\n"),
            "m.pimasm:6:3: mac_ab needs 'count=' (instantiated)");
  EXPECT_EQ(inst(head + "rd_acc count=${n / (n - 2)}\n"),
            "m.pimasm:5: division by zero in 'n / (n - 2)'");
  EXPECT_EQ(inst(head + "rd_acc count=${n\n"),
            "m.pimasm:5: '${' is not closed with '}'");
  EXPECT_EQ(inst(head + "rd_acc count=${nope}\n"),
            "m.pimasm:5: unknown name 'nope'");
  EXPECT_EQ(inst(head + "rd_acc count=${n * 9223372036854775807}\n"),
            "m.pimasm:5: integer overflow in * in "
            "'n * 9223372036854775807'");
  // data= names a buffer the kernel declares with .data; act is not one.
  EXPECT_EQ(inst(head + "rd_acc count=8 data=act+0\n"),
            "m.pimasm:5:21: unknown region 'act' (instantiated)");
  EXPECT_EQ(inst(".kernel k op=gemv\n.arg n\n.data out\n.cost n\n.body\n"
                 "rd_acc count=8 data=out+64\n"),
            "no error");
  EXPECT_EQ(inst(head + "call k\n"),
            "m.pimasm:5:6: unknown kernel 'k' (instantiated)");
  EXPECT_EQ(inst(".kernel k op=gemv\n.arg n\n.let a = b\n.let b = a\n"
                 ".cost a\n.body\nbarrier\n"),
            "no error");
}

TEST(KernelLibraryTest, CyclicLetsAreErrors) {
  auto k = parseKernelFile(
      ".kernel k op=gemv\n.let a = b + 1\n.let b = a\n.cost a\n.body\n",
      "c.pimasm");
  ASSERT_TRUE(bool(k));
  auto b = Bindings::bind(*k, {});
  ASSERT_TRUE(bool(b));
  EXPECT_EQ(errorOf(b->eval(k->cost)),
            "c.pimasm:4: .let a: .let b: 'a' is defined by itself");
}

TEST(KernelLibraryTest, TheEmbeddedLibraryReads) {
  auto lib = library();
  ASSERT_TRUE(bool(lib)) << errorOf(lib.takeError());
  ASSERT_NE(findKernel("gemv_fit"), nullptr);
  ASSERT_NE(findKernel("attention_vt_fused"), nullptr);
  EXPECT_EQ(findKernel("gemv_fit")->op, "gemv");
  EXPECT_EQ(findKernel("attention_vt_fused")->op, "attention");
  EXPECT_EQ(findKernel("nope"), nullptr);
}

} // namespace
