// SPDX-License-Identifier: GPL-2.0-only
// Source of the ELF seeds of tests/fuzz/corpus/fuzz_elf (see make-corpus.sh):
// a C++ template (mangled names), an inlined function (DWARF inline
// entries) and a plain function, built small with -g.
namespace seed {
template <typename T> struct box {
	T v;
	__attribute__((noinline)) T twice() const { return v + v; }
};
static inline __attribute__((always_inline)) int inner(int x) { return x * 3 + 1; }
} // namespace seed

extern "C" __attribute__((noinline)) int seed_plain(int x)
{
	return seed::inner(x) ^ 5;
}

int main(int argc, char **)
{
	seed::box<int> b{ argc };
	seed::box<long> c{ argc };
	return seed_plain(b.twice()) + (int)c.twice();
}
