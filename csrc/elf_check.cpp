// Host module images checked against their own ELF headers before dlopen, and their exported
// function names read from .dynsym (see elf_check.h).
#include "elf_check.h"

#include <elf.h>

#include <cstdint>
#include <cstring>

namespace gompute {
namespace {

// This machine's e_machine; EM_NONE where gompute does not know it (dlopen then judges).
constexpr uint16_t kNativeMachine =
#if defined(__x86_64__)
    EM_X86_64;
#elif defined(__aarch64__)
    EM_AARCH64;
#elif defined(__powerpc64__)
    EM_PPC64;
#elif defined(__riscv) && __riscv_xlen == 64
    EM_RISCV;
#elif defined(__s390x__)
    EM_S390;
#else
    EM_NONE;
#endif
constexpr unsigned char kNativeData = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;

std::string machine_name(uint16_t machine) {
  switch (machine) {
    case EM_X86_64: return "x86-64";
    case EM_386: return "x86 (32-bit)";
    case EM_AARCH64: return "AArch64";
    case EM_ARM: return "ARM (32-bit)";
    case EM_PPC64: return "PowerPC64";
    case EM_RISCV: return "RISC-V";
    case EM_S390: return "s390x";
  }
  return "ELF machine " + std::to_string(machine);
}

// Whether [offset, offset + count * each) lies inside an image of `total` bytes.
bool inside(uint64_t offset, uint64_t count, uint64_t each, uint64_t total) {
  uint64_t bytes;
  return !__builtin_mul_overflow(count, each, &bytes) && offset <= total && bytes <= total - offset;
}

// "" when `what` (count entries of `each` bytes at `offset`) lies inside the image; else why not.
std::string outside(const std::string& what, uint64_t offset, uint64_t count, uint64_t each, uint64_t total) {
  if (inside(offset, count, each, total)) return "";
  const std::string size = count == 1 ? std::to_string(each) + " bytes"
                                      : std::to_string(count) + " entries of " + std::to_string(each) + " bytes";
  return what + " (" + size + " at byte " + std::to_string(offset) + ") ends past the image's " +
         std::to_string(total) + " bytes: the file is truncated or corrupt";
}

template <typename T>
T read_at(const std::string& image, uint64_t offset) {
  T value;
  std::memcpy(&value, image.data() + offset, sizeof value);
  return value;
}

std::string segment_type(uint32_t type) {
  switch (type) {
    case PT_LOAD: return "PT_LOAD";
    case PT_DYNAMIC: return "PT_DYNAMIC";
    case PT_INTERP: return "PT_INTERP";
    case PT_NOTE: return "PT_NOTE";
    case PT_GNU_EH_FRAME: return "PT_GNU_EH_FRAME";
  }
  return "type " + std::to_string(type);
}

// The header's own fields: an ELF shared object of this machine's kind, with the tables'
// entries of the sizes this reader (and the loader) expects.
std::string header_problem(const Elf64_Ehdr& eh) {
  if (eh.e_ident[EI_CLASS] == ELFCLASS32) return "it is a 32-bit ELF file, and this machine loads 64-bit ones";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64)
    return "its ELF class is " + std::to_string(eh.e_ident[EI_CLASS]) + ", not 64-bit";
  if (eh.e_ident[EI_DATA] != kNativeData) return "its byte order is not this machine's";
  if (eh.e_type != ET_DYN) return "it is an ELF file of type " + std::to_string(eh.e_type) + ", not a shared object";
  if (kNativeMachine != EM_NONE && eh.e_machine != kNativeMachine)
    return "it is built for " + machine_name(eh.e_machine) + ", and this machine is " + machine_name(kNativeMachine);
  if (eh.e_phnum == 0) return "it has no program headers, so nothing to load";
  if (eh.e_phentsize != sizeof(Elf64_Phdr))
    return "its program headers are " + std::to_string(eh.e_phentsize) + " bytes each, not " +
           std::to_string(sizeof(Elf64_Phdr));
  if (eh.e_shoff != 0 && eh.e_shentsize != sizeof(Elf64_Shdr))
    return "its section headers are " + std::to_string(eh.e_shentsize) + " bytes each, not " +
           std::to_string(sizeof(Elf64_Shdr));
  return "";
}

// Section 0's header, where ELF keeps a count too large for the ELF header's field (extended
// numbering); false when the image holds none.
bool section_zero(const std::string& image, const Elf64_Ehdr& eh, Elf64_Shdr* zero) {
  if (eh.e_shoff == 0 || !inside(eh.e_shoff, 1, sizeof(Elf64_Shdr), image.size())) return false;
  *zero = read_at<Elf64_Shdr>(image, eh.e_shoff);
  return true;
}

// The section header table and every section with bytes in the file lie inside the image.
std::string sections_problem(const std::string& image, const Elf64_Ehdr& eh) {
  const uint64_t total = image.size();
  if (eh.e_shoff == 0) return "";  // no section headers: the loader needs none
  uint64_t count = eh.e_shnum;
  Elf64_Shdr zero;
  if (count == 0) {
    if (!section_zero(image, eh, &zero))
      return "its section count is kept in a section 0 header the image does not hold";
    count = zero.sh_size;
  }
  if (auto problem = outside("its section header table", eh.e_shoff, count, sizeof(Elf64_Shdr), total);
      !problem.empty())
    return problem;
  for (uint64_t i = 1; i < count; ++i) {
    const auto sh = read_at<Elf64_Shdr>(image, eh.e_shoff + i * sizeof(Elf64_Shdr));
    if (sh.sh_type == SHT_NOBITS) continue;  // .bss and the like take no bytes of the file
    if (auto problem = outside("its section " + std::to_string(i), sh.sh_offset, 1, sh.sh_size, total);
        !problem.empty())
      return problem;
  }
  return "";
}

// The program header table, and every segment's bytes in the file (what dlopen maps).
std::string segments_problem(const std::string& image, const Elf64_Ehdr& eh) {
  const uint64_t total = image.size();
  uint64_t count = eh.e_phnum;
  Elf64_Shdr zero;
  if (count == PN_XNUM) {
    if (!section_zero(image, eh, &zero))
      return "its program header count is kept in a section 0 header the image does not hold";
    count = zero.sh_info;
  }
  if (auto problem = outside("its program header table", eh.e_phoff, count, sizeof(Elf64_Phdr), total);
      !problem.empty())
    return problem;
  for (uint64_t i = 0; i < count; ++i) {
    const auto ph = read_at<Elf64_Phdr>(image, eh.e_phoff + i * sizeof(Elf64_Phdr));
    if (ph.p_type == PT_LOAD && ph.p_filesz > ph.p_memsz)
      return "its segment " + std::to_string(i) + " (PT_LOAD) holds more bytes in the file than in memory";
    const std::string name = "its segment " + std::to_string(i) + " (" + segment_type(ph.p_type) + ")";
    if (auto problem = outside(name, ph.p_offset, 1, ph.p_filesz, total); !problem.empty()) return problem;
  }
  return "";
}

}  // namespace

std::string elf_image_problem(const std::string& image) {
  if (image.size() < SELFMAG || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0)
    return "it does not start with ELF's magic bytes";
  if (image.size() < sizeof(Elf64_Ehdr))
    return "it is " + std::to_string(image.size()) + " bytes, shorter than an ELF header";
  const auto eh = read_at<Elf64_Ehdr>(image, 0);
  std::string problem = header_problem(eh);
  if (problem.empty()) problem = sections_problem(image, eh);
  if (problem.empty()) problem = segments_problem(image, eh);
  return problem;
}

std::vector<std::string> elf_function_names(const std::string& image) {
  std::vector<std::string> names;
  auto fits = [&](uint64_t off, uint64_t len) { return inside(off, 1, len, image.size()); };
  if (!fits(0, sizeof(Elf64_Ehdr))) return names;
  const auto eh = read_at<Elf64_Ehdr>(image, 0);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !fits(eh.e_shoff, uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr)))
    return names;
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  std::memcpy(sections.data(), image.data() + eh.e_shoff, sections.size() * sizeof(Elf64_Shdr));
  for (const auto& sh : sections) {
    if (sh.sh_type != SHT_DYNSYM || sh.sh_link >= sections.size() || !fits(sh.sh_offset, sh.sh_size)) continue;
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    if (!fits(strtab.sh_offset, strtab.sh_size)) continue;
    for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
      const auto sym = read_at<Elf64_Sym>(image, sh.sh_offset + off);
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF || sym.st_name >= strtab.sh_size)
        continue;
      const char* name = image.data() + strtab.sh_offset + sym.st_name;
      std::string s(name, strnlen(name, strtab.sh_size - sym.st_name));
      const bool toolchain = s == "_init" || s == "_fini" || s.rfind("__", 0) == 0 || s.rfind("_Z", 0) == 0;
      if (!s.empty() && !toolchain) names.push_back(s);
    }
  }
  return names;
}

}  // namespace gompute
