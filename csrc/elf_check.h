// Host module images (ELF shared objects) read before and after dlopen. dlopen trusts the
// headers: it maps every segment they name, and one that reaches past the end of the file
// faults (SIGBUS) when touched, so an image is checked against its own headers first.
#pragma once

#include <string>
#include <vector>

namespace gompute {

// What makes `image` unfit for dlopen on this machine ("" when nothing does): not a 64-bit
// shared object of this machine's byte order and architecture, or a header table, section
// or segment that lies outside the image (a truncated or corrupt file).
std::string elf_image_problem(const std::string& image);

// The exported function names of a shared object (its .dynsym), skipping the toolchain's own
// (_init, _fini, "__" and C++-mangled "_Z" ones; a kernel's name may begin with one "_").
// Every read is bounds-checked.
std::vector<std::string> elf_function_names(const std::string& image);

}  // namespace gompute
